package admission

import (
	"context"
	"slices"
	"testing"
)

// held is a record whose lease the test admission ("me") holds for a while yet.
func held(rec Record) Record {
	rec.Owner, rec.LeaseExpiresAt = "me", testNow.UnixMilli()+leaseFor.Milliseconds()
	if rec.Through == "" {
		rec.Through = rank("")
	}
	return rec
}

func TestStep(t *testing.T) {
	ctx := context.Background()
	t.Run("another process's live lease: the record is only read", func(t *testing.T) {
		f := newFakeStore()
		f.set(Record{Owner: "other", LeaseExpiresAt: testNow.UnixMilli() + 1})
		full, err := newTestAdmission(t, f).step(ctx)
		if err != nil || full || !slices.Equal(f.Calls(), []string{"read"}) {
			t.Fatalf("step = %t, %v; calls %v", full, err, f.Calls())
		}
	})
	t.Run("no owner, or an expired lease: taken, then the record read as written", func(t *testing.T) {
		for _, rec := range []Record{{}, {Owner: "other", LeaseExpiresAt: testNow.UnixMilli()}} {
			f := newFakeStore()
			f.set(rec)
			full, err := newTestAdmission(t, f).step(ctx)
			if err != nil || !full || !slices.Equal(f.Calls(), []string{"read", "lease"}) || f.rec.Owner != "me" ||
				f.rec.LeaseExpiresAt != testNow.UnixMilli()+leaseFor.Milliseconds() {
				t.Fatalf("step = %t, %v; calls %v; record %+v", full, err, f.Calls(), f.rec)
			}
		}
	})
	t.Run("no seat left: refusing, with the count of waves as read", func(t *testing.T) {
		f := newFakeStore()
		f.set(held(Record{Waves: 2}))
		full, err := newTestAdmission(t, f).step(ctx)
		if err != nil || full || !slices.Equal(f.Calls(), []string{"read", "seats", "refusing"}) || !f.rec.Refusing {
			t.Fatalf("step = %t, %v; calls %v", full, err, f.Calls())
		}
	})
	t.Run("a wave of at most the seats left, written before it is decided", func(t *testing.T) {
		f := newFakeStore()
		f.seats = 3
		f.pages = []Page{{Places: f.queued("a", "b", "c", "d", "e")}}
		f.set(held(Record{}))
		a := newTestAdmission(t, f)
		full, err := a.step(ctx)
		if err != nil || !full {
			t.Fatalf("step = %t, %v", full, err)
		}
		want := []string{"read", "seats", "line " + rank("") + " 3", "wave", "decide"}
		if !slices.Equal(f.Calls(), want) || len(f.waves) != 1 || !slices.Equal(f.waves[0].Wave, []string{"a", "b", "c"}) || f.waves[0].Through != rank("c") {
			t.Fatalf("calls %v, want %v; waves %+v", f.Calls(), want, f.waves)
		}
		if rec, _ := a.View(); !rec.WaveDone || rec.Waves != 1 || a.left != 0 {
			t.Fatalf("published %+v, left %d: want the wave decided, no seat left", rec, a.left)
		}
	})
	t.Run("late arrivals first, taken out of the late set, decided ones too", func(t *testing.T) {
		f := newFakeStore()
		f.seats = 10
		f.queued("x", "y")
		f.requests["y"] = Request{Entry: Entry{RequestID: "y"}, Decided: true}
		f.pages = []Page{{Places: f.queued("b")}}
		f.set(held(Record{Through: rank("a"), Late: []string{"y", "x"}, LateAdds: 2}))
		if _, err := newTestAdmission(t, f).step(ctx); err != nil {
			t.Fatal(err)
		}
		if len(f.waves) != 1 || !slices.Equal(f.waves[0].Wave, []string{"x", "b"}) || !slices.Equal(f.waves[0].Late, []string{"x", "y"}) ||
			f.waves[0].LateAsRead != 2 || len(f.rec.Late) != 0 {
			t.Fatalf("waves %+v, record %+v", f.waves, f.rec)
		}
	})
	t.Run("a recorded wave not known decided is decided first, its decided requests left out", func(t *testing.T) {
		f := newFakeStore()
		f.queued("a", "b", "c")
		f.requests["b"] = Request{Entry: Entry{RequestID: "b"}, Decided: true}
		f.set(held(Record{Wave: []string{"a", "b", "c", "gone"}, Waves: 4}))
		full, err := newTestAdmission(t, f).step(ctx)
		want := []string{"read", "request a", "request b", "request c", "request gone", "decide"}
		if err != nil || !full || !slices.Equal(f.Calls(), want) || !slices.Equal(f.decided[0], []string{"a", "c"}) {
			t.Fatalf("step = %t, %v; calls %v, want %v; decided %v", full, err, f.Calls(), want, f.decided)
		}
	})
	t.Run("a lull after this loop's wave: the record says it is decided", func(t *testing.T) {
		f := newFakeStore()
		f.seats = 3
		f.pages = []Page{{Places: f.queued("a")}}
		f.set(held(Record{}))
		a := newTestAdmission(t, f)
		if _, err := a.step(ctx); err != nil {
			t.Fatal(err)
		}
		f.pages = nil
		full, err := a.step(ctx)
		if err != nil || full || !f.rec.WaveDone || f.Calls()[len(f.Calls())-1] != "waveDone" {
			t.Fatalf("step = %t, %v; calls %v", full, err, f.Calls())
		}
	})
	t.Run("a wave write that loses its condition decides nothing and reads the seats again", func(t *testing.T) {
		f := newFakeStore()
		f.seats = 3
		f.pages = []Page{{Places: f.queued("a")}}
		f.loseWave = true
		f.set(held(Record{}))
		a := newTestAdmission(t, f)
		if full, err := a.step(ctx); err != nil || full || len(f.decided) != 0 || a.left != -1 {
			t.Fatalf("step = %t, %v; decided %v, left %d", full, err, f.decided, a.left)
		}
	})
	t.Run("a wave of another process sets the count of seats aside", func(t *testing.T) {
		f := newFakeStore()
		f.seats = 5
		f.set(held(Record{}))
		a := newTestAdmission(t, f)
		if _, err := a.step(ctx); err != nil {
			t.Fatal(err)
		}
		f.set(held(Record{Waves: 1, WaveDone: true}))
		if _, err := a.step(ctx); err != nil {
			t.Fatal(err)
		}
		if n := countOf(f.Calls(), "seats"); n != 2 {
			t.Fatalf("seats read %d times, want 2: %v", n, f.Calls())
		}
	})
}

func countOf(calls []string, call string) (n int) {
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

func TestWaveClaims(t *testing.T) {
	f := newFakeStore()
	f.shards = 2
	f.closed[1] = true
	a := newTestAdmission(t, f)
	var wave []Entry
	for _, id := range []string{"a0", "b0", "c0", "d0", "e0", "f0", "g0", "h1", "i1"} {
		wave = append(wave, Entry{RequestID: id})
	}
	// Home shard 0 ('0' is even): seven requests in writes of at most three, the
	// last one alone left to its own claim; shard 1 known empty: no write.
	claims := a.waveClaims(wave)
	var got [][]string
	for _, c := range claims {
		if c.shard != 0 {
			t.Fatalf("a claim on shard %d", c.shard)
		}
		got = append(got, c.ids)
	}
	want := [][]string{{"a0", "b0", "c0"}, {"d0", "e0", "f0"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("waveClaims = %v, want %v", got, want)
	}
	a.claimWave(context.Background(), wave)
	if len(f.claims) != 2 {
		t.Fatalf("claims written %v", f.claims)
	}
}
