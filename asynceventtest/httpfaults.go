package asynceventtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
)

// FaultyHTTPClient injects a FaultPlan's faults into the HTTP calls of a DynamoDB
// client, beneath the SDK: unlike FaultyDynamoDB, whose faults reach the caller at
// once, these go through the SDK's retryer, as a dropped connection does in
// production. A lost response is then retried by the SDK with the same input, its
// ClientRequestToken included, after DynamoDB has applied the first attempt. Make one
// with NewFaultyClient. It is safe for concurrent use.
type FaultyHTTPClient struct {
	next   aws.HTTPClient
	faults *planner
}

// NewFaultyClient returns a copy of db whose HTTP calls go through a FaultyHTTPClient
// with plan, and that FaultyHTTPClient. The copy's retryer is the SDK's standard one
// (three attempts), without its client-side retry quota, which a plan's high fault
// rates would drain, and with a backoff of milliseconds instead of seconds: every
// injected fault is retried, and quickly. optFns then change the copy's options
// further.
func NewFaultyClient(db *dynamodb.Client, plan FaultPlan, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, *FaultyHTTPClient) {
	faulty := &FaultyHTTPClient{faults: newPlanner(plan)}
	client := clientBeneath(db, func(next dynamodb.HTTPClient) dynamodb.HTTPClient {
		faulty.next = next
		return faulty
	}, optFns...)
	return client, faulty
}

// clientBeneath returns a copy of db whose HTTP calls go through the client that
// install returns, given the copy's own: beneath the SDK, where its retries meet what
// that client answers. The copy's retryer is the SDK's standard one without its
// client-side retry quota and with a backoff of milliseconds; optFns then change the
// copy's options further.
func clientBeneath(db *dynamodb.Client, install func(next dynamodb.HTTPClient) dynamodb.HTTPClient, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(db.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = install(o.HTTPClient)
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.RateLimiter = ratelimit.None
			so.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
				d := 5 * time.Millisecond << min(attempt, 4)
				return d/2 + rand.N(d/2), nil
			})
		})
		for _, fn := range optFns {
			fn(o)
		}
	})
}

// Counts returns the faults injected so far.
func (h *FaultyHTTPClient) Counts() FaultCounts { return h.faults.Counts() }

// Do implements aws.HTTPClient.
func (h *FaultyHTTPClient) Do(req *http.Request) (*http.Response, error) {
	op, pks, err := describeCall(req)
	if err != nil {
		return nil, err
	}
	kind, delay := h.faults.decide(op, pks...)
	if err := ctxsleep.Sleep(req.Context(), delay); err != nil {
		return nil, err
	}
	switch kind {
	case failFault:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused (injected)")}
	case throttleFault:
		return throttled(req), nil
	case loseFault:
		resp, err := h.next.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer (injected after the call was applied)")}
	}
	return h.next.Do(req)
}

// describeCall reads the operation of a DynamoDB call from its X-Amz-Target header
// and the partition keys of its items from its JSON body, which it leaves in place
// for the call to send.
func describeCall(req *http.Request) (op string, pks []string, err error) {
	_, op, _ = strings.Cut(req.Header.Get("X-Amz-Target"), ".")
	if req.Body == nil {
		return op, nil, nil
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return "", nil, fmt.Errorf("asynceventtest: read the body of %s: %w", op, err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		Key, Item     jsonItem
		TransactItems []map[string]struct{ Key, Item jsonItem }
	}
	if json.Unmarshal(body, &in) != nil {
		return op, nil, nil // not a call with items: matches no key prefix
	}
	pks = append(in.Key.pk(), in.Item.pk()...)
	for _, it := range in.TransactItems {
		for _, action := range it {
			pks = append(pks, action.Key.pk()...)
			pks = append(pks, action.Item.pk()...)
		}
	}
	return op, pks, nil
}

// jsonItem is an item or key as DynamoDB's JSON protocol writes it.
type jsonItem map[string]struct{ S *string }

func (it jsonItem) pk() []string {
	if v, ok := it["PK"]; ok && v.S != nil {
		return []string{*v.S}
	}
	return nil
}

// throttled is DynamoDB's reply to a call over the table's throughput.
func throttled(req *http.Request) *http.Response {
	body := []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"throughput exceeded (injected)"}`)
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	h.Set("X-Amzn-Requestid", "injected")
	return &http.Response{
		Status: "400 Bad Request", StatusCode: http.StatusBadRequest,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Request: req,
	}
}
