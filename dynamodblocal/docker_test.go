package dynamodblocal

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeDocker is a Docker engine that implements exactly the Engine API calls
// startContainer makes, records them, and runs each started "container" as an
// HTTP server on loopback that answers everything with 400, as DynamoDB Local
// answers GET /.
type fakeDocker struct {
	t    *testing.T
	host string // a DOCKER_HOST value naming it

	// Set before use.
	apiVersion, minAPIVersion string // GET /version; default 1.52 and 1.44 (Docker 29)
	hasImage                  bool
	pullStream                []string // JSON lines of POST /images/create; default: a good pull
	pullHang                  bool     // after the first line, hang until the client goes
	createStatus              int      // when not 0, POST /containers/create fails with it
	createMessage             string
	silent                    bool // a started container's port accepts but never answers
	exits                     bool // a started container is reported exited at once

	mu         sync.Mutex
	calls      []string
	created    []map[string]any // bodies of POST /containers/create
	containers map[string]*fakeContainer
	nextID     int
}

type fakeContainer struct {
	autoRemove bool
	running    bool
	port       string
	close      func()
}

// newFakeDocker serves a fake engine on a unix socket in t.TempDir().
func newFakeDocker(t *testing.T) *fakeDocker {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	if len(sock) > 100 {
		t.Fatalf("socket path %s too long for a unix socket; shorten the test's name", sock)
	}
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	f := &fakeDocker{t: t, host: "unix://" + sock}
	f.serve(l, nil)
	return f
}

// serve runs f on l (with TLS when cfg is not nil) until the test ends.
func (f *fakeDocker) serve(l net.Listener, cfg *tls.Config) {
	f.containers = map[string]*fakeContainer{}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the probe's bare TLS connections
	srv.Listener.Close()
	srv.Listener = l
	if cfg != nil {
		srv.TLS = cfg
		srv.StartTLS()
	} else {
		srv.Start()
	}
	f.t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.containers {
			c.close()
		}
	})
}

// Calls returns the calls so far, as "METHOD /path?query", with the repeated
// GET /containers/{id}/json of a longer wait dropped.
func (f *fakeDocker) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if len(out) > 0 && out[len(out)-1] == c && strings.HasPrefix(c, "GET ") {
			continue
		}
		out = append(out, c)
	}
	return out
}

func (f *fakeDocker) Containers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.containers)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeMessage(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}

