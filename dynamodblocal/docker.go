package dynamodblocal

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// containerImage is the DynamoDB Local image. Its tag matches the jar in the
// pinned npm package so both paths run the same DynamoDB Local version.
const containerImage = "amazon/dynamodb-local:3.3.0"

// containerPort is where DynamoDB Local listens inside the container.
const containerPort = "8000/tcp"

// containerLabel is set (to "dynamodblocal") on every container started here,
// so that one left behind by a killed process can be found:
// docker ps -a --filter label=com.github.asyncevent.asyncevent
const containerLabel = "com.github.asyncevent.asyncevent"

// dockerProbeTimeout bounds the whole Docker probe. Machines that have only
// the docker CLI (no engine) must fall through to java quickly, and a live
// engine answers /_ping in milliseconds.
const dockerProbeTimeout = 2 * time.Second

// containerStartTimeout bounds the wait for DynamoDB Local inside a started
// container (the image pull is bounded only by the caller's ctx). A variable
// so that tests can shorten it.
var containerStartTimeout = 90 * time.Second

// containerStopTimeout bounds the removal of a container (Stop, or the
// clean-up after a failed start); it runs on a context of its own, since Stop
// has none and the start's may be gone.
const containerStopTimeout = 30 * time.Second

// Docker Engine API versions, as "1.NN". dockerAPIFallback (Docker 20.10) is
// used when GET /version does not say; dockerAPIMax is the newest this client
// asks for: it takes the engine's version when older, and the engine's minimum
// when that is newer (Docker 29 refuses anything below 1.44). Everything used
// here is unchanged since 1.25.
const (
	dockerAPIFallback = "1.41"
	dockerAPIMax      = "1.44"
)

// dockerHosts returns the Docker endpoints worth probing, in testcontainers-go's
// order of preference (kept, so that a setup that worked before still does):
// DOCKER_HOST alone when set (it is authoritative), else the hosts named in
// ~/.testcontainers.properties, the default socket and the usual rootless /
// Docker Desktop sockets.
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
// testcontainers properties file (Colima and Podman users often name their
// socket there), which this package honours as testcontainers-go does.
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
// timeout overall. It dials the socket itself and sends GET /_ping, cheaply,
// so that a machine without an engine falls through at once. A TLS endpoint
// counts as answering when it accepts the connection (the TLS client comes
// later, in startContainer); ssh:// and npipe:// endpoints are refused.
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
		return unsupportedDockerHost(host)
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
// network "" means a scheme this package does not speak (ssh, npipe, ...).
// tlsOnly is the Docker client's rule: https, DOCKER_TLS_VERIFY set, or port
// 2376.
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

// unsupportedDockerHost is the error for a Docker host whose scheme this
// package cannot speak; Start then goes on to java.
func unsupportedDockerHost(host string) error {
	what := "not a Docker host URL"
	if scheme, _, ok := strings.Cut(host, "://"); ok {
		what = scheme + ":// Docker hosts are not supported"
	}
	return fmt.Errorf("%s (only unix://, tcp://, http:// and https://); "+
		"set DOCKER_HOST to one of those, or set %s to the URL of a DynamoDB Local you run yourself",
		what, EnvEndpoint)
}

// inContainer reports whether this process runs in a container, where a port
// published on the engine's 127.0.0.1 is out of reach. A variable for tests.
var inContainer = func() bool {
	_, err := os.Stat("/.dockerenv")
	return err == nil
}

// dockerEngine is a client of the few Docker Engine API calls startContainer
// needs: JSON over HTTP on the engine's unix socket or tcp address.
type dockerEngine struct {
	http *http.Client
	base string // e.g. http://docker/v1.41, set by negotiate

	// bindIP is the HostIp of the container's port binding ("" = all
	// addresses); endpointHost is the host of the endpoint handed out. Both
	// empty for a unix socket inside a container until startContainer asks
	// for the bridge's gateway.
	bindIP, endpointHost string
}

// newDockerEngine returns a client for host (a value of dockerHosts). A port
// published on a unix socket's engine is bound to 127.0.0.1 (to all
// addresses, reached through the gateway, when this process itself runs in a
// container); on a tcp engine it is bound to all addresses and reached at the
// DOCKER_HOST's hostname.
func newDockerEngine(host string) (*dockerEngine, error) {
	network, addr, useTLS, err := parseDockerHost(host)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}
	e := &dockerEngine{http: &http.Client{Transport: tr}}
	switch network {
	case "unix":
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", addr)
		}
		e.base = "http://docker"
		if !inContainer() {
			e.bindIP, e.endpointHost = "127.0.0.1", "127.0.0.1"
		}
	case "tcp":
		tr.Proxy = http.ProxyFromEnvironment // as the docker CLI does
		e.base = "http://" + addr
		if useTLS {
			cfg, err := dockerTLSConfig()
			if err != nil {
				return nil, err
			}
			tr.TLSClientConfig = cfg
			e.base = "https://" + addr
		}
		e.endpointHost, _, _ = net.SplitHostPort(addr)
	default:
		return nil, unsupportedDockerHost(host)
	}
	return e, nil
}

