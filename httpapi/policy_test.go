package httpapi

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/internal/deployrole"
)

// ingestCalls records the DynamoDB calls of every server the tests run (newEnv's
// client), and sent whether one sent to the queue: the calls the ingest function
// (examples/lambda/ingest, a Server) makes.
var (
	ingestCalls asynceventtest.IAMActions
	sent        atomic.Bool
)

// sendsRecorded is the tests' queue, its sends recorded (SQSQueue.Send is one
// sqs:SendMessage).
type sendsRecorded struct{ *asyncevent.MemoryQueue }

func (q sendsRecorded) Send(ctx context.Context, m asyncevent.OutgoingMessage) error {
	sent.Store(true)
	return q.MemoryQueue.Send(ctx, m)
}

// TestMain runs the tests and then, when the whole package ran, holds the ingest
// function's role (deploy/template.yaml, Ingest) to the calls its servers made: a call
// the code adds fails the run until the role grants it, and a grant no test needed
// fails it too.
func TestMain(m *testing.M) {
	code := asynceventtest.Run(m)
	if code == 0 && wholeRun() {
		if err := ingestRoleIsItsCalls(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: the ingest's role:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// wholeRun reports whether every test ran: no -run or -skip, not -short.
func wholeRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f == nil || f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}

func ingestRoleIsItsCalls() error {
	role, err := deployrole.Read("../deploy/template.yaml", "Ingest")
	if err != nil {
		return err
	}
	table := role["AsyncEventTable"]
	if got := ingestCalls.Actions(); !slices.Equal(got, table.Actions) {
		return fmt.Errorf("the servers called %v on the table; the role grants %v", got, table.Actions)
	}
	want := deployrole.TableOnly
	if len(ingestCalls.IndexActions()) > 0 {
		want = deployrole.TableAndIndexes
	}
	if !slices.Equal(want, table.Resources) {
		return fmt.Errorf("the servers' calls on indexes %v need the resources %v; the role has %v", ingestCalls.IndexActions(), want, table.Resources)
	}
	queue := []string{}
	if sent.Load() {
		queue = []string{"sqs:SendMessage"}
	}
	if got := role["AsyncEventQueue"].Actions; !slices.Equal(queue, got) && (len(queue) > 0 || len(got) > 0) {
		return fmt.Errorf("the servers' queue calls are %v; the role grants %v", queue, got)
	}
	return nil
}
