package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	dockercontainer "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/internal/localproc"
)

// Labels of every container started here, so that one left behind can be found:
// docker ps -a --filter label=com.github.asyncevent.asyncevent
const (
	Label    = "com.github.asyncevent.asyncevent" // "dynamodblocal"
	LabelDir = Label + ".dir"                     // the starting process's working directory (a test binary's: its package)
	LabelPID = Label + ".pid"                     // the starting process's ID
)

const (
	// probeTimeout bounds finding the engine: testcontainers-go asks each candidate
	// socket for its info without a deadline of its own, and a socket whose engine
	// hangs must not hold Start.
	probeTimeout = 10 * time.Second

	// readyTimeout bounds the wait for DynamoDB Local to answer in a started
	// container (about two seconds).
	readyTimeout = 60 * time.Second

	// stopTimeout bounds the stop and removal of a container, on a context of its
	// own since Stop has none and a failed start's may be gone.
	stopTimeout = 30 * time.Second

	// portAttempts is how often a start is tried when another process took the
	// free port between our pick and DynamoDB Local's bind.
	portAttempts = 3
)

// Engine starts DynamoDB Local through testcontainers-go on the engine it finds
// (DOCKER_HOST, ~/.testcontainers.properties, the usual sockets), in a container on
// the host network, after the checks of the package doc. It is a
// dynamodblocal.ContainerStarter; its zero value is ready to use.
type Engine struct {
	// Image is the DynamoDB Local image. It must be on the engine (nothing is
	// pulled) and have java on its PATH and DynamoDBLocal.jar with
	// DynamoDBLocal_lib in its working directory, as Amazon's has. Default:
	// DYNAMODB_LOCAL_IMAGE, else DefaultImage.
	Image string
	// Port is the loopback port DynamoDB Local listens on (the container is on the
	// host's network). Default: 0, a free port.
	Port int
}

var _ dynamodblocal.ContainerStarter = Engine{}

func (e Engine) image() string {
	if e.Image != "" {
		return e.Image
	}
	if img := strings.TrimSpace(os.Getenv(EnvImage)); img != "" {
		return img
	}
	return DefaultImage
}

// StartContainer starts DynamoDB Local in a container and returns its endpoint on
// 127.0.0.1 and the function that terminates and removes the container.
func (e Engine) StartContainer(ctx context.Context, logf func(format string, args ...any)) (string, func() error, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	image := e.image()
	// testcontainers-go's discovery asks each candidate engine for its info: one
	// that is not on a local socket is refused before it is contacted at all.
	cfg := testcontainers.ReadConfig().Config
	if err := checkCandidates(os.Getenv, cfg.TestcontainersHost, cfg.Host); err != nil {
		return "", nil, fmt.Errorf("container engine passed over: %w", err)
	}
	p, err := findEngine(ctx, logf)
	if err != nil {
		return "", nil, err
	}
	defer p.Close()
	if err := loopbackOnly(ctx, p.Client(), image); err != nil {
		return "", nil, fmt.Errorf("container engine at %s passed over: %w", p.Client().DaemonHost(), err)
	}
	logf("dynamodblocal: starting %s through testcontainers-go on %s (host network, loopback only)", image, p.Client().DaemonHost())
	for attempt := 1; ; attempt++ {
		endpoint, stop, err := run(ctx, image, e.Port, logf)
		if errors.Is(err, localproc.ErrPortTaken) && attempt < portAttempts && e.Port == 0 {
			logf("dynamodblocal: %v; retrying on another port", err)
			continue
		}
		return endpoint, stop, err
	}
}

