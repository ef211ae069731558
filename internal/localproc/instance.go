package localproc

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// idleConnTimeout is how long a client of a local service keeps an idle connection:
// below the servers' own idle timeouts (DynamoDB Local's Jetty closes an idle
// connection after 30 s, measured; Node's http server, fauxqs's, after 5 s by
// default), so that a call is never written on a connection the server is closing.
// The SDK's default (90 s) lost, now and then, a call sent once (a seat claim) to
// "use of closed network connection" on a connection idle about 30 s.
const idleConnTimeout = 4 * time.Second

// Options configures the Start of dynamodblocal and of sqslocal. The zero value
// is ready to use.
type Options struct {
	// CacheDir is where the service's npm package is installed. It is
	// shared by all processes of the user, and an install there is reused.
	// Default: the service's directory under os.UserCacheDir()/asyncevent
	// (see CacheDir), named in its package's Start.
	CacheDir string

	// Logf receives progress lines (probing, installing, started on
	// port ...), for example testing.T.Logf. Default: discard.
	Logf func(format string, args ...any)
}

// Instance is a local service that a Start of dynamodblocal or sqslocal found or
// started.
type Instance struct {
	// Endpoint is the service's base URL, e.g. http://127.0.0.1:41234.
	Endpoint string
	// Source tells where it came from: one of the Source constants of the
	// package whose Start returned it.
	Source string

	stop     func() error // nil when there is nothing to stop
	stopOnce sync.Once
	stopErr  error
}

// NewInstance returns an Instance whose Stop calls stop once; a nil stop
// (an endpoint taken from the environment) makes Stop do nothing.
func NewInstance(endpoint, source string, stop func() error) *Instance {
	return &Instance{Endpoint: endpoint, Source: source, stop: stop}
}

// Stop stops what Start started: it kills the server process (and returns
// once its port is closed) or terminates the container. For an endpoint
// taken from the environment it does nothing. Stop is idempotent and safe
// for concurrent use; later calls return the first call's result.
func (i *Instance) Stop() error {
	if i == nil {
		return nil
	}
	i.stopOnce.Do(func() {
		if i.stop != nil {
			i.stopErr = i.stop()
		}
	})
	return i.stopErr
}

// Region is the AWS region of the clients that AWSConfig configures.
const Region = "us-east-1"

// AWSConfig returns the SDK configuration for a client of a local service
// at endpoint: region us-east-1 and static dummy credentials with the given
// access key (the local services check only that one is present; DynamoDB
// Local takes letters and digits only).
//
// It is built by hand instead of config.LoadDefaultConfig so that the
// developer's ~/.aws files, AWS_PROFILE or AWS_ENDPOINT_URL cannot redirect
// or break a test.
func AWSConfig(endpoint, accessKey string) (aws.Config, error) {
	if endpoint == "" {
		return aws.Config{}, errors.New("empty endpoint")
	}
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, accessKey, ""),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.IdleConnTimeout = idleConnTimeout
		}),
	}, nil
}
