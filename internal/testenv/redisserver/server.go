package redisserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
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
	shared *testproc.Shared
}

// New returns a Server that starts nothing until a test asks for its address.
func New() *Server { return newServer(false) }

// NewCluster returns a Server that starts a one-node Redis Cluster (cluster
// mode on, all 16384 slots on the node), for tests through a
// redis.ClusterClient. [EnvAddr] does not apply to it.
func NewCluster() *Server { return newServer(true) }

func newServer(cluster bool) *Server {
	return &Server{shared: testproc.NewShared("redisserver", hint, func() (string, func() error, error) {
		if addr := os.Getenv(EnvAddr); addr != "" && !cluster {
			return addr, nil, nil
		}
		p, addr, err := testproc.LaunchProgram(Command, func(path string) (*testproc.Process, string, error) {
			return launch(path, cluster)
		})
		if err != nil {
			return "", nil, err
		}
		return addr, p.Stop, nil
	})}
}

// Run runs the tests and then closes the server. Use it in TestMain.
func (s *Server) Run(m *testing.M) int { return s.shared.Run(m) }

// Addr returns the server's host:port, starting redis-server on first use.
// When no server can be had, it fails the test under CI=true and skips it
// otherwise.
func (s *Server) Addr(t testing.TB) string {
	t.Helper()
	return s.shared.Addr(t)
}

// URL returns the server's address as a redis:// URL.
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	return "redis://" + s.Addr(t)
}

// Close stops the server if this Server started one. It is safe to call
// more than once.
func (s *Server) Close() error { return s.shared.Close() }

func launch(path string, cluster bool) (*testproc.Process, string, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "redisserver-")
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning",
	}
	if cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"))
	}
	cmd := exec.Command(path, args...)
	p, err := testproc.Start(Command, cmd)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	ready := func() error { return ping(addr) }
	if cluster {
		assigned := false
		ready = func() error {
			if err := ping(addr); err != nil {
				return err
			}
			if !assigned {
				if _, err := command(addr, "CLUSTER ADDSLOTSRANGE 0 16383"); err != nil {
					return err
				}
				assigned = true
			}
			info, err := command(addr, "CLUSTER INFO")
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return errors.New("cluster state is not ok yet")
			}
			return nil
		}
	}
	if err := p.WaitReady(startTimeout, ready); err != nil {
		_ = p.Stop()
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("%s on %s: %w", Command, addr, err)
	}
	go func() { <-p.Exited(); os.RemoveAll(dir) }()
	return p, addr, nil
}

// ping sends PING and expects PONG.
func ping(addr string) error {
	got, err := command(addr, "PING")
	if err != nil {
		return err
	}
	if got != "PONG" {
		return fmt.Errorf("PING answered %q", got)
	}
	return nil
}

// command sends one command in the inline protocol and returns its reply:
// a simple string or a bulk string; an error reply is an error.
func command(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"):
		return line[1:], nil
	case strings.HasPrefix(line, "-"):
		return "", fmt.Errorf("%s: %s", cmd, line[1:])
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("%s: reply %q", cmd, line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("%s: unexpected reply %q", cmd, line)
}
