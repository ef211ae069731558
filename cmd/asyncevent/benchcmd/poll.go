package benchcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/metered"
	"github.com/asyncevent/asyncevent/queue"
)

// The poll flow: what it costs when the users of a spike poll their request while it
// waits in line (GetRequest, with its place in line from the event's progress). Each
// poll reads its request; the event's progress is read by a node once per
// Options.ProgressCacheTTL, and at most once per flush of the nodes' counts while
// polls need it fresher, whatever the polls, so on a busy node a poll costs about one
// read.

// pollOptions are bench's flags of the poll flow.
type pollOptions struct {
	polls, clients, backlog int
}

// The defaults of the poll flow: 2,000 polls from 50 goroutines take about a second
// on a local DynamoDB.
const (
	defaultPolls       = 2000
	defaultPollClients = 50
	defaultPollBacklog = 500
)

func (p *pollOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&p.polls, "polls", defaultPolls, "polls of a waiting request (GetRequest) in the poll flow, all on one client (-1: no poll flow)")
	fs.IntVar(&p.clients, "poll-clients", defaultPollClients, "goroutines polling at once")
	fs.IntVar(&p.backlog, "poll-backlog", defaultPollBacklog, "requests of the poll flow's event; a fifth are finished, the rest wait and are polled")
}

func (p *pollOptions) check() error {
	if p.polls >= 0 && (p.polls < 1 || p.clients < 1 || p.backlog < 5) {
		return clikit.Usagef("-polls and -poll-clients must be at least 1 (or -polls -1), -poll-backlog at least 5")
	}
	return nil
}

// pollFlow is what the poll flow measured.
type pollFlow struct {
	Polls       int     `json:"polls"`
	Clients     int     `json:"clients"`
	Backlog     int     `json:"backlog"` // the event's requests; a fifth finished
	Waiting     int     `json:"waiting"` // the requests polled, in turn
	Seconds     float64 `json:"seconds"`
	PollsPerSec float64 `json:"pollsPerSec"`
	// Placed counts the answers with a place in line: every one, as every request
	// polled waits.
	Placed  int             `json:"placed"`
	PerPoll clikit.CostJSON `json:"perPoll"`
	// RequestReads, ConfigReads: GetItem calls per poll of the request, and of the
	// event's CONFIG (cached per client for Options.EventCacheTTL).
	RequestReads float64 `json:"requestReadsPerPoll"`
	ConfigReads  float64 `json:"configReadsPerPoll"`
	// ProgressReads is the Query calls of the event's progress in all: one a
	// partition per Options.ProgressCacheTTL, however many polls.
	ProgressReads int `json:"progressReads"`
}

