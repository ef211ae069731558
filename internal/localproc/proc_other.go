//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package localproc

import (
	"context"
	"errors"
	"syscall"
)

// Supported: elsewhere (Windows, Plan 9, ...) the watchdog script has no sh
// to run in; use the services' endpoint variables or a container there.
const Supported = false

func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(int) error { return errors.ErrUnsupported }

// lockFile does not lock here; Install's atomic rename still keeps the
// cache consistent, at the cost of parallel downloads.
func lockFile(context.Context, string, func(string, ...any)) (func(), bool, error) {
	return func() {}, false, nil
}
