package progress

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var errRefused = errors.New("refused")

// A flush writes each event's second at once; counts refused for throughput stay
// pending, counts of any other failure and counts older than Span are dropped.
func TestFlushPutsBackOnlyWhatWasRefused(t *testing.T) {
	now := int64(1_800_000_000_050)
	m := NewMeter(10*time.Minute, func() int64 { return now }, func(int64) {})
	stopTimer(t, m)
	m.Arrived("ok", now)
	m.Arrived("refused", now)
	m.Arrived("failed", now)
	m.Arrived("old", now-Span.Milliseconds()-1000)
	var mu sync.Mutex
	wrote, dropped := map[string]bool{}, map[string]error{}
	f := &Flusher{
		Write: func(_ context.Context, k Second, _ *Counts) error {
			mu.Lock()
			defer mu.Unlock()
			wrote[k.EventID] = true
			switch k.EventID {
			case "refused":
				return errRefused
			case "failed":
				return errors.New("lost")
			}
			return nil
		},
		Refused: func(err error) bool { return errors.Is(err, errRefused) },
		Dropped: func(_ context.Context, k Second, err error) {
			mu.Lock()
			defer mu.Unlock()
			dropped[k.EventID] = err
		},
	}
	err := m.Flush(context.Background(), 0, f)
	if !errors.Is(err, errRefused) || err == nil {
		t.Fatalf("flush: %v", err)
	}
	if !wrote["ok"] || !wrote["refused"] || !wrote["failed"] || wrote["old"] {
		t.Fatalf("wrote %v", wrote)
	}
	if e, ok := dropped["old"]; !ok || e != nil {
		t.Fatalf("the old counts: dropped %v, %v", ok, e)
	}
	if dropped["failed"] == nil || len(dropped) != 2 {
		t.Fatalf("dropped %v", dropped)
	}
	if len(m.pending) != 1 || m.pending[Second{EventID: "refused", Second: now / 1000}] == nil {
		t.Fatalf("pending %v", m.pending)
	}
	if arrived, _ := m.Lags(); arrived < 0 {
		t.Fatalf("lag %d", arrived)
	}
	wrote = map[string]bool{}
	if err := m.Flush(context.Background(), 0, &Flusher{Write: func(context.Context, Second, *Counts) error { wrote["again"] = true; return nil }}); err != nil || !wrote["again"] {
		t.Fatalf("the refused counts' next flush: %v, %v", err, wrote)
	}
	if err := m.Flush(context.Background(), 0, nil); err != nil {
		t.Fatalf("nothing pending: %v", err)
	}
}

// FlushDue flushes what is due, and otherwise waits for a flush under way.
func TestFlushDue(t *testing.T) {
	now := int64(1_800_000_000_050)
	m := NewMeter(10*time.Minute, func() int64 { return now }, func(int64) {})
	stopTimer(t, m)
	flushed := 0
	flush := func(context.Context) error { flushed++; return nil }
	if err := m.FlushDue(context.Background(), flush); err != nil || flushed != 0 {
		t.Fatalf("nothing pending: %v, %d flushes", err, flushed)
	}
	m.Arrived("e", now)
	if err := m.FlushDue(context.Background(), flush); err != nil || flushed != 1 {
		t.Fatalf("due: %v, %d flushes", err, flushed)
	}
	if err := m.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	m.mu.Lock()
	m.armed = false
	m.mu.Unlock()
	if err := m.FlushDue(done, flush); err == nil {
		t.Fatal("a flush under way and a done context: want its error")
	}
	m.Unlock()
}

func TestReadPartitionsSumsThem(t *testing.T) {
	got, err := ReadPartitions(context.Background(), 3, func(_ context.Context, p int) (Tenths, error) {
		return Tenths{10: {int64(p + 1), 1}}, nil
	})
	if err != nil || got[10] != (Tenth{6, 3}) {
		t.Fatalf("%v, %v", got, err)
	}
	_, err = ReadPartitions(context.Background(), 2, func(_ context.Context, p int) (Tenths, error) {
		if p == 1 {
			return nil, errRefused
		}
		return Tenths{}, nil
	})
	if !errors.Is(err, errRefused) {
		t.Fatalf("a failed partition: %v", err)
	}
}

func TestNumbers(t *testing.T) {
	got := Numbers(map[string]types.AttributeValue{
		"a0": &types.AttributeValueMemberN{Value: "7"}, "PK": &types.AttributeValueMemberS{Value: "x"},
		"h01": &types.AttributeValueMemberN{Value: "1.5"},
	})
	if len(got) != 1 || got["a0"] != 7 {
		t.Fatalf("%v", got)
	}
}
