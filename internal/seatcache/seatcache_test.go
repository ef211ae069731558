package seatcache

import (
	"testing"
	"time"
)

func TestShards(t *testing.T) {
	t.Run("a shard found empty is news once, and sells out the event with the others", func(t *testing.T) {
		s := New()
		if !s.Add("e", 1, 2) || s.Add("e", 1, 2) {
			t.Fatal("Add: want news once")
		}
		if s.SoldOut("e") || !s.IsEmpty("e", 1) || s.IsEmpty("e", 0) {
			t.Fatal("one shard of two empty")
		}
		if got := s.Next("e", []int{1, 0}, 2, nil); got != 0 {
			t.Fatalf("Next = %d, want 0", got)
		}
		s.Know("e", 2, []int{0, 5})
		if !s.SoldOut("e") || s.Next("e", []int{1, 0}, 2, nil) != -1 {
			t.Fatal("both shards empty: sold out, no next")
		}
	})
	t.Run("a shard count that changes starts over", func(t *testing.T) {
		s := New()
		s.Add("e", 0, 1)
		s.Add("e", 0, 3)
		if s.SoldOut("e") {
			t.Fatal("one of three shards empty is not sold out")
		}
	})
	t.Run("unrecorded shards are those the event's list lacks, taken once", func(t *testing.T) {
		s := New()
		s.Add("e", 2, 4)
		s.Unrecorded("e", 2)
		s.Unrecorded("e", 3)
		if !s.HasUnrecorded("e") {
			t.Fatal("HasUnrecorded")
		}
		if got := s.TakeUnrecorded("e", []int{3}); len(got) != 1 || got[0] != 2 {
			t.Fatalf("TakeUnrecorded = %v, want [2]", got)
		}
		if s.HasUnrecorded("e") {
			t.Fatal("taken once")
		}
	})
	t.Run("a refresh is due a second after the last", func(t *testing.T) {
		s := New()
		s.Add("e", 0, 2)
		now := time.Unix(100, 0)
		if !s.RefreshDue("e", now) || s.RefreshDue("e", now.Add(999*time.Millisecond)) || !s.RefreshDue("e", now.Add(time.Second)) {
			t.Fatal("RefreshDue")
		}
	})
	t.Run("the first look at an event is told once", func(t *testing.T) {
		s := New()
		if !s.FirstLook("e") || s.FirstLook("e") {
			t.Fatal("FirstLook")
		}
	})
	t.Run("a pool is open at a version no claim found dry", func(t *testing.T) {
		s := New()
		if s.PoolOpen("e", 0) {
			t.Fatal("no version known")
		}
		if !s.PoolOpen("e", 2) {
			t.Fatal("version 2 met")
		}
		s.PoolDry("e", 2)
		if s.PoolOpen("e", 0) {
			t.Fatal("dry at 2")
		}
		s.LearnPool("e", 3)
		if !s.PoolOpen("e", 0) {
			t.Fatal("version 3 after dry 2")
		}
	})
}
