//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package localproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Supported tells whether Start can run servers here: it needs sh, process
// groups and flock.
const Supported = true

// sysProcAttr puts sh, the server and the watchdog in a new process group,
// so Stop can kill all of them at once, and so a Ctrl-C meant for the Go
// program reaches the server only through the watchdog (the Go program
// dies, the lifeline closes) rather than racing it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup SIGKILLs the process group led by pid. The servers run here keep
// their data in memory and have nothing to flush, so there is no point in a
// gentler signal.
func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// lockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait. flock locks belong to the open file, so they exclude goroutines
// of one process as well as other processes, and the kernel drops them when
// a holder dies, so a crashed installer never blocks the next.
func lockFile(ctx context.Context, path string, logf func(string, ...any)) (unlock func(), locked bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("open lock file: %w", err)
	}
	logged := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, true, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		if !logged {
			logf("waiting for another process installing into %s", path)
			logged = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, false, fmt.Errorf("waiting for install lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
