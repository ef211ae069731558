package dynamodblocal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// starterScript writes a shell script that acts as a starter program: body runs,
// and its output is what Program reads.
func starterScript(t *testing.T, body string) Program {
	t.Helper()
	path := filepath.Join(t.TempDir(), "starter")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return Program(path)
}

// The starter program's protocol: its first line is the endpoint, its input closing
// is the stop, and a starter that prints no endpoint is an error that shows what it
// said.
func TestProgram(t *testing.T) {
	if !jarSupported {
		t.Skip("the starter program is run through sh: Unix-only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("its endpoint, then the stop when its input closes", func(t *testing.T) {
		stopped := filepath.Join(t.TempDir(), "stopped")
		p := starterScript(t, `echo "starting" >&2; echo "endpoint http://127.0.0.1:1234"; cat >/dev/null; touch `+stopped)
		var logs []string
		endpoint, stop, err := p.StartContainer(ctx, func(format string, args ...any) { logs = append(logs, format) })
		require.NoError(t, err)
		assert.Equal(t, "http://127.0.0.1:1234", endpoint)
		require.NoError(t, stop())
		assert.FileExists(t, stopped, "the starter stops once its input closes")
		assert.NotEmpty(t, logs, "its standard error goes to logf")
	})
	t.Run("no endpoint", func(t *testing.T) {
		p := starterScript(t, `echo "no engine here" >&2; exit 3`)
		_, _, err := p.StartContainer(ctx, nil)
		require.Error(t, err)
		assert.ErrorContains(t, err, "printed no endpoint")
		assert.ErrorContains(t, err, "no engine here", "what the starter said")
	})
	t.Run("a starter that hangs before its endpoint ends with ctx", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		p := starterScript(t, `sleep 30`)
		_, _, err := p.StartContainer(short, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// StartFromEnv reads the container path from the environment: the starter program,
// and DYNAMODB_LOCAL_CONTAINER's off and require.
func TestStartFromEnv(t *testing.T) {
	if !jarSupported {
		t.Skip("the starter program is run through sh: Unix-only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Setenv(EnvEndpoint, "")
	p := starterScript(t, `echo "endpoint http://127.0.0.1:1234"; cat >/dev/null`)

	t.Run("the starter program", func(t *testing.T) {
		t.Setenv(EnvStarter, string(p))
		t.Setenv(EnvContainerMode, "require")
		inst, err := StartFromEnv(ctx, Options{})
		require.NoError(t, err)
		assert.Equal(t, SourceContainer, inst.Source)
		assert.Equal(t, "http://127.0.0.1:1234", inst.Endpoint)
		require.NoError(t, inst.Stop())
	})
	t.Run("require without a starter", func(t *testing.T) {
		t.Setenv(EnvStarter, "")
		t.Setenv(EnvContainerMode, "require")
		_, err := StartFromEnv(ctx, Options{})
		assert.ErrorContains(t, err, EnvStarter)
	})
	t.Run("an unknown mode", func(t *testing.T) {
		t.Setenv(EnvContainerMode, "sometimes")
		_, err := StartFromEnv(ctx, Options{})
		assert.ErrorContains(t, err, "want off, require or nothing")
	})
	t.Run("off leaves the starter out", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir()) // no java: the jar fails at once, and says so
		t.Setenv(EnvStarter, string(p))
		t.Setenv(EnvContainerMode, "off")
		_, err := StartFromEnv(ctx, Options{CacheDir: t.TempDir()})
		require.Error(t, err)
		assert.False(t, strings.Contains(err.Error(), "127.0.0.1:1234"), "no starter run: %v", err)
	})
}