// dockerTLSConfig follows the Docker client: ca.pem, cert.pem and key.pem
// from DOCKER_CERT_PATH (default ~/.docker), each used when present, and the
// engine's certificate verified only when DOCKER_TLS_VERIFY is set.
func dockerTLSConfig() (*tls.Config, error) {
	dir := os.Getenv("DOCKER_CERT_PATH")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("docker TLS: no DOCKER_CERT_PATH and no home directory: %w", err)
		}
		dir = filepath.Join(home, ".docker")
	}
	hint := func(err error) error {
		return fmt.Errorf("docker TLS (DOCKER_CERT_PATH %s): %w; fix the certificates, or set %s to the URL of a DynamoDB Local you run yourself",
			dir, err, EnvEndpoint)
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// As docker --tls without --tlsverify: encrypted, engine not verified.
		InsecureSkipVerify: os.Getenv("DOCKER_TLS_VERIFY") == "",
	}
	if ca, err := os.ReadFile(filepath.Join(dir, "ca.pem")); err == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, hint(errors.New("ca.pem holds no certificate"))
		}
		cfg.RootCAs = pool
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, hint(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_, certErr := os.Stat(certFile)
	_, keyErr := os.Stat(keyFile)
	if certErr == nil || keyErr == nil {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, hint(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// dockerAPIError is an engine's answer other than the one expected.
type dockerAPIError struct {
	call    string // e.g. "POST /containers/create"
	status  int
	message string // the engine's {"message": ...}, or the body's start
}

func (e *dockerAPIError) Error() string {
	return fmt.Sprintf("docker engine: %s: %d %s: %s", e.call, e.status, http.StatusText(e.status), e.message)
}

// isDockerStatus reports whether err is the engine answering one of codes.
func isDockerStatus(err error, codes ...int) bool {
	var apiErr *dockerAPIError
	if !errors.As(err, &apiErr) {
		return false
	}
	for _, c := range codes {
		if apiErr.status == c {
			return true
		}
	}
	return false
}

// negotiate sets the API version prefix from GET /version (see dockerAPIMax).
func (e *dockerEngine) negotiate(ctx context.Context) {
	version := dockerAPIFallback
	var v struct{ APIVersion, MinAPIVersion string }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/version", nil)
	if err == nil {
		var resp *http.Response
		if resp, err = e.http.Do(req); err == nil {
			if resp.StatusCode == http.StatusOK {
				err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v)
			}
			resp.Body.Close()
		}
	}
	if err == nil && validAPIVersion(v.APIVersion) {
		version = v.APIVersion
		if apiVersionLess(dockerAPIMax, version) {
			version = dockerAPIMax
			if validAPIVersion(v.MinAPIVersion) && apiVersionLess(version, v.MinAPIVersion) {
				version = v.MinAPIVersion
			}
		}
	}
	e.base += "/v" + version
}

// validAPIVersion reports whether v reads as "major.minor".
func validAPIVersion(v string) bool {
	_, _, ok := parseAPIVersion(v)
	return ok
}

func parseAPIVersion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	return major, minor, found && err1 == nil && err2 == nil
}

// apiVersionLess compares two valid API versions.
func apiVersionLess(a, b string) bool {
	amaj, amin, _ := parseAPIVersion(a)
	bmaj, bmin, _ := parseAPIVersion(b)
	return amaj < bmaj || amaj == bmaj && amin < bmin
}

// request sends one API call (path after the version prefix; body, when not
// nil, as JSON) and returns the response when its status is want; otherwise
// it reads the engine's error message and returns a *dockerAPIError.
func (e *dockerEngine) request(ctx context.Context, method, path string, query url.Values, body any, want ...int) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := e.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("docker engine: %s %s: %w", method, path, err)
	}
	for _, w := range want {
		if resp.StatusCode == w {
			return resp, nil
		}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m struct{ Message string }
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &m) == nil && m.Message != "" {
		msg = m.Message
	}
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	return nil, &dockerAPIError{call: method + " " + path, status: resp.StatusCode, message: msg}
}

