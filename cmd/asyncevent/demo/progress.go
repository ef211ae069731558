package demo

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// isTerminal reports whether w is a terminal (a character device), where the progress
// bar redraws one line; elsewhere (a file, a pipe, a test's buffer) it prints plain
// lines now and then.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress shows how a long phase goes on stderr: a bar redrawn in place on a
// terminal, a plain line every plainEvery otherwise.
type progress struct {
	w          io.Writer
	tty        bool
	plainEvery time.Duration

	mu      sync.Mutex
	stopped chan struct{}
	done    chan struct{}
}

// status is what the progress shows: a label, a fraction done and details.
type status struct {
	label    string
	fraction float64 // 0..1; negative: unknown, no bar
	detail   string
}

const barWidth = 24

func (s status) line(elapsed time.Duration) string {
	if s.fraction < 0 {
		return fmt.Sprintf("%-10s %s  %s", s.label, s.detail, formatElapsed(elapsed))
	}
	f := min(s.fraction, 1)
	full := int(f * barWidth)
	bar := strings.Repeat("█", full) + strings.Repeat("░", barWidth-full)
	return fmt.Sprintf("%-10s [%s] %3.0f%%  %s  %s", s.label, bar, f*100, s.detail, formatElapsed(elapsed))
}

func formatElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// startProgress shows get's status until the returned function is called, which
// prints the final status once more and ends the line.
func startProgress(w io.Writer, get func() status) (stop func()) {
	p := &progress{w: w, tty: isTerminal(w), plainEvery: 5 * time.Second, stopped: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	interval := 200 * time.Millisecond
	if !p.tty {
		interval = p.plainEvery
	}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-p.stopped:
				p.draw(get().line(time.Since(start)), true)
				return
			case <-tick.C:
				p.draw(get().line(time.Since(start)), false)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(p.stopped)
			<-p.done
		})
	}
}

func (p *progress) draw(line string, final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		// Carriage return, the line, clear to its end.
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		if final {
			fmt.Fprintln(p.w)
		}
		return
	}
	fmt.Fprintln(p.w, line)
}