func (f *fakeDocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.RequestURI())
	f.mu.Unlock()
	apiVersion, minAPIVersion := f.apiVersion, f.minAPIVersion
	if apiVersion == "" {
		apiVersion, minAPIVersion = "1.52", "1.44"
	}

	switch r.Method + " " + r.URL.Path {
	case "GET /_ping":
		_, _ = w.Write([]byte("OK"))
		return
	case "GET /version":
		writeJSON(w, http.StatusOK, map[string]string{"ApiVersion": apiVersion, "MinAPIVersion": minAPIVersion, "Version": "fake"})
		return
	}
	// The client asks for the engine's version, or the newest it knows.
	want := apiVersion
	if apiVersionLess(dockerAPIMax, want) {
		want = dockerAPIMax
		if apiVersionLess(want, minAPIVersion) {
			want = minAPIVersion
		}
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/v"+want+"/")
	if !ok {
		f.t.Errorf("fake docker: %s %s: not under /v%s/", r.Method, r.URL.Path, want)
		writeMessage(w, http.StatusBadRequest, "unexpected API version")
		return
	}
	parts := strings.Split(path, "/")
	switch {
	case r.Method == http.MethodGet && path == "images/"+containerImage+"/json":
		f.mu.Lock()
		has := f.hasImage
		f.mu.Unlock()
		if !has {
			writeMessage(w, http.StatusNotFound, "No such image: "+containerImage)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"Id": "sha256:fake", "RepoTags": []string{containerImage}})

	case r.Method == http.MethodPost && path == "images/create":
		f.pull(w, r)

	case r.Method == http.MethodPost && path == "containers/create":
		f.create(w, r)

	case r.Method == http.MethodGet && path == "networks/bridge":
		writeJSON(w, http.StatusOK, map[string]any{"Name": "bridge",
			"IPAM": map[string]any{"Config": []map[string]string{{"Subnet": "172.17.0.0/16", "Gateway": "127.0.0.1"}}}})

	case len(parts) == 3 && parts[0] == "containers" && r.Method == http.MethodPost && parts[2] == "start":
		f.start(w, parts[1])

	case len(parts) == 3 && parts[0] == "containers" && r.Method == http.MethodGet && parts[2] == "json":
		f.mu.Lock()
		c := f.containers[parts[1]]
		f.mu.Unlock()
		if c == nil {
			writeMessage(w, http.StatusNotFound, "No such container: "+parts[1])
			return
		}
		st := map[string]any{"Running": c.running && !f.exits, "Status": "running", "ExitCode": 0}
		if f.exits {
			st["Status"], st["ExitCode"] = "exited", 1
		}
		var ports []map[string]string
		if c.port != "" {
			ports = []map[string]string{{"HostIp": "0.0.0.0", "HostPort": c.port}, {"HostIp": "::", "HostPort": c.port}}
		}
		writeJSON(w, http.StatusOK, map[string]any{"Id": parts[1], "State": st,
			"NetworkSettings": map[string]any{"Ports": map[string]any{containerPort: ports}}})

	case len(parts) == 3 && parts[0] == "containers" && r.Method == http.MethodPost && parts[2] == "stop":
		f.mu.Lock()
		defer f.mu.Unlock()
		c := f.containers[parts[1]]
		if c == nil {
			writeMessage(w, http.StatusNotFound, "No such container: "+parts[1])
			return
		}
		c.close()
		c.running = false
		if c.autoRemove {
			delete(f.containers, parts[1])
		}
		w.WriteHeader(http.StatusNoContent)

	case len(parts) == 2 && parts[0] == "containers" && r.Method == http.MethodDelete:
		if r.URL.Query().Get("force") != "true" {
			f.t.Errorf("fake docker: DELETE without force=true")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		c := f.containers[parts[1]]
		if c == nil {
			writeMessage(w, http.StatusNotFound, "No such container: "+parts[1])
			return
		}
		c.close()
		delete(f.containers, parts[1])
		w.WriteHeader(http.StatusNoContent)

	default:
		f.t.Errorf("fake docker: unexpected call %s %s", r.Method, r.URL)
		writeMessage(w, http.StatusNotFound, "page not found")
	}
}

func (f *fakeDocker) pull(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query(); q.Get("fromImage") != "amazon/dynamodb-local" || q.Get("tag") != "3.3.0" {
		f.t.Errorf("fake docker: pull of %v", q)
	}
	lines := f.pullStream
	if lines == nil {
		lines = []string{
			`{"status":"Pulling from amazon/dynamodb-local","id":"3.3.0"}`,
			`{"status":"Downloading","progressDetail":{"current":1024,"total":4096},"progress":"[=>   ]","id":"a1b2c3"}`,
			`{"status":"Pull complete","progressDetail":{},"id":"a1b2c3"}`,
			`{"status":"Digest: sha256:0123456789abcdef"}`,
			`{"status":"Status: Downloaded newer image for amazon/dynamodb-local:3.3.0"}`,
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	for i, line := range lines {
		_, _ = fmt.Fprintln(w, line)
		w.(http.Flusher).Flush()
		if i == 0 && f.pullHang {
			<-r.Context().Done() // the client went away
			return
		}
	}
	if f.pullStream == nil {
		f.mu.Lock()
		f.hasImage = true
		f.mu.Unlock()
	}
}

func (f *fakeDocker) create(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeMessage(w, http.StatusBadRequest, err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, body)
	if f.createStatus != 0 {
		writeMessage(w, f.createStatus, f.createMessage)
		return
	}
	if !f.hasImage {
		writeMessage(w, http.StatusNotFound, "No such image: "+containerImage)
		return
	}
	f.nextID++
	id := fmt.Sprintf("%064x", f.nextID)
	hc, _ := body["HostConfig"].(map[string]any)
	auto, _ := hc["AutoRemove"].(bool)
	f.containers[id] = &fakeContainer{autoRemove: auto, close: func() {}}
	writeJSON(w, http.StatusCreated, map[string]any{"Id": id, "Warnings": []string{}})
}

func (f *fakeDocker) start(w http.ResponseWriter, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		writeMessage(w, http.StatusNotFound, "No such container: "+id)
		return
	}
	if f.silent {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(f.t, err)
		done := make(chan struct{})
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				go func() { <-done; conn.Close() }() // hold it, say nothing
			}
		}()
		c.port = portOf(l.Addr().String())
		c.close = sync.OnceFunc(func() { l.Close(); close(done) })
	} else {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#MissingAuthenticationToken","Message":"Request must contain either a valid (registered) AWS access key ID or X.509 certificate."}`))
		}))
		c.port = portOf(srv.Listener.Addr().String())
		c.close = sync.OnceFunc(func() { srv.CloseClientConnections(); srv.Close() })
	}
	c.running = true
	w.WriteHeader(http.StatusNoContent)
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// containerEnv points Start at f alone and makes this process look like it
// runs on the host (this test may itself run in a container).
func containerEnv(t *testing.T, f *fakeDocker) {
	t.Setenv(EnvEndpoint, "")
	t.Setenv("DOCKER_HOST", f.host)
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	saved := inContainer
	inContainer = func() bool { return false }
	t.Cleanup(func() { inContainer = saved })
}