// measurePolls runs the poll flow: an event with a backlog, then o.polls polls of its
// waiting requests from o.clients goroutines on one new client, counted.
func measurePolls(ctx context.Context, db asyncevent.DynamoDB, table string, o pollOptions, progress func(string, ...any)) (*pollFlow, error) {
	waiting, err := pollBacklog(ctx, db, table, o)
	if err != nil {
		return nil, err
	}
	progress("poll: %s polls of %s waiting requests from %d goroutines on one client", clikit.FormatInt(o.polls), clikit.FormatInt(len(waiting)), o.clients)
	counter := metered.NewCounter(db, bench.ItemKind)
	node, err := asyncevent.New(counter, asyncevent.Options{TableName: table})
	if err != nil {
		return nil, err
	}
	ids := make([]string, o.polls)
	for i := range ids {
		ids[i] = waiting[i%len(waiting)]
	}
	var placed atomic.Int64
	start := time.Now()
	if err := bench.EachOf(ctx, o.clients, ids, func(ctx context.Context, id string) error {
		r, err := node.GetRequest(ctx, id)
		if err == nil && r.Queue != nil {
			placed.Add(1)
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("poll: %w", err)
	}
	elapsed := time.Since(start)
	cost := counter.Snapshot()
	n := float64(o.polls)
	return &pollFlow{
		Polls: o.polls, Clients: o.clients, Backlog: o.backlog, Waiting: len(waiting),
		Seconds: elapsed.Seconds(), PollsPerSec: n / elapsed.Seconds(), Placed: int(placed.Load()),
		PerPoll:      clikit.CostOf(cost, o.polls, 0),
		RequestReads: float64(cost.Reads[entity.Request]) / n, ConfigReads: float64(cost.Reads[entity.Config]) / n,
		ProgressReads: cost.Calls["Query"],
	}, nil
}

// pollBacklog makes the poll flow's event: o.backlog requests queued, of which the
// workers finished the first fifth and counted it; it returns the requests that wait.
func pollBacklog(ctx context.Context, db asyncevent.DynamoDB, table string, o pollOptions) ([]string, error) {
	c, err := asyncevent.New(db, asyncevent.Options{TableName: table})
	if err != nil {
		return nil, err
	}
	if err := c.CreateTable(ctx); err != nil {
		return nil, err
	}
	eventID := fmt.Sprintf("bench-poll-%d", time.Now().UnixMilli())
	if _, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(o.backlog / 10)}); err != nil {
		return nil, err
	}
	q := queue.NewMemory(queue.MemoryOptions{})
	users := make([]string, o.backlog)
	for i := range users {
		users[i] = fmt.Sprintf("user-%06d", i)
	}
	var mu sync.Mutex
	var ids []string
	if err := bench.EachOf(ctx, o.clients, users, func(ctx context.Context, user string) error {
		p, err := c.Submit(ctx, q, eventID, user)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, p.RequestID)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("poll: the backlog: %w", err)
	}
	finished := map[string]bool{}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{OnOutcome: func(o asyncevent.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		finished[o.RequestID] = true
	}})
	for left := o.backlog / 5; left > 0; {
		ds, err := q.Receive(ctx, left, 0, time.Minute) // at most 10 at a time
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if _, done, _ := proc.ProcessOne(ctx, d, 0, nil); !done {
				return nil, fmt.Errorf("poll: the backlog: message %s failed", d.MessageID)
			}
		}
		left -= len(ds)
	}
	if err := c.FlushProgress(ctx); err != nil {
		return nil, err
	}
	var waiting []string
	for _, id := range ids {
		if !finished[id] {
			waiting = append(waiting, id)
		}
	}
	return waiting, nil
}

// pollAcceptance is the figure: on a node polled thousands of times a second a
// poll costs about one read, its request's.
func pollAcceptance(f *pollFlow) []check {
	if f == nil {
		return nil
	}
	calls := f.PerPoll.Calls
	return []check{{
		Name:  "DynamoDB calls per poll of a waiting request ≈ 1 (the GetItem of its request; the event's progress read once per flush of the counts, every 200 ms, per node)",
		Value: calls,
		Shown: fmt.Sprintf("%.3f (GetItem of the request %.3f + cached CONFIG reads %.4f + progress Queries %.4f: %d in %s); %s of %s told a place in line",
			calls, f.RequestReads, f.ConfigReads, float64(f.ProgressReads)/float64(f.Polls), f.ProgressReads, clikit.FormatSeconds(f.Seconds),
			clikit.FormatInt(f.Placed), clikit.FormatInt(f.Polls)),
		OK: f.RequestReads == 1 && calls <= 1.05 && f.Placed == f.Polls,
	}}
}

// writePoll prints the poll flow.
func writePoll(w io.Writer, f *pollFlow) error {
	if f == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "\npoll of a waiting request (GetRequest with its place in line; the library only): %s polls from %d goroutines on one client, "+
		"over %s waiting requests of an event of %s, in %s (%.0f polls/s)\n"+
		"  per poll: DynamoDB calls %s · %.2f RCU · %.3f GetItem of the request · %.4f of the event's CONFIG; the event's progress read %d times (Query)\n",
		clikit.FormatInt(f.Polls), f.Clients, clikit.FormatInt(f.Waiting), clikit.FormatInt(f.Backlog), clikit.FormatSeconds(f.Seconds), f.PollsPerSec,
		clikit.CallsOf(f.PerPoll.Calls, f.PerPoll.ByCall), f.PerPoll.RCU, f.RequestReads, f.ConfigReads, f.ProgressReads)
	return err
}
