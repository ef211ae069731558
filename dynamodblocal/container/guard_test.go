package container

import (
	"testing"

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
