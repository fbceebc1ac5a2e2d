package redisserver

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testproc"
)

// Command is the program Server starts.
const Command = "redis-server"

// EnvAddr names the environment variable that points the tests at an
// already running Redis server (host:port) instead of starting one.
const EnvAddr = "SQSONCE_TEST_REDIS_ADDR"

const (
	startTimeout = 30 * time.Second
	hint         = "install redis-server with: apt-get install -y redis-server (or set " + EnvAddr + " to a running server)"
)

// Server is a Redis server shared by the tests of one test binary. Create it
// with [New]; it is safe for concurrent use.
type Server struct {
	once sync.Once
	addr string
	err  error

	mu   sync.Mutex
	proc *testproc.Process
}

// New returns a Server that starts nothing until a test asks for its address.
func New() *Server { return &Server{} }

// Run runs the tests and then closes the server. Use it in TestMain.
func (s *Server) Run(m *testing.M) int {
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// Addr returns the server's host:port, starting redis-server on first use.
// When no server can be had, it fails the test under CI=true and skips it
// otherwise.
func (s *Server) Addr(t testing.TB) string {
	t.Helper()
	s.once.Do(s.start)
	if s.err != nil {
		testproc.Unavailable(t, "redisserver", s.err, hint)
	}
	return s.addr
}

// URL returns the server's address as a redis:// URL.
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	return "redis://" + s.Addr(t)
}

func (s *Server) start() {
	if addr := os.Getenv(EnvAddr); addr != "" {
		s.addr = addr
		return
	}
	path, err := exec.LookPath(Command)
	if err != nil {
		s.err = fmt.Errorf("%s not found in PATH: %w", Command, err)
		return
	}
	// A free port can be taken by someone else before the server binds it:
	// try a few.
	for range 3 {
		var p *testproc.Process
		p, s.addr, err = launch(path)
		if err == nil {
			s.mu.Lock()
			s.proc = p
			s.mu.Unlock()
			return
		}
	}
	s.err = err
}

func launch(path string) (*testproc.Process, string, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "redisserver-")
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(path,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning")
	p, err := testproc.Start(Command, cmd)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	if err := p.WaitReady(startTimeout, func() error { return ping(addr) }); err != nil {
		_ = p.Stop()
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("%s on %s: %w", Command, addr, err)
	}
	go func() { <-p.Exited(); os.RemoveAll(dir) }()
	return p, addr, nil
}

// ping sends PING in the inline protocol and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// Close stops the server if this Server started one. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Stop()
}
