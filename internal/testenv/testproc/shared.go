package testproc

import (
	"fmt"
	"os/exec"
	"sync"
	"testing"
)

// Shared is a server shared by the tests of one test binary, started on
// first use and stopped by [Shared.Close]. It is safe for concurrent use.
type Shared struct {
	pkg, hint string
	start     func() (addr string, stop func() error, err error)

	once sync.Once
	addr string
	err  error // why the server is not available

	mu   sync.Mutex
	stop func() error // nil when nothing was started
}

// NewShared returns a Shared that calls start on first use. start returns
// the server's address and the function that stops it, nil when it started
// nothing (an environment variable named a running server). pkg names the
// server's package in messages; hint says how to get the server.
func NewShared(pkg, hint string, start func() (addr string, stop func() error, err error)) *Shared {
	return &Shared{pkg: pkg, hint: hint, start: start}
}

func (s *Shared) run() {
	addr, stop, err := s.start()
	if err != nil {
		s.err = err
		return
	}
	s.addr = addr
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
}

// Addr returns the server's address, starting it on first use. When no
// server can be had, it fails t under CI=true and skips it otherwise (see
// [Unavailable]).
func (s *Shared) Addr(t testing.TB) string {
	t.Helper()
	s.once.Do(s.run)
	if s.err != nil {
		Unavailable(t, s.pkg, s.err, s.hint)
	}
	return s.addr
}

// Start starts the server if it has not been started, and returns its
// address: [Shared.Addr] for programs that are not tests. Call
// [Shared.Close] when done.
func (s *Shared) Start() (string, error) {
	s.once.Do(s.run)
	if s.err != nil {
		return "", fmt.Errorf("%s: %w", s.pkg, s.err)
	}
	return s.addr, nil
}

// Run runs the tests and then closes the server. Use it in TestMain.
func (s *Shared) Run(m *testing.M) int {
	return Run(m, s.Close)
}

// Close stops the server if this Shared started one. It is safe to call
// more than once.
func (s *Shared) Close() error {
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop == nil {
		return nil
	}
	return stop()
}

// LaunchProgram finds the program command in PATH and starts it with
// [Launch]: launch is called with its path.
func LaunchProgram(command string, launch func(path string) (*Process, string, error)) (*Process, string, error) {
	path, err := exec.LookPath(command)
	if err != nil {
		return nil, "", fmt.Errorf("%s not found in PATH: %w", command, err)
	}
	return Launch(func() (*Process, string, error) { return launch(path) })
}
