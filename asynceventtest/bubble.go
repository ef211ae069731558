package asynceventtest

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// bubbleWallLimit bounds the wall time of one InBubble run. A bubble whose clock
// stands still for good (a goroutine waiting on a mutex that a sleeper holds) would
// otherwise hang until the test binary's -timeout: past the limit the test binary
// panics with every goroutine's stack.
const bubbleWallLimit = 5 * time.Minute

// bubbles maps the *testing.T of each InBubble run to its client of the test
// binary's DynamoDB Local, whose connections belong to that bubble.
var bubbles sync.Map // *testing.T → *dynamodb.Client

// InBubble runs f in a synctest bubble (package testing/synctest), for a test whose
// code waits on the wall clock where no Options.Clock reaches: a heartbeat's ticker,
// a backoff of seconds between refused sends, a context deadline, a Worker's hold
// sweeps, a queue.Memory's visibility, a handler's sleep. In the bubble every timer,
// sleep and deadline runs on the bubble's clock, which starts at midnight UTC on
// 2000-01-01, stands still while any goroutine of the bubble runs or waits on the
// network, and jumps to the next timer once all of them wait on time or on each
// other. The waits happen as they would, in the same order, and cost no wall time;
// a call to DynamoDB Local takes no time on that clock.
//
// Within f, DynamoDB(t), NewTable(t), NewTableWith(t, …) and the kit's other calls
// given f's t reach the test binary's DynamoDB Local through a client whose
// connections belong to the bubble and are never kept alive: an idle connection's
// reader waits on the network, which would hold the bubble's clock still for good,
// and a connection made in the bubble must not serve a test outside it. DynamoDB
// Local is started before the bubble, as it outlives it. OwnDynamoDB, SQS and
// LocalDynamoDB are not for a bubble. As synctest.Test does, InBubble fails the test
// when every goroutine of the bubble waits and no timer is left to wake one, and when
// a goroutine f started is still there a minute of the bubble's clock after f and its
// cleanups ended (its last cleanup waits that minute, for the library's own
// background work).
//
// A goroutine waiting on a mutex holds the bubble's clock still, as one waiting on
// the network does. So a test's wrapper that delays a call by sleeping, while the
// library holds a lock over that call that another goroutine waits on (a heartbeat
// waiting for a lease's release to be answered), never wakes: such a test runs
// outside a bubble, or delays the call on a channel it closes itself. A run that has
// not ended after 5 minutes of wall time panics with every goroutine's stack.
func InBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	shared := DynamoDB(t)
	watchdog := time.AfterFunc(bubbleWallLimit, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("asynceventtest: %s ran InBubble for %s of wall time: its bubble's clock stands still (see InBubble)", t.Name(), bubbleWallLimit))
	})
	defer watchdog.Stop()
	synctest.Test(t, func(t *testing.T) {
		transport := &http.Transport{DisableKeepAlives: true}
		bubbles.Store(t, dynamodb.New(shared.Options(), func(o *dynamodb.Options) {
			o.HTTPClient = &http.Client{Transport: transport}
		}))
		t.Cleanup(func() { // the last cleanup: after the tables' deletion
			// Work the library leaves running past its caller (a cached event's
			// refresh, its call retried by the SDK) ends within a minute of the
			// bubble's clock, free when nothing else runs; the bubble must be empty
			// when f's goroutine ends.
			time.Sleep(time.Minute)
			bubbles.Delete(t)
			transport.CloseIdleConnections()
		})
		f(t)
	})
}

// bubbled returns the client of t's InBubble run, if t is one's.
func bubbled(t testing.TB) (*dynamodb.Client, bool) {
	c, ok := bubbles.Load(t)
	if !ok {
		return nil, false
	}
	return c.(*dynamodb.Client), true
}
