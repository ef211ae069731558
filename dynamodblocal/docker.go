package dynamodblocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// containerImage is the DynamoDB Local image. Its tag matches the jar in the
// pinned npm package so both paths run the same DynamoDB Local version.
const containerImage = "amazon/dynamodb-local:3.3.0"

// containerPort is where DynamoDB Local listens inside the container.
const containerPort = "8000/tcp"

// dockerProbeTimeout bounds the whole Docker probe. Machines that have only
// the docker CLI (no engine) must fall through to java quickly, and a live
// engine answers /_ping in milliseconds.
const dockerProbeTimeout = 2 * time.Second

// containerStartTimeout bounds the wait for DynamoDB Local inside a started
// container (the image pull is bounded only by the caller's ctx).
const containerStartTimeout = 90 * time.Second

// dockerHosts returns the Docker endpoints worth probing, in testcontainers-go's
// order of preference: DOCKER_HOST alone when set (it is authoritative), else
// the hosts named in ~/.testcontainers.properties, the default socket and the
// usual rootless / Docker Desktop sockets.
func dockerHosts() []string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return []string{h}
	}
	var hosts []string
	home, _ := os.UserHomeDir()
	if home != "" {
		hosts = append(hosts, testcontainersProperties(filepath.Join(home, ".testcontainers.properties"))...)
	}
	hosts = append(hosts, "unix:///var/run/docker.sock")
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" {
		hosts = append(hosts, "unix://"+filepath.Join(xdg, "docker.sock"))
	}
	if home != "" {
		hosts = append(hosts,
			"unix://"+filepath.Join(home, ".docker", "run", "docker.sock"),
			"unix://"+filepath.Join(home, ".docker", "desktop", "docker.sock"))
	}
	hosts = append(hosts, "unix://"+filepath.Join("/run/user", strconv.Itoa(os.Getuid()), "docker.sock"))
	return hosts
}

// testcontainersProperties returns tc.host and docker.host from a
// testcontainers properties file, which testcontainers-go honours too.
func testcontainersProperties(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var hosts []string
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "tc.host", "docker.host":
			if v = strings.TrimSpace(v); v != "" {
				hosts = append(hosts, v)
			}
		}
	}
	return hosts
}

// probeDocker reports the first of hosts whose Docker engine answers, within
// timeout overall. It dials the socket itself and sends GET /_ping instead of
// asking testcontainers-go, whose client setup on a machine without an engine
// is slow and logs loudly. Endpoints it cannot speak to cheaply (TLS, ssh,
// npipe) are assumed to answer and left to testcontainers-go.
func probeDocker(ctx context.Context, hosts []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var failures []string
	for _, h := range hosts {
		err := pingDocker(ctx, h)
		if err == nil {
			return h, nil
		}
		failures = append(failures, h+": "+err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	if len(failures) == 0 {
		return "", errors.New("no Docker host to probe")
	}
	// One line, as it goes into a progress log and the final error.
	return "", errors.New(strings.Join(failures, "; "))
}

// pingDocker asks one Docker endpoint for /_ping over plain HTTP.
func pingDocker(ctx context.Context, host string) error {
	network, addr, tlsOnly, err := parseDockerHost(host)
	if err != nil {
		return err
	}
	if network == "" {
		return nil // not probeable here; let testcontainers-go try
	}
	if network == "unix" {
		// A missing socket is the common case (docker CLI without an
		// engine); say so plainly instead of a dial error.
		if _, err := os.Stat(addr); err != nil {
			return errors.New("no socket")
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if tlsOnly {
		return nil // a TLS engine accepted the connection; good enough
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := fmt.Fprint(conn, "GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no answer to /_ping: %w", err)
	}
	if f := strings.Fields(status); len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") || f[1] != "200" {
		return fmt.Errorf("/_ping answered %q", strings.TrimSpace(status))
	}
	return nil
}

// parseDockerHost turns a DOCKER_HOST value into a dial network and address.
// network "" means the scheme is not probed here.
func parseDockerHost(host string) (network, addr string, tlsOnly bool, err error) {
	if strings.HasPrefix(host, "/") {
		return "unix", host, false, nil
	}
	u, err := url.Parse(host)
	if err != nil {
		return "", "", false, fmt.Errorf("bad Docker host: %w", err)
	}
	switch u.Scheme {
	case "unix":
		return "unix", u.Path, false, nil
	case "tcp", "http", "https":
		port := u.Port()
		if port == "" {
			port = "2375"
		}
		tls := u.Scheme == "https" || os.Getenv("DOCKER_TLS_VERIFY") != "" || port == "2376"
		return "tcp", net.JoinHostPort(u.Hostname(), port), tls, nil
	default:
		return "", "", false, nil
	}
}

// startContainer runs DynamoDB Local in a container via testcontainers-go.
//
// Ryuk, testcontainers-go's reaper container, is disabled unless the user set
// TESTCONTAINERS_RYUK_DISABLED: it needs its own image pull and a privileged
// socket mount, which many CI engines refuse. The price is that a process
// killed before Stop leaves the container running; set
// TESTCONTAINERS_RYUK_DISABLED=false where that matters.
func startContainer(ctx context.Context, logf func(string, ...any)) (*Instance, error) {
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		if err := os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true"); err != nil {
			return nil, err
		}
	}
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        containerImage,
			ExposedPorts: []string{containerPort},
			// The image's entrypoint is java. -sharedDb is left out on
			// purpose, like the jar path, so both behave the same.
			Cmd: []string{"-jar", "DynamoDBLocal.jar", "-inMemory", "-disableTelemetry"},
			// Any HTTP answer means DynamoDB Local is serving (it answers
			// GET / with 400 MissingAuthenticationToken).
			WaitingFor: wait.ForHTTP("/").WithPort(containerPort).
				WithStatusCodeMatcher(func(int) bool { return true }).
				WithStartupTimeout(containerStartTimeout),
		},
		Started: true,
		Logger:  logfLogger(logf),
	}
	c, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		if c != nil {
			_ = testcontainers.TerminateContainer(c)
		}
		return nil, fmt.Errorf("start %s: %w", containerImage, err)
	}
	endpoint, err := c.PortEndpoint(ctx, containerPort, "http")
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, fmt.Errorf("container endpoint: %w", err)
	}
	logf("dynamodblocal: DynamoDB Local (container) listening on %s", endpoint)
	return newInstance(endpoint, SourceContainer, func() error {
		// Not the caller's ctx: Stop has none, and termination must
		// happen even if the start context is long gone.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return c.Terminate(ctx)
	})
}

// logfLogger adapts Options.Logf to testcontainers-go's logger, so its chatty
// progress goes where the caller's progress goes instead of to stderr.
type logfLogger func(string, ...any)

// Printf implements testcontainers-go's log.Logger.
func (l logfLogger) Printf(format string, args ...any) { l("testcontainers: "+format, args...) }
