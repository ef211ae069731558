package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// timedEndpoint times the Instant's own work (RoundTrip) inside each call, and keeps
// the requests to replay them.
type timedEndpoint struct {
	in     *Instant
	spent  time.Duration
	record bool
	reqs   []recorded
}

type recorded struct {
	target string
	body   []byte
}

func (t *timedEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	if t.record {
		t.reqs = append(t.reqs, recorded{r.Header.Get("X-Amz-Target"), body})
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	start := time.Now()
	res, err := t.in.RoundTrip(r)
	t.spent += time.Since(start)
	return res, err
}

// How much of a flow's measured CPU and allocations is the endpoint's own work, which
// MeasureClientCPU counts on both sides (getrusage and MemStats are the process's).
func TestReview43EndpointShare(t *testing.T) {
	ctx := context.Background()
	for _, side := range []string{"library", "baseline"} {
		te := &timedEndpoint{in: new(Instant)}
		db := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://x.invalid"),
			Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), HTTPClient: &http.Client{Transport: te}})
		c, err := asyncevent.New(db, asyncevent.Options{TableName: "Tab"})
		require.NoError(t, err)
		_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "cpu", EventType: asyncevent.FirstCome, CapacityTotal: 100})
		require.NoError(t, err)
		raw := &Baseline{DB: db, Table: "Tab"}
		op := func(i int) error {
			if side == "library" {
				_, err := c.Submit(ctx, discard{}, "cpu", "u-"+strconv.Itoa(i))
				return err
			}
			_, _, err := raw.Submit(ctx, discard{}, "cpu", "u-"+strconv.Itoa(i))
			return err
		}
		for i := range 200 {
			require.NoError(t, op(i))
		}
		const n = 3000
		te.spent, te.record = 0, true
		s, err := measureCPU(n, func() error { n := len(te.reqs); return op(1_000_000 + n) })
		require.NoError(t, err)
		endpointNs := float64(te.spent.Nanoseconds()) / n
		// the endpoint's allocations per op: replay the recorded calls on a fresh one
		replay := new(Instant)
		reqs := te.reqs[:300]
		allocs := testing.AllocsPerRun(1, func() {
			for _, r := range reqs {
				req, _ := http.NewRequest("POST", "http://x.invalid", bytes.NewReader(r.body))
				req.Header.Set("X-Amz-Target", r.target)
				_, _ = replay.RoundTrip(req)
			}
		})
		callsPerOp := float64(len(te.reqs)) / n
		t.Logf("%s, new participation: measured %.1f µs/op, endpoint RoundTrip %.1f µs/op (%.0f%%); allocs %.0f/op, endpoint ~%.0f/op (minus NewRequest)",
			side, s.CPUNsPerOp/1000, endpointNs/1000, 100*endpointNs/s.CPUNsPerOp, s.AllocsPerOp, allocs/300*callsPerOp)
	}
}
