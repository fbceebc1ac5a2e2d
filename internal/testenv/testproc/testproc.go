package testproc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a started server process.
type Process struct {
	Name string // for messages, e.g. "redis-server"
	// StopSignal is the signal Stop sends first; default SIGTERM.
	StopSignal syscall.Signal
	cmd        *exec.Cmd
	done       chan struct{} // closed when the process has exited
	out        *tail
}

// Start starts cmd in its own process group (killed with the test binary on
// Linux), collecting the last 8 KiB of its output. A Credential set in
// cmd.SysProcAttr is kept.
func Start(name string, cmd *exec.Cmd) (*Process, error) {
	p := &Process{Name: name, cmd: cmd, out: &tail{max: 8 << 10}, done: make(chan struct{}), StopSignal: syscall.SIGTERM}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	attr := procAttr()
	if cmd.SysProcAttr != nil {
		attr.Credential = cmd.SysProcAttr.Credential
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Output returns the tail of the process's output.
func (p *Process) Output() string { return p.out.String() }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// WaitReady calls ready every 50 ms until it returns nil, the process
// exits, or timeout passes.
func (p *Process) WaitReady(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before answering: %w\n%s output:\n%s", p.Name, err, p.Name, p.Output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %v: %w\n%s output:\n%s", p.Name, timeout, err, p.Name, p.Output())
		}
	}
}

// Stop terminates the process group: StopSignal, then SIGKILL after 5 s.
func (p *Process) Stop() error {
	pgid := p.cmd.Process.Pid // Setpgid: the server leads its own group
	_ = syscall.Kill(-pgid, p.StopSignal)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, pgid)
	}
}

// Launch calls launch, which starts a server on a port from [FreePort] and
// waits until it answers, up to three times: a port found free can be taken
// by someone else before the server binds it. It returns the last error.
func Launch(launch func() (*Process, string, error)) (p *Process, addr string, err error) {
	for range 3 {
		if p, addr, err = launch(); err == nil {
			return p, addr, nil
		}
	}
	return nil, "", err
}

// Run runs the tests and then calls closeServer, printing its error to
// standard error: the body of a server's Run method for TestMain.
func Run(m *testing.M, closeServer func() error) int {
	code := m.Run()
	if err := closeServer(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Unavailable fails t when the environment variable CI is "true", and skips
// it otherwise, because the server could not be had; hint says how to get it.
func Unavailable(t testing.TB, pkg string, err error, hint string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v\nCI=true: these tests need the server; %s", pkg, err, hint)
	}
	t.Skipf("%s: %v\nskipping: %s", pkg, err, hint)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(bytes.TrimSpace(w.buf))
}
