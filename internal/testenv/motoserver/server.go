package motoserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// Command is the program Server starts.
const Command = "moto_server"

// EnvEndpoint names the environment variable that points the tests at an
// already running DynamoDB-compatible server instead of starting one.
const EnvEndpoint = "SQSONCE_DYNAMODB_ENDPOINT"

const (
	// startTimeout bounds the wait for moto_server to answer after it started.
	startTimeout = 60 * time.Second
	hint         = "install " + Command + " with: pip install 'moto[server]' (or set " + EnvEndpoint + " to a running server)"
)

// Server is a DynamoDB-compatible endpoint shared by the tests of one test
// binary. Create it with [New]; it is safe for concurrent use.
type Server struct {
	shared *testproc.Shared
}

// New returns a Server that starts nothing until a test asks for its
// endpoint.
func New() *Server {
	return &Server{shared: testproc.NewShared("motoserver", hint, func() (string, func() error, error) {
		if ep := os.Getenv(EnvEndpoint); ep != "" {
			return ep, nil, nil
		}
		return start()
	})}
}

// Run runs the tests and then closes the server. Use it in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }
func (s *Server) Run(m *testing.M) int { return s.shared.Run(m) }

// Endpoint returns the server's base URL, starting moto_server on first use.
// When no server can be had, it fails the test under CI=true and skips it
// otherwise.
func (s *Server) Endpoint(t testing.TB) string {
	t.Helper()
	return s.shared.Addr(t)
}

// Start starts moto_server if this Server has not yet, and returns its base
// URL: [Server.Endpoint] for programs that are not tests (the chaos
// command). Call [Server.Close] when done.
func (s *Server) Start() (string, error) { return s.shared.Start() }

// Close stops the server if this Server started one, killing its process
// group. It is safe to call more than once.
func (s *Server) Close() error { return s.shared.Close() }

// start starts a moto_server on a free loopback port, and returns its
// endpoint and the function that stops it.
func start() (endpoint string, stop func() error, err error) {
	p, endpoint, err := testproc.LaunchProgram(Command, launch)
	if err != nil {
		return "", nil, err
	}
	return endpoint, func() error {
		if err := p.Stop(); err != nil {
			return fmt.Errorf("motoserver: %w", err)
		}
		return nil
	}, nil
}

// launch starts one moto_server and waits until it answers.
func launch(path string) (*testproc.Process, string, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, "", err
	}
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	p, err := testproc.Start(Command, command(path, port))
	if err != nil {
		return nil, "", err
	}
	client := &http.Client{Timeout: time.Second}
	ready := func() error {
		resp, err := client.Get(endpoint + "/moto-api/data.json")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if err := p.WaitReady(startTimeout, ready); err != nil {
		_ = p.Stop()
		return nil, "", fmt.Errorf("%s on %s: %w", Command, endpoint, err)
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
