package dynamodblocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/asyncevent/asyncevent/internal/localproc"
)

// Environment variables that choose the container path of a program that does not
// build one itself (the test kit asynceventtest reads them: StartFromEnv).
const (
	// EnvContainerMode is "off" to skip the container path, "require" to make a
	// container the only way after DYNAMODB_ENDPOINT (a run that must prove the
	// container path: scripts/container-engine.sh sets it), or empty: try a
	// container, then the jar.
	EnvContainerMode = "DYNAMODB_LOCAL_CONTAINER"

	// EnvStarter names a starter program (see Program): scripts/container-engine.sh
	// builds dynamodblocal/container's cmd/dynamodb-container and sets it.
	EnvStarter = "DYNAMODB_LOCAL_STARTER"
)

// Program is a ContainerStarter that runs a starter program: the program at Path
// starts a DynamoDB Local in a container, prints its endpoint as the first line of
// its standard output ("endpoint http://127.0.0.1:PORT"), keeps it until its standard
// input closes, then stops it and exits. Package dynamodblocal/container, a module of
// its own (it brings testcontainers-go and the Docker client), builds one:
// cmd/dynamodb-container. So a program or a test binary that needs only this package
// reaches the container path without building testcontainers-go.
//
// The starter's input is a pipe that this process holds: when it dies without Stop,
// the pipe closes and the starter stops the container all the same.
type Program string

var _ ContainerStarter = Program("")

// starterTimeout bounds a starter's stop: it has that long to remove its container
// after its input closes.
const starterTimeout = time.Minute

// StartContainer runs the starter program and returns the endpoint it printed.
func (p Program) StartContainer(ctx context.Context, logf func(format string, args ...any)) (string, func() error, error) {
	if p == "" {
		return "", nil, errors.New("no starter program")
	}
	cmd := exec.Command(string(p))
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	tail := localproc.NewTailBuffer(8 << 10)
	cmd.Stderr = io.MultiWriter(tail, lineWriter{logf: logf})
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starter %s: %w", p, err)
	}
	exited := make(chan error, 1)
	stop := func() error {
		in.Close()
		select {
		case err := <-exited:
			return err
		case <-time.After(starterTimeout):
			_ = cmd.Process.Kill()
			return fmt.Errorf("starter %s: still running %v after its input closed; killed", p, starterTimeout)
		}
	}
	endpoint := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		if lines.Scan() {
			endpoint <- lines.Text()
		}
		close(endpoint)
		_, _ = io.Copy(io.Discard, out)
		exited <- cmd.Wait()
	}()
	select {
	case line, ok := <-endpoint:
		ep, found := strings.CutPrefix(line, "endpoint ")
		if ok && found && strings.HasPrefix(ep, "http://") {
			return ep, stop, nil
		}
		_ = stop()
		return "", nil, fmt.Errorf("starter %s printed no endpoint (%q): %s", p, line, tail.LastLines(10))
	case <-ctx.Done():
		// Told to stop as a stop would (its input closed, and SIGTERM), so that it
		// removes what it started; killed only if it outlasts starterTimeout. Not
		// waited for here: the caller's ctx has ended.
		in.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		go func() {
			select {
			case <-exited:
			case <-time.After(starterTimeout):
				_ = cmd.Process.Kill()
			}
		}()
		return "", nil, fmt.Errorf("starter %s: %w", p, ctx.Err())
	}
}

// lineWriter hands what a starter writes to its standard error to logf.
type lineWriter struct {
	logf func(format string, args ...any)
}

func (w lineWriter) Write(b []byte) (int, error) {
	if w.logf != nil {
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			w.logf("%s", line)
		}
	}
	return len(b), nil
}

// StartFromEnv is Start with the container path the environment names:
// DYNAMODB_LOCAL_STARTER's program (when opts.Container is nil), and
// DYNAMODB_LOCAL_CONTAINER: "off" skips the container path, "require" makes it the
// only way after DYNAMODB_ENDPOINT (an error when no starter is named).
func StartFromEnv(ctx context.Context, opts Options) (*Instance, error) {
	mode := strings.TrimSpace(os.Getenv(EnvContainerMode))
	switch mode {
	case "", "off", "require":
	default:
		return nil, fmt.Errorf("dynamodblocal: %s=%q: want off, require or nothing", EnvContainerMode, mode)
	}
	if mode == "off" {
		opts.Container = nil
		return Start(ctx, opts)
	}
	if starter := strings.TrimSpace(os.Getenv(EnvStarter)); opts.Container == nil && starter != "" {
		opts.Container = Program(starter)
	}
	if mode == "require" {
		if _, set := localproc.EndpointFromEnv(EnvEndpoint); opts.Container == nil && !set {
			return nil, fmt.Errorf("dynamodblocal: %s=require, and %s names no starter program", EnvContainerMode, EnvStarter)
		}
		opts.RequireContainer = true
	}
	return Start(ctx, opts)
}