// call is request for a reply that is read whole: decoded into out when out
// is not nil, else discarded.
func (e *dockerEngine) call(ctx context.Context, method, path string, query url.Values, body, out any, want ...int) error {
	resp, err := e.request(ctx, method, path, query, body, want...)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
		return fmt.Errorf("docker engine: %s %s: reading the answer: %w", method, path, err)
	}
	return nil
}

// ensureImage pulls containerImage unless the engine has it.
func (e *dockerEngine) ensureImage(ctx context.Context, logf func(string, ...any)) error {
	err := e.call(ctx, http.MethodGet, "/images/"+containerImage+"/json", nil, nil, nil, http.StatusOK)
	if err == nil || !isDockerStatus(err, http.StatusNotFound) {
		return err
	}
	logf("dynamodblocal: pulling %s", containerImage)
	name, tag, _ := strings.Cut(containerImage, ":")
	resp, err := e.request(ctx, http.MethodPost, "/images/create",
		url.Values{"fromImage": {name}, "tag": {tag}}, nil, http.StatusOK)
	if err != nil {
		return fmt.Errorf("pull %s: %w", containerImage, err)
	}
	defer resp.Body.Close()
	// The answer is a stream of JSON progress messages; a failure (for
	// example a registry that refuses) comes as one of them, after 200 OK.
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Status      string
			ID          string
			Error       string
			ErrorDetail *struct{ Message string }
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("pull %s: %w", containerImage, context.Cause(ctx))
			}
			return fmt.Errorf("pull %s: reading progress: %w", containerImage, err)
		}
		if m.Error != "" || m.ErrorDetail != nil {
			msg := m.Error
			if msg == "" {
				msg = m.ErrorDetail.Message
			}
			return fmt.Errorf("pull %s: %s", containerImage, msg)
		}
		if m.ID == "" && m.Status != "" { // the per-layer lines are left out
			logf("dynamodblocal: pull: %s", m.Status)
		}
	}
}

// portBinding is one entry of HostConfig.PortBindings and NetworkSettings.Ports.
type portBinding struct {
	HostIP   string `json:"HostIp"`
	HostPort string
}

// create creates the DynamoDB Local container and returns its id.
func (e *dockerEngine) create(ctx context.Context) (string, error) {
	type hostConfig struct {
		PortBindings map[string][]portBinding
		AutoRemove   bool
	}
	body := struct {
		Image        string
		Cmd          []string
		ExposedPorts map[string]struct{}
		Labels       map[string]string
		HostConfig   hostConfig
	}{
		Image: containerImage,
		// The image's entrypoint is java. -sharedDb is left out on purpose,
		// like the jar path, so both behave the same.
		Cmd:          []string{"-jar", "DynamoDBLocal.jar", "-inMemory", "-disableTelemetry"},
		ExposedPorts: map[string]struct{}{containerPort: {}},
		Labels:       map[string]string{containerLabel: "dynamodblocal"},
		HostConfig: hostConfig{
			// HostPort "": the engine picks a free port.
			PortBindings: map[string][]portBinding{containerPort: {{HostIP: e.bindIP}}},
			// Gone once stopped, even when the process dies before Stop
			// and something else stops it.
			AutoRemove: true,
		},
	}
	var out struct{ ID string }
	if err := e.call(ctx, http.MethodPost, "/containers/create", nil, body, &out, http.StatusCreated); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", errors.New("docker engine: POST /containers/create: no container id in the answer")
	}
	return out.ID, nil
}

// containerState is the part of GET /containers/{id}/json read here.
type containerState struct {
	State struct {
		Running  bool
		Status   string
		ExitCode int
	}
	NetworkSettings struct {
		Ports map[string][]portBinding
	}
}

func (e *dockerEngine) inspect(ctx context.Context, id string) (containerState, error) {
	var st containerState
	err := e.call(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, &st, http.StatusOK)
	return st, err
}

// bridgeGateway returns the gateway of the engine's default bridge network,
// the address at which a process in another container reaches the ports the
// engine publishes (testcontainers-go's choice).
func (e *dockerEngine) bridgeGateway(ctx context.Context) (string, error) {
	var nw struct {
		IPAM struct{ Config []struct{ Gateway string } }
	}
	if err := e.call(ctx, http.MethodGet, "/networks/bridge", nil, nil, &nw, http.StatusOK); err != nil {
		return "", err
	}
	for _, c := range nw.IPAM.Config {
		if c.Gateway != "" {
			return c.Gateway, nil
		}
	}
	return "", errors.New("the bridge network has no gateway")
}

