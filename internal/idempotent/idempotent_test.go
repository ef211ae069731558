package idempotent

import (
	"context"
	"errors"
	"testing"
	"time"
)

var (
	errLost    = errors.New("connection reset")
	errInvalid = errors.New("invalid")
	errUnknown = errors.New("unknown")
)

// answer is a control's answer in these tests.
type answer struct {
	applied, refused, unknown, replayed, fenced bool
}

// fake makes the attempts of its script, one a call of Once, and records what the
// loops asked of it.
type fake struct {
	script  []step
	marker  *answer // the answer the operation's marker records, when there is one
	onces   int
	fences  int
	records int
}

type step struct {
	up    answer
	retry bool
	err   error
}

func (f *fake) Once(context.Context) (answer, bool, error) {
	s := f.script[min(f.onces, len(f.script)-1)]
	f.onces++
	return s.up, s.retry, s.err
}

func (f *fake) Answer(up answer) Answer {
	return Answer{Applied: up.applied, Refused: up.refused, Unknown: up.unknown}
}

func (f *fake) Recorded(_ context.Context, up answer) (answer, bool, error) {
	f.records++
	if f.marker == nil {
		return up, false, nil
	}
	return *f.marker, true, nil
}

func (f *fake) Fence(ctx context.Context, up answer) (answer, error) {
	f.fences++
	return answer{refused: true, fenced: true}, nil
}

func policy(callers bool) Policy {
	return Policy{
		Callers: callers, Attempts: 3, Resends: 2, Backoff: func(int) time.Duration { return 0 },
		Unanswered: func(_ context.Context, err error) bool { return errors.Is(err, errLost) },
		Invalid:    func(err error) bool { return errors.Is(err, errInvalid) },
		Unknown:    func(err error) error { return errors.Join(errUnknown, err) },
	}
}

func TestRun(t *testing.T) {
	refused := answer{refused: true}
	cases := []struct {
		name    string
		script  []step
		marker  *answer
		callers bool
		want    answer
		wantErr error
		onces   int
		fences  int
	}{
		{name: "applied at once", script: []step{{up: answer{applied: true}}}, want: answer{applied: true}, onces: 1},
		{name: "another change first, then applied", script: []step{{up: refused, retry: true}, {up: answer{applied: true}}},
			want: answer{applied: true}, onces: 2},
		{name: "another change first every time", script: []step{{up: refused, retry: true}}, want: refused, onces: 3},
		{name: "refused under a key of its own: no fence", script: []step{{up: refused}}, want: refused, onces: 1},
		{name: "refused under the caller's key: fenced", script: []step{{up: refused}}, callers: true,
			want: answer{refused: true, fenced: true}, onces: 1, fences: 1},
		{name: "refused after an unanswered attempt: fenced", script: []step{{up: answer{unknown: true}, err: errLost}, {up: refused}},
			want: answer{refused: true, fenced: true}, onces: 2, fences: 1},
		{name: "refused on its marker: replayed", script: []step{{up: refused}}, marker: &answer{applied: true, replayed: true},
			want: answer{applied: true, replayed: true}, onces: 1},
		{name: "unanswered every time", script: []step{{up: answer{unknown: true}, err: errLost}}, wantErr: errUnknown, onces: 3},
		{name: "an error after an unanswered attempt", script: []step{{up: answer{unknown: true}, err: errLost}, {err: errors.New("throttled")}},
			wantErr: errUnknown, onces: 2},
		{name: "the caller's mistake stays its own", script: []step{{up: answer{unknown: true}, err: errLost}, {err: errInvalid}},
			wantErr: errInvalid, onces: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fake{script: c.script, marker: c.marker}
			got, err := Run(context.Background(), f, policy(c.callers))
			if !errors.Is(err, c.wantErr) || c.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if c.wantErr == errInvalid && errors.Is(err, errUnknown) {
				t.Errorf("err = %v: the caller's mistake is no unknown outcome", err)
			}
			if c.wantErr == nil && got != c.want {
				t.Errorf("answer = %+v, want %+v", got, c.want)
			}
			if f.onces != c.onces || f.fences != c.fences {
				t.Errorf("attempts %d, fences %d; want %d, %d", f.onces, f.fences, c.onces, c.fences)
			}
		})
	}
}

func TestFence(t *testing.T) {
	refused := answer{refused: true}
	fenced := func(up answer) answer { up.fenced = true; return up }
	cases := []struct {
		name    string
		puts    []error // each put's error; a *lost one reports a marker there
		lost    []bool
		marker  *answer
		want    answer
		wantErr error
		sent    int
	}{
		{name: "put", puts: []error{nil}, lost: []bool{false}, want: answer{refused: true, fenced: true}, sent: 1},
		{name: "a marker there: as it records", puts: []error{errors.New("condition")}, lost: []bool{true},
			marker: &answer{applied: true, replayed: true}, want: answer{applied: true, replayed: true}, sent: 1},
		{name: "a marker gone meanwhile: put again", puts: []error{errors.New("condition"), nil}, lost: []bool{true, false},
			want: answer{refused: true, fenced: true}, sent: 2},
		{name: "unanswered, then put", puts: []error{errLost, nil}, lost: []bool{false, false}, want: answer{refused: true, fenced: true}, sent: 2},
		{name: "never answered", puts: []error{errLost, errLost, errLost, errLost}, lost: []bool{false, false, false, false}, wantErr: errUnknown, sent: 3},
		{name: "refused by DynamoDB", puts: []error{errors.New("validation")}, lost: []bool{false}, wantErr: errUnknown, sent: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fake{marker: c.marker}
			sent := 0
			put := func(context.Context) (bool, error) {
				sent++
				return c.lost[sent-1], c.puts[sent-1]
			}
			got, err := Fence(context.Background(), f, policy(true), refused, put, fenced)
			if !errors.Is(err, c.wantErr) || c.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if c.wantErr == nil && got != c.want {
				t.Errorf("answer = %+v, want %+v", got, c.want)
			}
			if sent != c.sent {
				t.Errorf("puts %d, want %d", sent, c.sent)
			}
		})
	}
}