// findEngine asks testcontainers-go for its engine, within probeTimeout.
func findEngine(ctx context.Context, logf func(string, ...any)) (*testcontainers.DockerProvider, error) {
	type found struct {
		p   *testcontainers.DockerProvider
		err error
	}
	ch := make(chan found, 1)
	go func() {
		p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(logger(logf)))
		ch <- found{p, err}
	}()
	timer := time.NewTimer(probeTimeout)
	defer timer.Stop()
	select {
	case f := <-ch:
		if f.err != nil {
			return nil, fmt.Errorf("no container engine answers (testcontainers-go: %w)", f.err)
		}
		return f.p, nil
	case <-timer.C:
		return nil, fmt.Errorf("no container engine answered within %s", probeTimeout)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// run starts one container with DynamoDB Local on a free port of the host network.
func run(ctx context.Context, image string, port int, logf func(string, ...any)) (string, func() error, error) {
	if port == 0 {
		var err error
		if port, err = localproc.FreePort(); err != nil {
			return "", nil, err
		}
	}
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	dir, _ := os.Getwd()
	ctr, err := testcontainers.Run(ctx, image,
		testcontainers.WithLogger(logger(logf)),
		testcontainers.WithEntrypoint("java"),
		testcontainers.WithCmd(dynamodblocal.JavaArgs("./DynamoDBLocal_lib", "DynamoDBLocal.jar", port)...),
		testcontainers.WithLabels(map[string]string{
			Label: "dynamodblocal", LabelDir: dir, LabelPID: strconv.Itoa(os.Getpid()),
		}),
		testcontainers.WithHostConfigModifier(func(hc *dockercontainer.HostConfig) {
			hc.NetworkMode = "host"
			hc.PortBindings = nil
		}),
		// testcontainers-go attaches the container to reaper_default; on the
		// host network it has no network of its own.
		testcontainers.WithEndpointSettingsModifier(func(s map[string]*network.EndpointSettings) { clear(s) }),
		testcontainers.WithWaitStrategyAndDeadline(readyTimeout, answers{endpoint: endpoint}),
	)
	if err != nil {
		if ctr != nil {
			if rmErr := terminate(ctr); rmErr != nil {
				err = fmt.Errorf("%w (and %w)", err, rmErr)
			}
		}
		return "", nil, err
	}
	logf("dynamodblocal: DynamoDB Local (container %s, testcontainers-go) listening on %s", shortID(ctr.GetContainerID()), endpoint)
	stop := func() error {
		if err := terminate(ctr); err != nil {
			return err
		}
		return localproc.WaitPortClosed(port, stopTimeout)
	}
	return endpoint, stop, nil
}

// terminate stops and removes a container, on a context of its own.
func terminate(ctr testcontainers.Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return testcontainers.TerminateContainer(ctr, testcontainers.StopContext(ctx), testcontainers.StopTimeout(5*time.Second))
}

// answers waits for DynamoDB Local at endpoint, which is on 127.0.0.1 whatever
// testcontainers-go takes for the engine's host. A container that stops first fails
// the wait with the last lines of its log, as ErrPortTaken when its port was taken.
type answers struct{ endpoint string }

func (a answers) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		// DynamoDB Local's x-amzn-RequestId header tells it apart from another
		// server that grabbed the port.
		if localproc.ProbeHTTP(a.endpoint, func(r *http.Response) bool { return r.Header.Get("x-amzn-RequestId") != "" }) {
			return nil
		}
		if st, err := target.State(ctx); err == nil && !st.Running {
			out := lastLines(ctx, target, 10)
			if strings.Contains(out, "Address already in use") || strings.Contains(out, "BindException") {
				return fmt.Errorf("%w: %s", localproc.ErrPortTaken, a.endpoint)
			}
			return fmt.Errorf("the container is %s (exit code %d) before DynamoDB Local answered at %s; its last lines:\n%s",
				st.Status, st.ExitCode, a.endpoint, out)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("DynamoDB Local in the container did not answer at %s: %w; its last lines:\n%s",
				a.endpoint, context.Cause(ctx), lastLines(context.Background(), target, 10))
		case <-tick.C:
		}
	}
}

// lastLines returns the last n lines of a container's log.
func lastLines(ctx context.Context, target wait.StrategyTarget, n int) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rc, err := target.Logs(ctx)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer rc.Close()
	tail := localproc.NewTailBuffer(16 << 10)
	_, _ = io.Copy(tail, rc)
	return tail.LastLines(n)
}

func shortID(id string) string { return id[:min(len(id), 12)] }

// logger hands testcontainers-go's lines to logf, one line each.
type logger func(format string, args ...any)

func (l logger) Printf(format string, args ...any) {
	l("dynamodblocal: testcontainers-go: %s", strings.TrimSpace(fmt.Sprintf(format, args...)))
}