func shortTimeout(t *testing.T, d time.Duration) {
	saved := containerStartTimeout
	containerStartTimeout = d
	t.Cleanup(func() { containerStartTimeout = saved })
}

// requireDynamoDBAnswers checks that endpoint answers GET / with 400.
func requireDynamoDBAnswers(t *testing.T, endpoint string) {
	t.Helper()
	resp, err := http.Get(endpoint + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestContainerStart starts DynamoDB Local on the fake engine through Start:
// the image pulled only when missing, the container created as intended, its
// endpoint returned and serving, and Stop stopping and deleting it.
func TestContainerStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, tc := range []struct {
		name        string
		hasImage    bool
		inContainer bool
	}{
		{"pull", false, false},
		{"present", true, false},
		{"in container", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeDocker(t)
			f.hasImage = tc.hasImage
			containerEnv(t, f)
			inContainer = func() bool { return tc.inContainer }

			inst, err := Start(ctx, Options{Logf: t.Logf})
			require.NoError(t, err)
			defer inst.Stop()
			require.Equal(t, SourceContainer, inst.Source)
			require.NotNil(t, inst.Client)

			f.mu.Lock()
			require.Len(t, f.containers, 1)
			var id string
			var c *fakeContainer
			for id, c = range f.containers {
			}
			require.Len(t, f.created, 1)
			body := f.created[0]
			f.mu.Unlock()
			require.Equal(t, "http://127.0.0.1:"+c.port, inst.Endpoint)
			requireDynamoDBAnswers(t, inst.Endpoint)

			require.Equal(t, containerImage, body["Image"])
			require.Equal(t, []any{"-jar", "DynamoDBLocal.jar", "-inMemory", "-disableTelemetry"}, body["Cmd"])
			require.Equal(t, map[string]any{containerPort: map[string]any{}}, body["ExposedPorts"])
			require.Equal(t, map[string]any{containerLabel: "dynamodblocal"}, body["Labels"])
			bindIP := "127.0.0.1"
			if tc.inContainer {
				bindIP = "" // reached through the bridge's gateway
			}
			require.Equal(t, map[string]any{
				"AutoRemove":   true,
				"PortBindings": map[string]any{containerPort: []any{map[string]any{"HostIp": bindIP, "HostPort": ""}}},
			}, body["HostConfig"])

			v := "/v1.44" // the fake is a Docker 29: 1.52, at least 1.44
			want := []string{
				"GET /_ping",
				"GET /version",
				"GET " + v + "/images/" + containerImage + "/json",
			}
			if !tc.hasImage {
				want = append(want, "POST "+v+"/images/create?fromImage=amazon%2Fdynamodb-local&tag=3.3.0")
			}
			if tc.inContainer {
				want = append(want, "GET "+v+"/networks/bridge")
			}
			want = append(want,
				"POST "+v+"/containers/create",
				"POST "+v+"/containers/"+id+"/start",
				"GET "+v+"/containers/"+id+"/json",
			)
			require.Equal(t, want, f.Calls())

			require.NoError(t, inst.Stop())
			want = append(want,
				"POST "+v+"/containers/"+id+"/stop",
				"DELETE "+v+"/containers/"+id+"?force=true", // 404 after AutoRemove: not an error
			)
			require.Equal(t, want, f.Calls())
			require.Zero(t, f.Containers())
			requireRefused(t, inst.Endpoint)
			require.NoError(t, inst.Stop())
			require.Equal(t, want, f.Calls(), "a second Stop calls nothing")
		})
	}
}