// remove stops and deletes the container, under its own timeout. A container
// already gone (AutoRemove, or a second call) is not an error.
func (e *dockerEngine) remove(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), containerStopTimeout)
	defer cancel()
	defer e.http.CloseIdleConnections()
	var errs []error
	err := e.call(ctx, http.MethodPost, "/containers/"+id+"/stop", nil, nil, nil, http.StatusNoContent, http.StatusNotModified)
	if err != nil && !isDockerStatus(err, http.StatusNotFound) {
		errs = append(errs, err)
	}
	err = e.call(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"true"}}, nil, nil, http.StatusNoContent)
	var apiErr *dockerAPIError
	switch {
	case err == nil, isDockerStatus(err, http.StatusNotFound):
	case errors.As(err, &apiErr) && apiErr.status == http.StatusConflict && strings.Contains(apiErr.message, "in progress"):
		// AutoRemove got there first.
	default:
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove container %s: %w", shortID(id), err)
	}
	return nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// waitHTTP waits, within containerStartTimeout, for any HTTP answer at
// endpoint (DynamoDB Local answers GET / with 400 MissingAuthenticationToken).
// It gives up early when the container stops running.
func (e *dockerEngine) waitHTTP(ctx context.Context, id, endpoint string) error {
	wctx, cancel := context.WithTimeout(ctx, containerStartTimeout)
	defer cancel()
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastCheck := time.Now()
	var lastErr error
	for {
		req, err := http.NewRequestWithContext(wctx, http.MethodGet, endpoint+"/", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		lastErr = err
		if time.Since(lastCheck) >= time.Second {
			lastCheck = time.Now()
			st, err := e.inspect(wctx, id)
			switch {
			case isDockerStatus(err, http.StatusNotFound):
				return errors.New("the container exited and was removed before DynamoDB Local answered")
			case err == nil && !st.State.Running:
				return fmt.Errorf("the container is %s (exit code %d) before DynamoDB Local answered", st.State.Status, st.State.ExitCode)
			}
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("DynamoDB Local in the container did not answer at %s within %s (last: %v)",
				endpoint, containerStartTimeout, lastErr)
		case <-tick.C:
		}
	}
}

// startContainer runs DynamoDB Local in a container on the Docker engine at
// host (as found by probeDocker), through the Engine API: pull the image when
// missing, create and start the container, wait for DynamoDB Local to answer.
// A failure after the container was created removes it.
//
// The container has AutoRemove set, so stopping it deletes it, but nothing
// reaps it if the process is killed before Stop: it then runs until stopped
// (its label is containerLabel).
func startContainer(ctx context.Context, host string, logf func(string, ...any)) (*Instance, error) {
	e, err := newDockerEngine(host)
	if err != nil {
		return nil, err
	}
	e.negotiate(ctx)
	if err := e.ensureImage(ctx, logf); err != nil {
		e.http.CloseIdleConnections()
		return nil, err
	}
	if e.endpointHost == "" {
		// A unix socket seen from inside a container: the engine's
		// 127.0.0.1 is not ours.
		gw, err := e.bridgeGateway(ctx)
		if err != nil {
			e.http.CloseIdleConnections()
			return nil, fmt.Errorf("running in a container, and no address to reach the engine's published ports: %w", err)
		}
		e.endpointHost = gw
	}
	id, err := e.create(ctx)
	if err != nil {
		e.http.CloseIdleConnections()
		return nil, fmt.Errorf("create the %s container: %w", containerImage, err)
	}
	fail := func(err error) (*Instance, error) {
		if rmErr := e.remove(id); rmErr != nil {
			err = fmt.Errorf("%w (and %w)", err, rmErr)
		}
		return nil, err
	}
	if err := e.call(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil, http.StatusNoContent, http.StatusNotModified); err != nil {
		return fail(fmt.Errorf("start container %s: %w", shortID(id), err))
	}
	st, err := e.inspect(ctx, id)
	if err != nil {
		return fail(fmt.Errorf("inspect container %s: %w", shortID(id), err))
	}
	var port string
	for _, b := range st.NetworkSettings.Ports[containerPort] {
		if b.HostPort != "" {
			port = b.HostPort
			break
		}
	}
	if port == "" {
		return fail(fmt.Errorf("container %s (%s) publishes no host port for %s", shortID(id), st.State.Status, containerPort))
	}
	endpoint := "http://" + net.JoinHostPort(e.endpointHost, port)
	logf("dynamodblocal: container %s started; waiting for DynamoDB Local at %s", shortID(id), endpoint)
	if err := e.waitHTTP(ctx, id, endpoint); err != nil {
		return fail(err)
	}
	logf("dynamodblocal: DynamoDB Local (container) listening on %s", endpoint)
	return newInstance(endpoint, SourceContainer, func() error { return e.remove(id) })
}
