// Package tb is the part of testing.TB that moe's test harnesses (hosttest, echo, redistest)
// use, so that a program can drive them too: the end-to-end benchmark (cmd/moebench) starts
// moe-host, the echo upstream and Redis with exactly the code the end-to-end tests use.
// *testing.T and *testing.B satisfy TB; Program is the implementation for programs.
package tb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// TB is what the harnesses call on a test. testing.TB cannot be implemented outside package
// testing (it has an unexported method), hence this subset.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Skipf(format string, args ...any)
	Failed() bool
	Cleanup(func())
	TempDir() string
}

// Program is a TB for a program: Logf writes to Log, Error records a failure, Fatal and Skip
// record it and end the function given to Run (like FailNow, only from Run's goroutine), and
// cleanups run, last first, when Run returns.
type Program struct {
	Log io.Writer // where Logf and failures are written (nil: discarded)

	mu       sync.Mutex
	failures []string
	skipped  string // the Skip message, "" if none
	cleanups []func()
}

// abort is the panic value of Fatal and Skip, recovered by Run.
type abort struct{}

// ErrSkipped is returned by Run when the function called Skip.
var ErrSkipped = errors.New("skipped")

// Run calls f with a fresh Program and returns nil if it neither failed nor skipped, else an
// error with every failure message (one wrapping ErrSkipped for a skip). Cleanups registered
// during f run before Run returns. A panic other than Fatal's or Skip's is not recovered.
func Run(log io.Writer, f func(t TB)) (err error) {
	p := &Program{Log: log}
	defer func() {
		p.runCleanups()
		if r := recover(); r != nil {
			if _, ok := r.(abort); !ok {
				panic(r)
			}
		}
		err = p.Err()
	}()
	f(p)
	return nil
}

// Err is nil while nothing failed or skipped, else the failures, or for a skip an error
// wrapping ErrSkipped.
func (p *Program) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case len(p.failures) > 0:
		return errors.New(strings.Join(p.failures, "\n"))
	case p.skipped != "":
		return fmt.Errorf("%w: %s", ErrSkipped, p.skipped)
	}
	return nil
}

func (p *Program) runCleanups() {
	for {
		p.mu.Lock()
		n := len(p.cleanups)
		if n == 0 {
			p.mu.Unlock()
			return
		}
		f := p.cleanups[n-1]
		p.cleanups = p.cleanups[:n-1]
		p.mu.Unlock()
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(abort); !ok {
						panic(r)
					}
				}
			}()
			f()
		}()
	}
}

func (p *Program) write(s string) {
	if p.Log != nil {
		s = strings.TrimSuffix(s, "\n")
		fmt.Fprintln(p.Log, s)
	}
}

func (p *Program) fail(s string) {
	p.mu.Lock()
	p.failures = append(p.failures, s)
	p.mu.Unlock()
	p.write(s)
}

// Helper does nothing: there are no file:line prefixes to adjust.
func (p *Program) Helper() {}

func (p *Program) Logf(format string, args ...any)   { p.write(fmt.Sprintf(format, args...)) }
func (p *Program) Error(args ...any)                 { p.fail(fmt.Sprint(args...)) }
func (p *Program) Errorf(format string, args ...any) { p.fail(fmt.Sprintf(format, args...)) }
func (p *Program) Fatal(args ...any)                 { p.fail(fmt.Sprint(args...)); panic(abort{}) }

func (p *Program) Fatalf(format string, args ...any) {
	p.fail(fmt.Sprintf(format, args...))
	panic(abort{})
}

func (p *Program) Skip(args ...any) { p.skip(fmt.Sprint(args...)) }

func (p *Program) Skipf(format string, args ...any) { p.skip(fmt.Sprintf(format, args...)) }

func (p *Program) skip(s string) {
	if s == "" {
		s = "(no reason given)"
	}
	p.mu.Lock()
	p.skipped = s
	p.mu.Unlock()
	p.write(s)
	panic(abort{})
}

// Failed reports whether Error or Fatal was called.
func (p *Program) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.failures) > 0
}

// Cleanup registers f to run when Run returns (last registered first).
func (p *Program) Cleanup(f func()) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}

// TempDir returns a new temporary directory, removed by a cleanup.
func (p *Program) TempDir() string {
	dir, err := os.MkdirTemp("", "moe-tb-")
	if err != nil {
		p.Fatalf("TempDir: %v", err)
	}
	p.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Poll calls cond every 10 ms until it holds or d has passed, and reports whether it held.
// The one poll loop of the tests that wait for something asynchronous (a mirrored request, a
// JWKS refresh, a log line, a stream's end); a caller with a better failure message than
// Eventually's, or one that only waits before checking, uses it directly.
func Poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Eventually polls cond (Poll) and fails the test after 5 s, naming what it waited for.
func Eventually(t TB, what string, cond func() bool) {
	t.Helper()
	if !Poll(5*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
