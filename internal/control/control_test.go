package control

import (
	"slices"
	"testing"
)

func TestRefusal(t *testing.T) {
	cases := []struct {
		action string
		e      Event
		want   string
	}{
		{Close, Event{Ended: true}, "the event is closed already"},
		{Pause, Event{Ended: true}, "the event is closed"},
		{Pause, Event{}, "the event is paused already"},
		{Resume, Event{}, "the event is not paused"},
		{ExtendEnd, Event{}, "the event has no end to move"},
		{ExtendEnd, Event{HasEnd: true}, "the end has passed, is less than 10 s away, or is not before the new one"},
		{ExtendCutoff, Event{}, "only a LOTTERY has a cutoff"},
		{ExtendCutoff, Event{Lottery: true}, "the cutoff has passed, is less than 10 s away, is not before the new one, lies past the event's end, or the draw began"},
		{ExtendStart, Event{}, "only a FIRST_COME event with a pre-queue has its start moved"},
		{AddCapacity, Event{Ended: true}, "the event is closed"},
		{AddCapacity, Event{}, "another change of the event's seats came first: try again"},
	}
	for _, c := range cases {
		if got := Refusal(c.action, c.e); got != c.want {
			t.Errorf("Refusal(%s, %+v) = %q, want %q", c.action, c.e, got, c.want)
		}
	}
}

func TestCancelRefusal(t *testing.T) {
	won := Request{FirstCome: true, Status: "SUCCEEDED", Succeeded: true}
	cases := []struct {
		r         Request
		shards    int
		statusLog bool
		want      string
	}{
		{won, 1, true, ""},
		{won, 95, false, ""},
		{won, 96, false, "an event of 96 shards cannot mark them all in one transaction"},
		{won, 95, true, "an event of 95 shards cannot mark them all in one transaction"},
		{Request{Status: "SUCCEEDED", Succeeded: true}, 1, false, "only a FIRST_COME seat can be cancelled"},
		{Request{FirstCome: true, Status: "HELD", Held: true}, 1, false, "the request is HELD: Release ends it"},
		{Request{FirstCome: true, Status: "REJECTED", ResultCode: "REJECTED_CANCELLED", Cancelled: true, Rejected: true}, 1, false, "cancelled"},
		{Request{FirstCome: true, Status: "REJECTED", ResultCode: "REJECTED_CAPACITY", Rejected: true}, 1, false, "the request is REJECTED (REJECTED_CAPACITY): it holds no seat"},
		{Request{FirstCome: true, Status: "QUEUED"}, 1, false, "the request is QUEUED, not SUCCEEDED: it holds no seat"},
	}
	for _, c := range cases {
		if got := CancelRefusal(c.r, c.shards, c.statusLog, "cancelled"); got != c.want {
			t.Errorf("CancelRefusal(%+v, %d, %v) = %q, want %q", c.r, c.shards, c.statusLog, got, c.want)
		}
	}
}

func TestSpread(t *testing.T) {
	cases := []struct {
		name   string
		shards []Shard
		seats  int64
		to     int
		share  []int64
		pool   int64
	}{
		{"evenly over the shards that hold seats", []Shard{{1, 5}, {0, 5}, {2, 5}}, 4, -1, []int64{2, 0, 2}, 0},
		{"an odd seat to the first", []Shard{{1, 5}, {1, 5}}, 3, -1, []int64{2, 1}, 0},
		{"the shard asked for", []Shard{{1, 5}, {1, 5}}, 3, 1, []int64{0, 3}, 0},
		{"an empty shard asked for: the pool", []Shard{{1, 5}, {0, 5}}, 3, 1, []int64{0, 0}, 3},
		{"every shard empty: the pool", []Shard{{0, 5}, {0, 5}}, 7, -1, []int64{0, 0}, 7},
		{"a shard's bound, the rest to the others then the pool", []Shard{{1, 8}, {1, 2}}, 12, -1, []int64{2, 8}, 2},
	}
	for _, c := range cases {
		share, pool := Spread(c.shards, c.seats, c.to, 10)
		if !slices.Equal(share, c.share) || pool != c.pool {
			t.Errorf("%s: Spread = %v, %d; want %v, %d", c.name, share, pool, c.share, c.pool)
		}
	}
}
