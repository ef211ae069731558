package sqslocal

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartDefault runs the real thing with default options: whatever Start
// finds (without SQS_ENDPOINT: fauxqs) must serve a queue round trip and be
// gone after Stop. It fails, never skips, when no local SQS can be had,
// printing what to install.
func TestStartDefault(t *testing.T) {
	ctx := t.Context()
	inst, err := Start(ctx, Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Stop() })
	require.Contains(t, []string{SourceEnv, SourceFauxqs}, inst.Source)

	client, err := NewClient(ctx, inst.Endpoint)
	require.NoError(t, err)
	name := "sqslocal-test-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	require.NoError(t, err)
	url := created.QueueUrl
	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("hello")})
	require.NoError(t, err)
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	assert.Equal(t, "hello", aws.ToString(got.Messages[0].Body))

	// An error reply must come back as the modelled error.
	_, err = client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name + "-missing")})
	var missing *types.QueueDoesNotExist
	require.ErrorAs(t, err, &missing)

	require.NoError(t, inst.Stop())
	require.NoError(t, inst.Stop(), "Stop must be idempotent")
	if inst.Source == SourceFauxqs {
		addr := strings.TrimPrefix(inst.Endpoint, "http://")
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("%s still accepts connections after Stop", inst.Endpoint)
		}
	}
}

// TestStartFromEnv checks that SQS_ENDPOINT is taken as it is, with a scheme
// added, and that its Stop does nothing.
func TestStartFromEnv(t *testing.T) {
	t.Setenv(EnvEndpoint, " localhost:4566 ")
	inst, err := Start(context.Background(), Options{CacheDir: t.TempDir()})
	require.NoError(t, err)
	assert.Equal(t, &Instance{Endpoint: "http://localhost:4566", Source: SourceEnv}, inst)
	assert.NoError(t, inst.Stop())
}

// TestStartSaysWhatToInstall runs Start on a PATH without node, then with
// node but without npm, and an empty cache: it must fail fast and name what
// to install or set.
func TestStartSaysWhatToInstall(t *testing.T) {
	t.Setenv(EnvEndpoint, "")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	link := func(name string) {
		path, err := exec.LookPath(name)
		require.NoError(t, err, "%s is needed for this test", name)
		require.NoError(t, os.Symlink(path, filepath.Join(bin, name)))
	}
	link("sh")
	node, _ := exec.LookPath("node")
	t.Setenv("PATH", bin)
	opts := Options{CacheDir: filepath.Join(dir, "cache"), Logf: t.Logf}

	for _, c := range []struct {
		add  string
		want []string
	}{
		{"", []string{EnvEndpoint, "Node.js 20+", "npm", "node not found"}},
		{"node", []string{EnvEndpoint, "npm not found"}},
	} {
		if c.add != "" {
			require.NotEmpty(t, node, "node is needed for this test")
			require.NoError(t, os.Symlink(node, filepath.Join(bin, c.add)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := Start(ctx, opts)
		cancel()
		require.Error(t, err)
		t.Log(err)
		for _, want := range c.want {
			assert.ErrorContains(t, err, want)
		}
		assert.False(t, errors.Is(err, context.DeadlineExceeded), "must fail fast")
	}
}
