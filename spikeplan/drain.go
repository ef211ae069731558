package spikeplan

import "time"

// Drain is how long workers take to process the messages of a spike: Clicks
// messages, Concurrency of them at once (over all workers), MessageTime each, so
// Time = Clicks × MessageTime ÷ Concurrency. The queue holds what the workers have
// not reached; a first-come user waits up to Time for the result.
type Drain struct {
	Clicks      int64
	Concurrency int
	MessageTime time.Duration
	Time        time.Duration
}

// The Drain a Plan states unless told otherwise.
const (
	// DefaultDuration is how long the peak lasts.
	DefaultDuration = time.Minute
	// DefaultDrainConcurrency is the messages the workers process at once, over all
	// workers (say a dozen workers of asyncevent.WorkerOptions.Concurrency 8).
	DefaultDrainConcurrency = 100
	// DefaultMessageTime is one message's time in a worker: a winner's three writes
	// (its start, its seat, SUCCEEDED) at about 10 ms each on DynamoDB. A loser once
	// the worker knows the event is sold out takes one write, so for a drop of many
	// more users than seats the figure is high. An assumption, not a measurement:
	// DynamoDB Local is no guide to DynamoDB's latency.
	DefaultMessageTime = 30 * time.Millisecond
)

// DrainFor is how long concurrency messages at once, messageTime each, take to
// process clicks messages. concurrency ≤ 0 means DefaultDrainConcurrency,
// messageTime ≤ 0 DefaultMessageTime.
func DrainFor(clicks int64, concurrency int, messageTime time.Duration) Drain {
	if concurrency <= 0 {
		concurrency = DefaultDrainConcurrency
	}
	if messageTime <= 0 {
		messageTime = DefaultMessageTime
	}
	d := Drain{Clicks: max(clicks, 0), Concurrency: concurrency, MessageTime: messageTime}
	d.Time = time.Duration(float64(d.Clicks) * float64(messageTime) / float64(concurrency))
	return d
}