// TestContainerPullError: a pull whose stream ends in an error message (after
// 200 OK, as the engine sends it) fails with that message, and nothing is
// created.
func TestContainerPullError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, last := range map[string]string{
		"error and errorDetail": `{"errorDetail":{"message":"toomanyrequests: You have reached your pull rate limit."},"error":"toomanyrequests: You have reached your pull rate limit."}`,
		"errorDetail only":      `{"errorDetail":{"message":"toomanyrequests: You have reached your pull rate limit."}}`,
		"error only":            `{"error":"toomanyrequests: You have reached your pull rate limit."}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeDocker(t)
			f.pullStream = []string{`{"status":"Pulling from amazon/dynamodb-local","id":"3.3.0"}`, last}
			containerEnv(t, f)
			_, err := startContainer(ctx, f.host, t.Logf)
			require.Error(t, err)
			t.Log(err)
			require.ErrorContains(t, err, "pull "+containerImage+": toomanyrequests: You have reached your pull rate limit.")
			for _, c := range f.Calls() {
				require.NotContains(t, c, "/containers/")
			}
		})
	}
}

// TestContainerCreateFails: an engine that refuses the container yields an
// error that names the step, the status and the engine's message.
func TestContainerCreateFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		status int
		msg    string
	}{
		{http.StatusConflict, `Conflict. The container name "/dynamodb" is already in use by container "abc".`},
		{http.StatusInternalServerError, "driver failed programming external connectivity on endpoint: port is already allocated"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			f := newFakeDocker(t)
			f.hasImage = true
			f.createStatus, f.createMessage = tc.status, tc.msg
			containerEnv(t, f)
			_, err := startContainer(ctx, f.host, t.Logf)
			require.Error(t, err)
			t.Log(err)
			require.EqualError(t, err, fmt.Sprintf("create the %s container: docker engine: POST /containers/create: %d %s: %s",
				containerImage, tc.status, http.StatusText(tc.status), tc.msg))
			require.True(t, isDockerStatus(err, tc.status))
			for _, c := range f.Calls() {
				require.NotContains(t, c, "/start")
			}
		})
	}
}

// TestContainerNeverAnswers: a container whose port never answers is given up
// after containerStartTimeout, and removed; one that exits is given up at
// once.
func TestContainerNeverAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("silent", func(t *testing.T) {
		f := newFakeDocker(t)
		f.hasImage, f.silent = true, true
		containerEnv(t, f)
		shortTimeout(t, 1500*time.Millisecond)
		began := time.Now()
		_, err := startContainer(ctx, f.host, t.Logf)
		require.Error(t, err)
		t.Log(err)
		require.ErrorContains(t, err, "did not answer at http://127.0.0.1:")
		require.ErrorContains(t, err, "within 1.5s")
		require.Less(t, time.Since(began), 10*time.Second)
		require.Zero(t, f.Containers(), "the container must be removed")
		calls := f.Calls()
		require.Contains(t, calls[len(calls)-2], "/stop")
		require.Contains(t, calls[len(calls)-1], "DELETE ")
	})

	t.Run("exits", func(t *testing.T) {
		f := newFakeDocker(t)
		f.hasImage, f.silent, f.exits = true, true, true
		containerEnv(t, f)
		began := time.Now()
		_, err := startContainer(ctx, f.host, t.Logf) // the 90 s timeout
		require.Error(t, err)
		t.Log(err)
		require.ErrorContains(t, err, "the container is exited (exit code 1) before DynamoDB Local answered")
		require.Less(t, time.Since(began), 10*time.Second)
		require.Zero(t, f.Containers(), "the container must be removed")
	})
}

// TestContainerPullCancelled: cancelling Start's ctx during the pull ends
// Start at once with the ctx's error (no java), and nothing is created.
func TestContainerPullCancelled(t *testing.T) {
	f := newFakeDocker(t)
	f.pullHang = true
	containerEnv(t, f)
	f.pullStream = []string{`{"status":"Pulling from amazon/dynamodb-local"}`} // logged by the client
	t.Setenv("PATH", t.TempDir())                                              // were it to go on to java, it would fail loudly
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logf := func(format string, args ...any) {
		t.Logf(format, args...)
		if strings.HasPrefix(format, "dynamodblocal: pull: ") {
			cancel() // the client is reading the progress stream
		}
	}
	began := time.Now()
	_, err := Start(ctx, Options{Logf: logf})
	require.Error(t, err)
	t.Log(err)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "pull "+containerImage+": context canceled")
	require.NotContains(t, err.Error(), "java")
	require.Less(t, time.Since(began), 10*time.Second)
	for _, c := range f.Calls() {
		require.NotContains(t, c, "/containers/")
	}
}

// TestContainerTLS runs the start against a fake engine on tcp with TLS that
// requires a client certificate (as docker:dind does), with the certificates
// in DOCKER_CERT_PATH: the port is bound on all addresses and reached at the
// DOCKER_HOST's hostname. Without usable certificates it fails clearly.
func TestContainerTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	certs := t.TempDir()
	serverCfg := writeDockerCerts(t, certs)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeDocker{t: t, host: "tcp://" + l.Addr().String(), apiVersion: "1.41", minAPIVersion: "1.12"}
	f.serve(l, serverCfg)
	containerEnv(t, f)
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	t.Setenv("DOCKER_CERT_PATH", certs)

	inst, err := Start(ctx, Options{Logf: t.Logf})
	require.NoError(t, err)
	defer inst.Stop()
	f.mu.Lock()
	var c *fakeContainer
	for _, c = range f.containers {
	}
	hc := f.created[0]["HostConfig"].(map[string]any)
	f.mu.Unlock()
	require.Equal(t, "http://127.0.0.1:"+c.port, inst.Endpoint)
	require.Equal(t, map[string]any{containerPort: []any{map[string]any{"HostIp": "", "HostPort": ""}}}, hc["PortBindings"])
	requireDynamoDBAnswers(t, inst.Endpoint)
	require.Contains(t, f.Calls(), "POST /v1.41/containers/create")
	require.NoError(t, inst.Stop())
	require.Zero(t, f.Containers())

	t.Run("https without DOCKER_TLS_VERIFY", func(t *testing.T) {
		// Encrypted with the client certificate, the engine not verified
		// (as docker --tls): the CA is not needed.
		dir := t.TempDir()
		for _, name := range []string{"cert.pem", "key.pem"} {
			b, err := os.ReadFile(filepath.Join(certs, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
		}
		t.Setenv("DOCKER_CERT_PATH", dir)
		t.Setenv("DOCKER_TLS_VERIFY", "")
		inst, err := startContainer(ctx, "https://"+strings.TrimPrefix(f.host, "tcp://"), t.Logf)
		require.NoError(t, err)
		requireDynamoDBAnswers(t, inst.Endpoint)
		require.NoError(t, inst.Stop())
		require.Zero(t, f.Containers())
	})

	t.Run("no client certificate", func(t *testing.T) {
		dir := t.TempDir()
		ca, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600))
		t.Setenv("DOCKER_CERT_PATH", dir)
		_, err = startContainer(ctx, f.host, t.Logf)
		require.Error(t, err)
		t.Log(err)
		require.ErrorContains(t, err, "certificate")
	})

	t.Run("cert.pem without key.pem", func(t *testing.T) {
		dir := t.TempDir()
		cert, err := os.ReadFile(filepath.Join(certs, "cert.pem"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cert.pem"), cert, 0o600))
		t.Setenv("DOCKER_CERT_PATH", dir)
		_, err = startContainer(ctx, f.host, t.Logf)
		require.Error(t, err)
		t.Log(err)
		require.ErrorContains(t, err, "DOCKER_CERT_PATH "+dir)
		require.ErrorContains(t, err, EnvEndpoint)
	})
}

// writeDockerCerts writes ca.pem, cert.pem and key.pem (a client's) into dir
// and returns the TLS config of an engine on 127.0.0.1 that requires a client
// certificate signed by that CA.
func writeDockerCerts(t *testing.T, dir string) *tls.Config {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	serial := int64(0)
	issue := func(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) *x509.Certificate {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		require.NoError(t, err)
		cert, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return cert
	}
	writePEM := func(name, typ string, der []byte) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	}

	caKey := newKey()
	ca := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "fake docker CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, caKey, nil, nil)
	serverKey := newKey()
	server := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "docker"}, DNSNames: []string{"docker", "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}, serverKey, ca, caKey)
	clientKey := newKey()
	client := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature},
		clientKey, ca, caKey)

	writePEM("ca.pem", "CERTIFICATE", ca.Raw)
	writePEM("cert.pem", "CERTIFICATE", client.Raw)
	keyDER, err := x509.MarshalECPrivateKey(clientKey)
	require.NoError(t, err)
	writePEM("key.pem", "EC PRIVATE KEY", keyDER)

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{server.Raw, ca.Raw}, PrivateKey: serverKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
}

// TestUnsupportedDockerHosts: ssh:// and npipe:// hosts are refused by the
// probe with an error that names the way out, so Start goes on to java.
func TestUnsupportedDockerHosts(t *testing.T) {
	for _, host := range []string{"ssh://me@build-box", "npipe:////./pipe/docker_engine"} {
		t.Setenv("DOCKER_HOST", host)
		_, err := probeDocker(context.Background(), dockerHosts(), dockerProbeTimeout)
		require.Error(t, err)
		t.Log(err)
		scheme, _, _ := strings.Cut(host, ":")
		require.ErrorContains(t, err, scheme+":// Docker hosts are not supported")
		require.ErrorContains(t, err, EnvEndpoint)
		_, err = newDockerEngine(host)
		require.ErrorContains(t, err, "not supported")
	}
}

// TestNegotiateAPIVersion: the client takes the engine's API version up to
// dockerAPIMax, the engine's minimum when that is newer, and 1.41 when the
// engine does not say.
func TestNegotiateAPIVersion(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"ApiVersion":"1.41","MinAPIVersion":"1.12"}`, "1.41"}, // Docker 20.10
		{`{"ApiVersion":"1.43","MinAPIVersion":"1.12"}`, "1.43"},
		{`{"ApiVersion":"1.47","MinAPIVersion":"1.24"}`, "1.44"}, // Docker 27
		{`{"ApiVersion":"1.52","MinAPIVersion":"1.44"}`, "1.44"}, // Docker 29
		{`{"ApiVersion":"1.60","MinAPIVersion":"1.46"}`, "1.46"},
		{`{"ApiVersion":"one"}`, "1.41"},
		{`not json`, "1.41"},
		{"", "1.41"}, // 404
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.body == "" || r.URL.Path != "/version" {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write([]byte(tc.body))
		}))
		u, err := url.Parse(srv.URL)
		require.NoError(t, err)
		e, err := newDockerEngine("tcp://" + u.Host)
		require.NoError(t, err)
		e.negotiate(context.Background())
		require.Equal(t, "http://"+u.Host+"/v"+tc.want, e.base, tc.body)
		srv.Close()
	}
}

// TestDockerErrors: the errors that Stop ignores are recognised.
func TestDockerErrors(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &dockerAPIError{call: "DELETE /containers/x", status: 404, message: "No such container: x"})
	require.True(t, isDockerStatus(err, 404))
	require.False(t, isDockerStatus(err, 409))
	require.False(t, isDockerStatus(errors.New("other"), 404))
	require.EqualError(t, err, "wrapped: docker engine: DELETE /containers/x: 404 Not Found: No such container: x")
}
