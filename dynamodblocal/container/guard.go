package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// reaperNetwork is the network testcontainers-go attaches every container to when
// the engine has none named bridge, creating it as a bridge network when missing.
// A config-only network of that name keeps it from doing so and carries no traffic.
const reaperNetwork = testcontainers.ReaperDefault

// loopbackOnly refuses a container unless nothing the engine or testcontainers-go
// would do with it can reach an address other than loopback (the package doc lists
// the conditions). cli is the engine testcontainers-go found; image must be on it.
func loopbackOnly(ctx context.Context, cli client.APIClient, image string) error {
	cfg := testcontainers.ReadConfig().Config
	if err := checkSettings(os.Getenv, cfg.RyukDisabled); err != nil {
		return err
	}
	if err := checkHubPrefix(cfg.HubImageNamePrefix); err != nil {
		return err
	}
	if err := checkDaemonHost(cli.DaemonHost()); err != nil {
		return err
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return fmt.Errorf("list the engine's networks: %w", err)
	}
	if err := checkNetworks(nets.Items); err != nil {
		return err
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("list network interfaces: %w", err)
	}
	names := make([]string, len(ifaces))
	for i, ifc := range ifaces {
		names[i] = ifc.Name
	}
	if err := checkInterfaces(names, isBridge); err != nil {
		return err
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("image %s is not on the engine, and nothing is pulled here (scripts/container-engine.sh builds one without a registry; or docker pull it yourself): %w", image, err)
	}
	return nil
}

// checkSettings checks testcontainers-go's settings: the host it reaches published
// ports at (else, inside a container, the default gateway) and its reaper (else an
// image pull and a reaper container).
func checkSettings(getenv func(string) string, ryukDisabled bool) error {
	const hostOverride = "TESTCONTAINERS_HOST_OVERRIDE"
	if h := getenv(hostOverride); !isLoopback(h) {
		return fmt.Errorf("%s=%q is not a loopback address (set it to 127.0.0.1)", hostOverride, h)
	}
	if !ryukDisabled {
		return errors.New("the reaper is on (set TESTCONTAINERS_RYUK_DISABLED=true: its image would be pulled)")
	}
	return nil
}

// checkCandidates wants every engine testcontainers-go's discovery may ask for its
// info (tc.host, DOCKER_HOST, docker.host; the default and rootless sockets are
// local) on a local socket: the discovery connects to each before the other checks
// can run, so a tcp:// or ssh:// one would be contacted off loopback.
func checkCandidates(getenv func(string) string, tcHost, propHost string) error {
	for _, c := range []struct{ name, host string }{
		{"tc.host (~/.testcontainers.properties)", tcHost},
		{"DOCKER_HOST", getenv("DOCKER_HOST")},
		{"docker.host (~/.testcontainers.properties)", propHost},
	} {
		if c.host != "" && !strings.HasPrefix(c.host, "unix://") {
			return fmt.Errorf("%s=%s is not a local socket: not contacted (its host network is not this machine's loopback)", c.name, c.host)
		}
	}
	return nil
}

// checkHubPrefix wants no Docker Hub prefix: testcontainers-go prepends it to the
// image name after the image check, and pulls the prefixed name it does not find.
func checkHubPrefix(prefix string) error {
	if prefix != "" {
		return fmt.Errorf("TESTCONTAINERS_HUB_IMAGE_NAME_PREFIX (or hub.image.name.prefix) is %q: testcontainers-go would pull the prefixed image", prefix)
	}
	return nil
}

// isLoopback reports whether host is localhost or a loopback IP address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// checkDaemonHost wants a local engine (a Unix socket), whose host network is ours.
func checkDaemonHost(host string) error {
	if !strings.HasPrefix(host, "unix://") {
		return fmt.Errorf("the engine at %s is not on a local socket: its host network is not this machine's loopback", host)
	}
	return nil
}

// checkNetworks wants no network that can carry a container's traffic off loopback:
// none named bridge, no bridge driver unless config-only, and a config-only
// reaper_default.
func checkNetworks(nets []network.Summary) error {
	reaper := false
	for _, n := range nets {
		switch {
		case n.Name == reaperNetwork && n.ConfigOnly:
			reaper = true
		case n.Name == "bridge":
			return errors.New("the engine has a network named bridge (start dockerd with --bridge=none)")
		case n.Driver != "host" && n.Driver != "null" && !n.ConfigOnly:
			return fmt.Errorf("the engine has network %s (driver %s): only host and none may carry traffic", n.Name, n.Driver)
		}
	}
	if !reaper {
		return fmt.Errorf("the engine has no config-only network %s, and testcontainers-go would create it as a bridge (docker network create --config-only %s)", reaperNetwork, reaperNetwork)
	}
	return nil
}

// checkInterfaces wants no bridge among the machine's network interfaces.
func checkInterfaces(names []string, bridge func(string) bool) error {
	for _, name := range names {
		if name == "docker0" || strings.HasPrefix(name, "br-") || bridge(name) {
			return fmt.Errorf("network interface %s is a bridge", name)
		}
	}
	return nil
}

// isBridge reports whether the Linux interface name is a bridge.
func isBridge(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name, "bridge"))
	return err == nil
}
