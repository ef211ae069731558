package localproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roleEnv makes the test binary play a part in TestHelperProcess: "server"
// (a tiny HTTP server on the port in portEnv) or "parent-exit" /
// "parent-kill" (a program that starts that server with Start and then exits
// without Stop or waits to be SIGKILLed).
const (
	roleEnv = "LOCALPROC_TEST_ROLE"
	portEnv = "LOCALPROC_TEST_PORT"
)

// testServer runs this test binary as a server.
func testServer() Server {
	return Server{
		What:    "test server",
		Program: os.Args[0],
		Args:    func(int) []string { return []string{"-test.run=^TestHelperProcess$"} },
		Env: func(port int) []string {
			return []string{roleEnv + "=server", portEnv + "=" + strconv.Itoa(port)}
		},
		Ready: func(endpoint string) bool {
			return ProbeHTTP(endpoint, func(r *http.Response) bool { return r.Header.Get("X-Localproc-Test") == "yes" })
		},
	}
}

func TestStartAndStop(t *testing.T) {
	if !Supported {
		t.Skip("supervised child processes are Unix-only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, testServer())
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:"+strconv.Itoa(p.Port), p.Endpoint)
	assert.True(t, testServer().Ready(p.Endpoint))

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { assert.NoError(t, p.Stop()) })
	}
	wg.Wait()
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the server exited")
	}
	requireClosed(t, p.Port)
}

// TestServerDiesWithParent starts a server from a child process that then
// exits without Stop (os.Exit) or is SIGKILLed: the server must go with it.
func TestServerDiesWithParent(t *testing.T) {
	if !Supported {
		t.Skip("supervised child processes are Unix-only")
	}
	for _, mode := range []string{"exit", "kill"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			parent := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$")
			parent.Env = append(os.Environ(), roleEnv+"=parent-"+mode)
			out, err := parent.StdoutPipe()
			require.NoError(t, err)
			parent.Stderr = os.Stderr
			require.NoError(t, parent.Start())
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err)
			port, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "PORT ")))
			require.NoError(t, err, "parent printed %q", line)
			if mode == "kill" {
				require.NoError(t, parent.Process.Kill()) // SIGKILL: no Go code runs
			}
			_, _ = io.Copy(io.Discard, out)
			_ = parent.Wait()
			require.Eventually(t, func() bool { return !accepts(port) }, 10*time.Second, 50*time.Millisecond,
				"the server on port %d outlived its parent", port)
		})
	}
}

// TestStartRetriesTakenPort runs a program that fails like a port clash: the
// start must be retried on other ports, then fail with ErrPortTaken, and a
// program that fails otherwise must show its output and the hint.
func TestStartRetriesTakenPort(t *testing.T) {
	if !Supported {
		t.Skip("supervised child processes are Unix-only")
	}
	ctx := context.Background()
	var retries atomic.Int32
	s := Server{
		What:      "clash",
		Program:   "sh",
		Args:      func(int) []string { return []string{"-c", "echo 'listen EADDRINUSE' >&2; exit 1"} },
		Hint:      "it needs a free port",
		Ready:     func(string) bool { return false },
		PortTaken: func(out string) bool { return strings.Contains(out, "EADDRINUSE") },
		Attempts:  3,
		Logf: func(format string, args ...any) {
			if strings.Contains(fmt.Sprintf(format, args...), "was taken, retrying") {
				retries.Add(1)
			}
		},
	}
	_, err := Start(ctx, s)
	require.ErrorIs(t, err, ErrPortTaken)
	assert.Equal(t, int32(2), retries.Load())

	s.PortTaken = nil
	_, err = Start(ctx, s)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrPortTaken)
	assert.ErrorContains(t, err, "listen EADDRINUSE")
	assert.ErrorContains(t, err, "it needs a free port")
}

