package motoserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Command is the program Server starts.
const Command = "moto_server"

// EnvEndpoint names the environment variable that points the tests at an
// already running DynamoDB-compatible server instead of starting one.
const EnvEndpoint = "SQSONCE_DYNAMODB_ENDPOINT"

// startTimeout bounds the wait for moto_server to answer after it started.
const startTimeout = 60 * time.Second

// Server is a DynamoDB-compatible endpoint shared by the tests of one test
// binary. Create it with [New]; it is safe for concurrent use.
type Server struct {
	once     sync.Once
	endpoint string
	err      error // why the server is not available

	mu   sync.Mutex
	proc *process // nil when nothing was started
}

// process is a started moto_server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	out  *tail
}

// New returns a Server that starts nothing until a test asks for its
// endpoint.
func New() *Server { return &Server{} }

// Run runs the tests and then closes the server. Use it in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }
func (s *Server) Run(m *testing.M) int {
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// Endpoint returns the server's base URL, starting moto_server on first use.
// When no server can be had, it fails the test under CI=true and skips it
// otherwise.
func (s *Server) Endpoint(t testing.TB) string {
	t.Helper()
	s.once.Do(s.start)
	if s.err != nil {
		unavailable(t, s.err)
	}
	return s.endpoint
}

// Start starts moto_server if this Server has not yet, and returns its base
// URL: [Server.Endpoint] for programs that are not tests (the chaos
// command). Call [Server.Close] when done.
func (s *Server) Start() (string, error) {
	s.once.Do(s.start)
	if s.err != nil {
		return "", fmt.Errorf("motoserver: %w", s.err)
	}
	return s.endpoint, nil
}

// unavailable fails (CI=true) or skips t because no server could be had.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("motoserver: %v\nCI=true: these tests need a DynamoDB-compatible server; install %s with: pip install 'moto[server]'", err, Command)
	}
	t.Skipf("motoserver: %v\nskipping: install %s with: pip install 'moto[server]' (or set %s to a running server)", err, Command, EnvEndpoint)
}

func (s *Server) start() {
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		s.endpoint = ep
		return
	}
	path, err := exec.LookPath(Command)
	if err != nil {
		s.err = fmt.Errorf("%s not found in PATH: %w", Command, err)
		return
	}
	// A free port can be taken by someone else before moto_server binds it:
	// try a few.
	for range 3 {
		var p *process
		p, s.endpoint, err = launch(path)
		if err == nil {
			s.mu.Lock()
			s.proc = p
			s.mu.Unlock()
			return
		}
	}
	s.err = err
}

// launch starts one moto_server and waits until it answers.
func launch(path string) (*process, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	p := &process{out: &tail{max: 8 << 10}, done: make(chan struct{})}
	p.cmd = command(path, port)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = procAttr()
	if err := p.cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", Command, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	if err := waitReady(endpoint, p.done); err != nil {
		p.stop()
		return nil, "", fmt.Errorf("%s on %s: %w\n%s output:\n%s", Command, endpoint, err, Command, p.out.String())
	}
	return p, endpoint, nil
}

// atomicServer is moto_server's own main with one change: DynamoDB
// requests are served one at a time. Real DynamoDB evaluates a conditional
// write atomically; moto's threaded server evaluates the condition and then
// writes without a lock, so two racing PutItems can both pass
// attribute_not_exists (seen here: 2 of 200 racing claims won). Serialising
// DynamoDB requests gives the tests DynamoDB's atomicity; other services
// (SQS long polls) stay concurrent.
const atomicServer = `
import sys, threading
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()

def serve(environ, start_response):
    if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
        with lock:
            return list(app(environ, start_response))
    return app(environ, start_response)

run_simple(sys.argv[1], int(sys.argv[2]), serve, threaded=True)
`

// command is the server to start on port: moto's application with
// DynamoDB requests serialised (atomicServer), run by the python3 that has
// moto installed, else moto_server itself.
func command(motoServer string, port int) *exec.Cmd {
	if py, err := exec.LookPath("python3"); err == nil &&
		exec.Command(py, "-c", "import moto.moto_server.werkzeug_app, werkzeug.serving").Run() == nil {
		return exec.Command(py, "-c", atomicServer, "127.0.0.1", strconv.Itoa(port))
	}
	return exec.Command(motoServer, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
}

// waitReady polls endpoint until it answers HTTP, the process exits or
// startTimeout passes.
func waitReady(endpoint string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := client.Get(endpoint + "/moto-api/data.json")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited before answering")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", startTimeout, err)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Close stops the server if this Server started one, killing its process
// group. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop()
}

// stop terminates the process group, politely first.
func (p *process) stop() error {
	pgid := p.cmd.Process.Pid // Setpgid: the server leads its own group
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
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
		return fmt.Errorf("motoserver: %s (pid %d) did not exit after SIGKILL", Command, pgid)
	}
}

// Reset clears all of moto's state (POST /moto-api/reset). It affects every
// test using the server, so tests that call it must not run in parallel with
// others; [NewTable] isolates tests without it. It fails t against an
// endpoint that is not moto.
func (s *Server) Reset(t testing.TB) {
	t.Helper()
	ep := s.Endpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+"/moto-api/reset", nil)
	if err != nil {
		t.Fatalf("motoserver: reset: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("motoserver: reset: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("motoserver: reset %s: %s (is it moto?)", ep, resp.Status)
	}
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
