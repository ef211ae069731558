package container

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNoEngineProbedOffLoopback: the guard refuses an engine that is not on a local
// socket, but testcontainers-go's discovery (NewDockerProvider) asks a tcp:// engine
// for its info first, so the connection is made before the guard runs. With
// DOCKER_HOST=tcp://10.x.x.x:2375 that is a packet to a non-loopback address. The
// listener here is on loopback and counts the connections the discovery makes.
func TestNoEngineProbedOffLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	t.Setenv("DOCKER_HOST", "tcp://"+ln.Addr().String())
	t.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err = Engine{Image: "none"}.StartContainer(ctx, t.Logf)
	require.Error(t, err)
	t.Log(err)
	time.Sleep(100 * time.Millisecond)
	require.Zero(t, conns.Load(), "the engine at %s was contacted before the guard refused it", ln.Addr())
}

func TestCheckCandidates(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "DOCKER_HOST" {
				return v
			}
			return ""
		}
	}
	require.NoError(t, checkCandidates(env(""), "", ""))
	require.NoError(t, checkCandidates(env("unix:///run/asyncevent-docker/docker.sock"), "unix:///a.sock", "unix:///b.sock"))
	require.ErrorContains(t, checkCandidates(env("tcp://10.0.0.5:2375"), "", ""), "DOCKER_HOST")
	require.ErrorContains(t, checkCandidates(env("ssh://me@box"), "", ""), "DOCKER_HOST")
	require.ErrorContains(t, checkCandidates(env(""), "tcp://192.168.1.2:2375", ""), "tc.host")
	require.ErrorContains(t, checkCandidates(env("unix:///x.sock"), "", "tcp://172.17.0.1:2375"), "docker.host",
		"discovery falls through to docker.host when DOCKER_HOST does not answer")
}

func TestCheckHubPrefix(t *testing.T) {
	require.NoError(t, checkHubPrefix(""))
	require.ErrorContains(t, checkHubPrefix("registry.example.com/mirror"), "pull")
}
