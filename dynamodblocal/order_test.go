package dynamodblocal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeContainers is a ContainerStarter that gives endpoint, or fails with err.
type fakeContainers struct {
	endpoint string
	err      error
	calls    int
	stopped  int
}

func (f *fakeContainers) StartContainer(context.Context, func(string, ...any)) (string, func() error, error) {
	f.calls++
	if f.err != nil {
		return "", nil, f.err
	}
	return f.endpoint, func() error { f.stopped++; return nil }, nil
}

// TestStartOrder checks the order of the three ways: DYNAMODB_ENDPOINT before the
// container, the container before the jar, and the jar after a container that fails,
// unless RequireContainer. The jar is made to fail fast (no java on PATH) so that
// the test reads which way Start took from its error.
func TestStartOrder(t *testing.T) {
	if !jarSupported {
		t.Skip("the jar path is Unix-only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := t.TempDir()
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(sh, filepath.Join(bin, "sh")))
	t.Setenv("PATH", bin)
	t.Setenv(EnvEndpoint, "")

	t.Run("endpoint first", func(t *testing.T) {
		t.Setenv(EnvEndpoint, "http://127.0.0.1:1")
		f := &fakeContainers{endpoint: "http://127.0.0.1:2"}
		inst, err := Start(ctx, Options{Container: f})
		require.NoError(t, err)
		require.Equal(t, SourceEnv, inst.Source)
		require.Equal(t, "http://127.0.0.1:1", inst.Endpoint)
		require.Zero(t, f.calls, "the container must not be tried when an endpoint is given")
	})

	t.Run("container before jar", func(t *testing.T) {
		f := &fakeContainers{endpoint: "http://127.0.0.1:2"}
		inst, err := Start(ctx, Options{Container: f})
		require.NoError(t, err)
		require.Equal(t, SourceContainer, inst.Source)
		require.Equal(t, "http://127.0.0.1:2", inst.Endpoint)
		require.NoError(t, inst.Stop())
		require.NoError(t, inst.Stop())
		require.Equal(t, 1, f.stopped, "Stop must stop the container once")
	})

	t.Run("jar after a failed container", func(t *testing.T) {
		f := &fakeContainers{err: errors.New("no engine here")}
		_, err := Start(ctx, Options{Container: f, CacheDir: t.TempDir()})
		require.Error(t, err)
		require.ErrorContains(t, err, "no engine here")
		require.ErrorContains(t, err, "java not found", "the jar must be tried after the container failed")
	})

	t.Run("required container", func(t *testing.T) {
		f := &fakeContainers{err: errors.New("no engine here")}
		_, err := Start(ctx, Options{Container: f, RequireContainer: true, CacheDir: t.TempDir()})
		require.ErrorContains(t, err, "no engine here")
		require.NotContains(t, err.Error(), "java", "a required container must not fall through to the jar")
	})
}
