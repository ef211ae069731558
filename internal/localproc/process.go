package localproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// stopTimeout bounds each step of stopping a server.
const stopTimeout = 5 * time.Second

// outputTail is how much of a server's output is kept for error messages.
const outputTail = 32 << 10

// watchdogScript runs the server (given as "$@") under sh and kills it as
// soon as the Go process that started it goes away, however it goes: Stop,
// return from main, os.Exit, panic, a test timeout or SIGKILL.
//
// How: the Go process keeps the only write end of a pipe ("lifeline") whose
// read end is sh's stdin, moved to fd 3. A background subshell blocks
// reading fd 3; the kernel closes the write end when the Go process exits
// for any reason, the read returns EOF, and the subshell SIGKILLs the
// server. The foreground waits for the server so that sh, the Go side's
// child, exits with the server's status, and then ends the subshell.
//
// Why not the alternatives: SysProcAttr.Pdeathsig is Linux-only and fires
// when the *thread* that forked exits, so it needs a goroutine locked to an
// OS thread for the server's whole life, and it only reaches the direct
// child. A loop polling $PPID reacts only after its sleep and can be fooled
// by PID reuse. Pipe EOF is immediate, portable across Unix and needs
// nothing kept alive but the pipe itself (see launch's runtime.KeepAlive).
//
// Details: a background job in a non-interactive sh gets /dev/null as
// stdin, hence the explicit <&3; the server gets /dev/null and not fd 3 so
// it cannot hold the lifeline; all are in one process group (Setpgid) so
// Stop can still kill everything should the watchdog itself fail.
const watchdogScript = `exec 3<&0 </dev/null
"$@" 3<&- &
spid=$!
( read -r _ <&3; kill -9 "$spid" 2>/dev/null ) &
wpid=$!
exec 3<&-
wait "$spid"
rc=$?
kill "$wpid" 2>/dev/null
exit "$rc"`

// Server describes a server program that Start runs on a free loopback
// port.
type Server struct {
	// What names the service in messages, e.g. "DynamoDB Local".
	What string
	// Program is the executable, found on PATH unless it contains a slash.
	Program string
	// Args returns the program's arguments for a port.
	Args func(port int) []string
	// Env returns variables added to the environment for a port; may be nil.
	Env func(port int) []string
	// Dir is the working directory. Default: os.TempDir(), never the
	// caller's working directory.
	Dir string
	// Hint is added to the error when the program exits before it answers,
	// e.g. "it needs Java 17+".
	Hint string
	// Ready reports whether the server answers at endpoint
	// (http://127.0.0.1:<port>); see ProbeHTTP.
	Ready func(endpoint string) bool
	// ReadyTimeout bounds the wait for Ready after each launch. Default: 30s.
	ReadyTimeout time.Duration
	// PortTaken reports whether the last output of a program that exited
	// tells that its port was taken; such a start is retried on another
	// port. May be nil.
	PortTaken func(output string) bool
	// Attempts is how many ports are tried. Default: 3.
	Attempts int
	// Port, when set, is the one port the server gets: no other is tried. Default:
	// 0, a free port (FreePort), tried again on another when taken.
	Port int
	// Logf receives progress lines. Default: discard.
	Logf func(format string, args ...any)
}

// Process is a server that Start runs.
type Process struct {
	// Endpoint is http://127.0.0.1:<Port>.
	Endpoint string
	// Port is the loopback port the server listens on.
	Port int

	cmd      *exec.Cmd
	lifeline *os.File // write end; closing it (or our exit) kills the server
	out      *TailBuffer
	done     chan struct{} // closed when sh has exited and output is drained

	stopOnce sync.Once
	stopErr  error
}

