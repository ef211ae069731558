package container

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/stretchr/testify/require"
)

func TestCheckSettings(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "TESTCONTAINERS_HOST_OVERRIDE" {
				return v
			}
			return ""
		}
	}
	for _, h := range []string{"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"} {
		require.NoError(t, checkSettings(env(h), true), h)
	}
	for _, h := range []string{"", "172.17.0.1", "10.0.0.1", "192.168.1.1", "0.0.0.0", "host.docker.internal"} {
		require.ErrorContains(t, checkSettings(env(h), true), "TESTCONTAINERS_HOST_OVERRIDE", h)
	}
	require.ErrorContains(t, checkSettings(env("127.0.0.1"), false), "TESTCONTAINERS_RYUK_DISABLED")
}

func TestCheckDaemonHost(t *testing.T) {
	require.NoError(t, checkDaemonHost("unix:///run/asyncevent-docker/docker.sock"))
	for _, h := range []string{"tcp://10.0.0.5:2375", "ssh://me@box", "npipe:////./pipe/docker_engine"} {
		require.Error(t, checkDaemonHost(h), h)
	}
}

func TestCheckNetworks(t *testing.T) {
	nw := func(name, driver string, configOnly bool) network.Summary {
		var s network.Summary
		s.Name, s.Driver, s.ConfigOnly = name, driver, configOnly
		return s
	}
	safe := []network.Summary{nw("host", "host", false), nw("none", "null", false), nw(reaperNetwork, "null", true)}
	require.NoError(t, checkNetworks(safe))

	require.ErrorContains(t, checkNetworks(safe[:2]), "config-only network reaper_default",
		"without it testcontainers-go creates a bridge network")
	require.ErrorContains(t, checkNetworks([]network.Summary{safe[0], safe[1], nw(reaperNetwork, "bridge", false)}), "reaper_default",
		"a reaper_default that carries traffic")
	require.ErrorContains(t, checkNetworks(append(safe, nw("bridge", "bridge", false))), "bridge")
	require.ErrorContains(t, checkNetworks(append(safe, nw("mynet", "macvlan", false))), "mynet")
	require.NoError(t, checkNetworks(append(safe, nw("template", "bridge", true))), "a config-only network carries nothing")
}

func TestCheckInterfaces(t *testing.T) {
	never := func(string) bool { return false }
	require.NoError(t, checkInterfaces([]string{"lo", "eth0", "ifb0"}, never))
	require.ErrorContains(t, checkInterfaces([]string{"lo", "docker0"}, never), "docker0")
	require.ErrorContains(t, checkInterfaces([]string{"lo", "br-3f2a"}, never), "br-3f2a")
	require.ErrorContains(t, checkInterfaces([]string{"lo", "virbr0"}, func(n string) bool { return n == "virbr0" }), "virbr0")
}

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
