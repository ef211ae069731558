package asynceventtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/asyncevent/asyncevent/internal/sqslocal"
	"github.com/asyncevent/asyncevent/queue"
)

// localSQS is the test binary's one local SQS, found the first time a test
// asks for it: the endpoint in SQS_ENDPOINT when set, else the SQS emulator
// fauxqs, installed from npm into the user cache directory
// (asyncevent/fauxqs) and run with the local node on a free port. It stops
// when the test binary ends (Main stops it earlier).
var localSQS struct {
	once     sync.Once
	instance *sqslocal.Instance
	client   *sqs.Client
	err      error
}

func startSQS() (*sqslocal.Instance, *sqs.Client, error) {
	localSQS.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		inst, err := sqslocal.Start(ctx, sqslocal.Options{
			Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, "asynceventtest: "+format+"\n", args...) },
		})
		if err != nil {
			localSQS.err = err
			return
		}
		client, err := sqslocal.NewClient(ctx, inst.Endpoint)
		if err != nil {
			_ = inst.Stop()
			localSQS.err = err
			return
		}
		localSQS.instance, localSQS.client = inst, client
	})
	return localSQS.instance, localSQS.client, localSQS.err
}

// stopSQS stops the local SQS that the kit started, if any.
func stopSQS() {
	if localSQS.instance != nil {
		_ = localSQS.instance.Stop()
	}
}

// SQS returns a raw client of the test binary's local SQS, for making and
// inspecting queues and for wrapping in fault injectors. It fails the test
// when no local SQS can be had, saying what to install (Node.js 20+ with
// npm) or set (SQS_ENDPOINT).
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	_, client, err := startSQS()
	if err != nil {
		t.Fatalf("asynceventtest: no local SQS: %v", err)
	}
	return client
}

// SQSEndpoint returns the URL of the test binary's local SQS.
func SQSEndpoint(t testing.TB) string {
	t.Helper()
	SQS(t)
	return localSQS.instance.Endpoint
}

// SQSQueueOptions configures NewSQSQueue. The zero value is a standard queue
// with SQS's default attributes and no dead-letter queue.
type SQSQueueOptions struct {
	// FIFO makes a FIFO queue (its name ends in ".fifo"). Default: a
	// standard queue.
	FIFO bool

	// MaxReceives, when above zero, gives the queue a dead-letter queue of
	// the same type and a RedrivePolicy with maxReceiveCount MaxReceives;
	// DeadLetterQueue reaches it. Default: 0, no dead-letter queue.
	MaxReceives int

	// VisibilityTimeout is the queue's VisibilityTimeout attribute, rounded
	// up to whole seconds; it applies to receives with a zero visibility.
	// Default: 0, SQS's default of 30s.
	VisibilityTimeout time.Duration
}

// NewSQSQueue makes a queue on the test binary's local SQS under a name
// unique to the test, and its dead-letter queue when opts.MaxReceives > 0,
// and deletes them when the test ends. Tests that use it can run in
// parallel.
func NewSQSQueue(t testing.TB, opts SQSQueueOptions) *queue.SQS {
	t.Helper()
	return NewSQSQueueOn(t, SQS(t), opts)
}

// NewSQSQueueOn is NewSQSQueue on a client of the caller's, typically one
// that wraps SQS(t) to inject faults. The queues are made and deleted
// through the raw client, so faults injected by client do not disturb the
// set-up.
func NewSQSQueueOn(t testing.TB, client queue.SQSClient, opts SQSQueueOptions) *queue.SQS {
	t.Helper()
	raw := SQS(t)
	name := uniqueQueueName(t)
	attrs := map[string]string{}
	if opts.VisibilityTimeout > 0 {
		attrs[string(types.QueueAttributeNameVisibilityTimeout)] = strconv.Itoa(int((opts.VisibilityTimeout + time.Second - 1) / time.Second))
	}
	if opts.MaxReceives > 0 {
		dlqURL := createQueue(t, raw, deadLetterName(name, opts.FIFO), opts.FIFO, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := raw.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(dlqURL),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
		})
		if err != nil {
			t.Fatalf("asynceventtest: dead-letter queue ARN: %v", err)
		}
		policy, err := json.Marshal(map[string]any{
			"deadLetterTargetArn": out.Attributes[string(types.QueueAttributeNameQueueArn)],
			"maxReceiveCount":     opts.MaxReceives,
		})
		if err != nil {
			t.Fatalf("asynceventtest: %v", err)
		}
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	url := createQueue(t, raw, queueName(name, opts.FIFO), opts.FIFO, attrs)
	q, err := queue.NewSQS(client, url)
	if err != nil {
		t.Fatalf("asynceventtest: %v", err)
	}
	return q
}

// DeadLetterQueue returns the dead-letter queue of a queue that NewSQSQueue
// made with MaxReceives > 0, for reading what redrive moved there. It fails
// the test for any other queue.
func DeadLetterQueue(t testing.TB, q *queue.SQS) *queue.SQS {
	t.Helper()
	base := strings.TrimSuffix(q.URL()[strings.LastIndex(q.URL(), "/")+1:], ".fifo")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := SQS(t).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(deadLetterName(base, q.FIFO()))})
	if err != nil {
		t.Fatalf("asynceventtest: no dead-letter queue for %s (made with MaxReceives > 0?): %v", q.URL(), err)
	}
	dlq, err := queue.NewSQS(SQS(t), aws.ToString(out.QueueUrl))
	if err != nil {
		t.Fatalf("asynceventtest: %v", err)
	}
	return dlq
}

// createQueue makes a queue and deletes it when the test ends.
func createQueue(t testing.TB, client *sqs.Client, name string, fifo bool, attrs map[string]string) string {
	t.Helper()
	all := map[string]string{}
	for k, v := range attrs {
		all[k] = v
	}
	if fifo {
		all[string(types.QueueAttributeNameFifoQueue)] = "true"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: all})
	if err != nil {
		t.Fatalf("asynceventtest: create queue %s: %v", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		var gone *types.QueueDoesNotExist
		if err != nil && !errors.As(err, &gone) {
			t.Errorf("asynceventtest: delete queue %s: %v", name, err)
		}
	})
	return url
}

// queueName is the name of a queue from its base name.
func queueName(base string, fifo bool) string {
	if fifo {
		return base + ".fifo"
	}
	return base
}

// deadLetterName is the name of the dead-letter queue of the queue with
// base name base.
func deadLetterName(base string, fifo bool) string { return queueName(base+"-dlq", fifo) }

// uniqueQueueName returns a base queue name made of the test's name and a
// random suffix, short enough for "-dlq.fifo" to follow within SQS's 80
// characters.
func uniqueQueueName(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	// Queue names take letters, digits, - and _ only.
	name := strings.ReplaceAll(unsafeName.ReplaceAllString(t.Name(), "_"), ".", "_")
	const maxBase = 80 - len("-dlq.fifo") - len("t--") - 2*len(b)
	if len(name) > maxBase {
		name = name[:maxBase]
	}
	return "t-" + name + "-" + hex.EncodeToString(b[:])
}