// Start runs s on a free loopback port and returns once s.Ready accepts it.
// ctx bounds only the start: the server keeps running after ctx ends, until
// Stop is called or the calling process exits, whichever comes first (see
// watchdogScript). It is Unix-only (Supported).
func Start(ctx context.Context, s Server) (*Process, error) {
	if !Supported {
		return nil, errors.New("running " + s.Program + " as a supervised child process is supported only on Unix systems")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("sh not found on PATH: %w", err)
	}
	program, err := exec.LookPath(s.Program)
	if err != nil {
		return nil, fmt.Errorf("%s not found on PATH: %w", s.Program, err)
	}
	logf := Logf(s.Logf, "")
	attempts := s.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	if s.Port != 0 {
		attempts = 1
	}
	for attempt := 1; ; attempt++ {
		port := s.Port
		if port == 0 {
			if port, err = FreePort(); err != nil {
				return nil, err
			}
		}
		p, err := launch(ctx, sh, program, s, port)
		if err == nil {
			logf("%s listening on %s (sh pid %d)", s.What, p.Endpoint, p.cmd.Process.Pid)
			return p, nil
		}
		if !errors.Is(err, ErrPortTaken) || attempt == attempts {
			return nil, err
		}
		logf("port %d was taken, retrying", port)
	}
}

// launch starts the program on port under watchdogScript and waits until it
// answers.
func launch(ctx context.Context, sh, program string, s Server, port int) (*Process, error) {
	r, w, err := os.Pipe() // both ends close-on-exec: no other child inherits w
	if err != nil {
		return nil, err
	}
	args := append([]string{"-c", watchdogScript, "localproc-" + s.Program, program}, s.Args(port)...)
	// Not CommandContext: the server must keep running after the start ctx ends.
	cmd := exec.Command(sh, args...)
	p := &Process{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		Port:     port,
		cmd:      cmd,
		lifeline: w,
		out:      NewTailBuffer(outputTail),
		done:     make(chan struct{}),
	}
	cmd.Stdin = r
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.Dir = s.Dir
	if cmd.Dir == "" {
		cmd.Dir = os.TempDir()
	}
	if s.Env != nil {
		cmd.Env = append(os.Environ(), s.Env(port)...)
	}
	cmd.SysProcAttr = sysProcAttr()
	// Don't let a grandchild that somehow kept stdout open stall Wait.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", s.Program, err)
	}
	r.Close()
	go func() {
		_ = cmd.Wait()
		// The lifeline must stay reachable while the server runs: if
		// the caller drops the Process without Stop, the os.File
		// finalizer would otherwise close it at the next GC and kill
		// the server mid-test.
		runtime.KeepAlive(w)
		close(p.done)
	}()
	if err := p.waitReady(ctx, s); err != nil {
		// Not Stop: after a port clash the port is someone else's and
		// stays open.
		_ = p.stop()
		return nil, err
	}
	return p, nil
}

// waitReady polls s.Ready until it accepts, the program exits, ctx ends or
// s.ReadyTimeout passes.
func (p *Process) waitReady(ctx context.Context, s Server) error {
	timeout := s.ReadyTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.Ready(p.Endpoint) {
			return nil
		}
		select {
		case <-p.done:
			tail := p.out.LastLines(25)
			if s.PortTaken != nil && s.PortTaken(tail) {
				return fmt.Errorf("%s: %w\n%s", s.Program, ErrPortTaken, tail)
			}
			hint := ""
			if s.Hint != "" {
				hint = "; " + s.Hint
			}
			return fmt.Errorf("%s exited before %s answered (%v%s). Last output:\n%s",
				s.Program, s.What, p.cmd.ProcessState, hint, tail)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s on %s: %w", s.What, p.Endpoint, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("%s did not answer on %s within %s. Last output:\n%s",
				s.What, p.Endpoint, timeout, p.out.LastLines(25))
		case <-tick.C:
		}
	}
}

// Pid is the process id of the sh that supervises the server; it leads the
// server's process group.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the server has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// LastLines returns up to n last lines of the server's output, indented for
// error messages.
func (p *Process) LastLines(n int) string { return p.out.LastLines(n) }

// Stop closes the lifeline, which makes the watchdog kill the server, waits
// for sh to exit (SIGKILLing the whole process group should that not happen
// in time) and then for the port to close. It is idempotent and safe for
// concurrent use; later calls return the first call's result.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		p.stopErr = p.stop()
		if p.stopErr == nil {
			p.stopErr = WaitPortClosed(p.Port, stopTimeout)
		}
	})
	return p.stopErr
}

func (p *Process) stop() error {
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
		return fmt.Errorf("%s (process group %d) did not exit after SIGKILL", p.cmd.Path, p.cmd.Process.Pid)
	}
}
