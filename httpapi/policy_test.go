package httpapi

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/internal/deployrole"
	"github.com/asyncevent/asyncevent/queue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// ingestCalls records the DynamoDB calls that newEnv's servers make while they serve
// a request the ingest function (examples/lambda/ingest, a Server without the admin
// web page) would serve too, and sent whether one sent to the queue.
var (
	ingestCalls = asynceventtest.IAMActions{When: servedByIngest}
	sent        atomic.Bool
)

// ingestKey marks the context of a request that the ingest function would serve.
type ingestKey struct{}

// asIngest marks the contexts of the requests next serves that the ingest function
// serves too: every route but the admin web page's, which it does not mount.
func asIngest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/admin/ui") {
			r = r.WithContext(context.WithValue(r.Context(), ingestKey{}, true))
		}
		next.ServeHTTP(w, r)
	})
}

// servedByIngest reports whether ctx is a request's that asIngest marked: the
// tests' own calls (set-up, workers, checks) are not the ingest's.
func servedByIngest(ctx context.Context) bool { return ctx.Value(ingestKey{}) != nil }

// sendsRecorded is the tests' queue, its sends recorded (queue.SQS.Send is one
// sqs:SendMessage).
type sendsRecorded struct{ *queue.Memory }

func (q sendsRecorded) Send(ctx context.Context, m queue.OutgoingMessage) error {
	if servedByIngest(ctx) {
		sent.Store(true)
	}
	return q.Memory.Send(ctx, m)
}

// TestMain runs the tests and then, when the whole package ran, holds the ingest
// function's role (deploy/template.yaml, Ingest) to the calls its servers made: a call
// the code adds fails the run until the role grants it, and a grant no test needed
// fails it too.
func TestMain(m *testing.M) {
	code := asynceventtest.Run(m)
	switch {
	case code != 0:
	case !wholeRun():
		fmt.Fprintln(os.Stderr, "the ingest's role was not checked: only the whole package's tests make all its calls")
	default:
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

// The ingest function outlives the server's request deadline, so that a slow request
// is answered 503 timeout by the server rather than cut by Lambda.
func TestIngestFunctionOutlivesTheRequestDeadline(t *testing.T) {
	raw, err := os.ReadFile("../deploy/template.yaml")
	require.NoError(t, err)
	var doc struct {
		Resources struct {
			Ingest struct {
				Properties struct {
					Timeout int `yaml:"Timeout"`
				} `yaml:"Properties"`
			} `yaml:"Ingest"`
		} `yaml:"Resources"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	assert.Greater(t, time.Duration(doc.Resources.Ingest.Properties.Timeout)*time.Second, DefaultRequestTimeout+2*time.Second)
}
