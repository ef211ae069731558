package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoaded(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(100, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	v := 7

	t.Run("concurrent readers share one read", func(t *testing.T) {
		c := NewLoaded[int](time.Second, clock, time.Second)
		var reads atomic.Int32
		release := make(chan struct{})
		load := func(context.Context) (*int, error) { reads.Add(1); <-release; return &v, nil }
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, err := c.Get(ctx, "e", load); err != nil || *got != 7 {
					t.Errorf("Get = %v, %v", got, err)
				}
			}()
		}
		time.Sleep(10 * time.Millisecond)
		close(release)
		wg.Wait()
		if n := reads.Load(); n != 1 {
			t.Fatalf("%d reads, want 1", n)
		}
	})
	t.Run("a value older than its time to live is read again", func(t *testing.T) {
		c := NewLoaded[int](time.Second, clock, time.Second)
		var reads int
		load := func(context.Context) (*int, error) { reads++; return &v, nil }
		c.Get(ctx, "e", load)
		c.Get(ctx, "e", load)
		advance(time.Second)
		c.Get(ctx, "e", load)
		if reads != 2 {
			t.Fatalf("%d reads, want 2", reads)
		}
		if _, _, err := c.GetAged(ctx, "e", 0, load); err != nil || reads != 3 {
			t.Fatalf("GetAged with no age allowed: %d reads, %v", reads, err)
		}
	})
	t.Run("a failed read is not kept, nor peeked", func(t *testing.T) {
		c := NewLoaded[int](time.Minute, clock, time.Second)
		boom := errors.New("boom")
		if _, err := c.Get(ctx, "e", func(context.Context) (*int, error) { return nil, boom }); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		if _, _, ok := c.Peek("e"); ok {
			t.Fatal("Peek after a failed read")
		}
		got, err := c.Get(ctx, "e", func(context.Context) (*int, error) { return &v, nil })
		if err != nil || *got != 7 {
			t.Fatalf("Get after a failed read = %v, %v", got, err)
		}
		if p, _, ok := c.Peek("e"); !ok || *p != 7 {
			t.Fatal("Peek after a read")
		}
		c.Forget("e")
		if _, _, ok := c.Peek("e"); ok {
			t.Fatal("Peek after Forget")
		}
	})
	t.Run("no time to live reads every time", func(t *testing.T) {
		c := NewLoaded[int](0, clock, time.Second)
		var reads int
		load := func(context.Context) (*int, error) { reads++; return &v, nil }
		c.Get(ctx, "e", load)
		c.Get(ctx, "e", load)
		if reads != 2 {
			t.Fatalf("%d reads, want 2", reads)
		}
	})
	t.Run("a caller that gives up does not cut the shared read short", func(t *testing.T) {
		c := NewLoaded[int](time.Minute, clock, time.Second)
		release := make(chan struct{})
		load := func(ctx context.Context) (*int, error) {
			select {
			case <-release:
				return &v, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := c.Get(cctx, "e", load); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		close(release)
		if got, err := c.Get(ctx, "e", load); err != nil || *got != 7 {
			t.Fatalf("the read went on: %v, %v", got, err)
		}
	})
}

func TestRing(t *testing.T) {
	r := NewRing[string, int](2)
	r.Put("a", 1)
	r.Put("a", 9) // kept as it was
	r.Put("b", 2)
	r.Put("c", 3) // drops a
	if _, ok := r.Get("a"); ok {
		t.Fatal("a should be dropped")
	}
	if v, ok := r.Get("b"); !ok || v != 2 {
		t.Fatal("b")
	}
	if v, ok := r.Get("c"); !ok || v != 3 {
		t.Fatal("c")
	}
	none := NewRing[string, int](0)
	none.Put("a", 1)
	if _, ok := none.Get("a"); ok {
		t.Fatal("a Ring of size 0 holds nothing")
	}
}