// TestEnsureInstallsOnce runs Ensure from several goroutines on an empty
// cache (the lock must let exactly one of them fill it), then reuses the
// install, then redoes it once Check rejects it.
func TestEnsureInstallsOnce(t *testing.T) {
	if !Supported {
		t.Skip("flock is Unix-only")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("Ensure looks for npm first; install Node.js with npm: %v", err)
	}
	ctx := context.Background()
	cacheDir := filepath.Join(t.TempDir(), "cache")
	var fills atomic.Int32
	in := Install{
		CacheDir: cacheDir,
		Name:     "pkg-1.0.0",
		Marker:   ".installed",
		Package:  "pkg@1.0.0",
		Fill: func(ctx context.Context, _ NPM, dir string) (string, error) {
			fills.Add(1)
			time.Sleep(100 * time.Millisecond) // let the others queue up on the lock
			return "v1", os.WriteFile(filepath.Join(dir, "payload"), []byte("x"), 0o644)
		},
		Check: func(dir, marker string) error {
			if _, err := os.Stat(filepath.Join(dir, "payload")); err != nil || marker != "v1" {
				return errors.New("incomplete")
			}
			return nil
		},
		Logf: t.Logf,
	}
	const n = 4
	dirs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			dir, marker, err := in.Ensure(ctx)
			assert.NoError(t, err)
			assert.Equal(t, "v1", marker)
			dirs[i] = dir
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), fills.Load(), "exactly one installer must fill the cache")
	for _, d := range dirs {
		assert.Equal(t, filepath.Join(cacheDir, "pkg-1.0.0"), d)
	}
	entries, err := os.ReadDir(cacheDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{".lock", "pkg-1.0.0"}, names, "no temp dirs may be left behind")

	_, _, err = in.Ensure(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(1), fills.Load(), "a finished install must be reused")

	require.NoError(t, os.Remove(filepath.Join(dirs[0], "payload")))
	_, _, err = in.Ensure(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(2), fills.Load(), "a broken install must be redone")
}

func TestTailBuffer(t *testing.T) {
	b := NewTailBuffer(10)
	assert.Equal(t, "    (no output)", b.LastLines(3))
	_, _ = io.WriteString(b, "one\ntwo\nthree\nfour\n")
	assert.Equal(t, "    hree\n    four", b.LastLines(5), "only the last 10 bytes are kept")
	assert.Equal(t, "    four", b.LastLines(1))
}

func TestEndpointFromEnv(t *testing.T) {
	t.Setenv("LOCALPROC_TEST_ENDPOINT", "")
	_, ok := EndpointFromEnv("LOCALPROC_TEST_ENDPOINT")
	assert.False(t, ok)
	t.Setenv("LOCALPROC_TEST_ENDPOINT", " localhost:8000 ")
	ep, ok := EndpointFromEnv("LOCALPROC_TEST_ENDPOINT")
	assert.True(t, ok)
	assert.Equal(t, "http://localhost:8000", ep)
	t.Setenv("LOCALPROC_TEST_ENDPOINT", "https://example.test")
	ep, _ = EndpointFromEnv("LOCALPROC_TEST_ENDPOINT")
	assert.Equal(t, "https://example.test", ep)
}

func accepts(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func requireClosed(t *testing.T, port int) {
	t.Helper()
	require.False(t, accepts(port), "port %d still accepts connections", port)
}

// TestHelperProcess is not a test: it plays the part named by roleEnv.
func TestHelperProcess(t *testing.T) {
	switch role := os.Getenv(roleEnv); role {
	case "":
		return
	case "server":
		l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv(portEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Localproc-Test", "yes")
		}))
		os.Exit(3)
	case "parent-exit", "parent-kill":
		// Report the port (or the failure) on stdout, then go without Stop.
		if p, err := Start(context.Background(), testServer()); err != nil {
			fmt.Printf("ERROR %v\n", err)
		} else {
			fmt.Printf("PORT %d\n", p.Port)
		}
		if role == "parent-kill" {
			<-time.After(time.Minute) // SIGKILLed long before
		}
		os.Exit(0)
	}
}
