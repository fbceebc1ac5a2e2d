package rie

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// EnvRIE names the environment variable that points at the emulator.
const EnvRIE = "SQSONCE_RIE"

// Install is how the pinned emulator is installed.
const Install = "make tools (go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d)"

// Find returns the emulator's path: $SQSONCE_RIE, else aws-lambda-rie on
// PATH, else in $(go env GOPATH)/bin.
func Find() (string, error) {
	if p := os.Getenv(EnvRIE); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("rie: %s=%s: %w", EnvRIE, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "aws-lambda-rie")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("rie: aws-lambda-rie is not in $%s, on PATH or in $GOPATH/bin; install it with %s", EnvRIE, Install)
}

// Config is one execution environment.
type Config struct {
	RIE       string // the emulator's path; see [Find]
	Bootstrap string // the function's executable, built for this machine

	// Env is the function's environment: its variables and the AWS
	// credentials and region it should use.
	Env map[string]string
	// Timeout is the function's timeout: each invocation's deadline.
	// Default 300 s, the emulator's own.
	Timeout time.Duration
	// FunctionName is AWS_LAMBDA_FUNCTION_NAME. Default "function".
	FunctionName string
	// MemorySize is AWS_LAMBDA_FUNCTION_MEMORY_SIZE in MB. Default 128.
	MemorySize int
}

// Function is a started execution environment. It is safe for concurrent
// use, but serves one invocation at a time.
type Function struct {
	url  string
	proc *testproc.Process
	home string
}

// startTimeout bounds the wait for the emulator to listen.
const startTimeout = 10 * time.Second

// Start starts the emulator with the bootstrap and waits until it listens.
// The bootstrap's init runs on the first invocation.
func Start(c Config) (*Function, error) {
	if c.RIE == "" || c.Bootstrap == "" {
		return nil, errors.New("rie: Config.RIE and Config.Bootstrap are required")
	}
	if _, err := os.Stat(c.Bootstrap); err != nil {
		return nil, fmt.Errorf("rie: bootstrap: %w", err)
	}
	if c.Timeout == 0 {
		c.Timeout = 300 * time.Second
	}
	if c.Timeout%time.Second != 0 {
		return nil, fmt.Errorf("rie: Timeout %v is not whole seconds", c.Timeout)
	}
	if c.FunctionName == "" {
		c.FunctionName = "function"
	}
	if c.MemorySize == 0 {
		c.MemorySize = 128
	}
	home, err := os.MkdirTemp("", "rie-home-")
	if err != nil {
		return nil, fmt.Errorf("rie: %w", err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	for k, v := range c.Env {
		env = append(env, k+"="+v)
	}
	env = append(env,
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(c.Timeout/time.Second)),
		"AWS_LAMBDA_FUNCTION_NAME="+c.FunctionName,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(c.MemorySize),
	)
	proc, addr, err := testproc.Launch(func() (*testproc.Process, string, error) {
		port, err := testproc.FreePort()
		if err != nil {
			return nil, "", err
		}
		apiPort, err := testproc.FreePort()
		if err != nil {
			return nil, "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(c.RIE,
			"--runtime-interface-emulator-address", addr,
			"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort),
			c.Bootstrap)
		cmd.Env = env
		p, err := testproc.Start("aws-lambda-rie", cmd)
		if err != nil {
			return nil, "", err
		}
		// An execution environment has nothing to flush, and the emulator
		// takes seconds to stop on SIGTERM.
		p.StopSignal = syscall.SIGKILL
		if err := p.WaitReady(startTimeout, func() error {
			conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				conn.Close()
			}
			return err
		}); err != nil {
			_ = p.Stop()
			return nil, "", err
		}
		return p, addr, nil
	})
	if err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("rie: %w", err)
	}
	return &Function{url: "http://" + addr + "/2015-03-31/functions/function/invocations", proc: proc, home: home}, nil
}

// FunctionError is an invocation that failed: the function returned an
// error, panicked, or ran out of time.
type FunctionError struct {
	Type    string // errorType, e.g. "Runtime.ExitError" or the Go error's type name
	Message string // errorMessage
}

func (e *FunctionError) Error() string {
	return "rie: function error " + e.Type + ": " + e.Message
}

// Call sends one invocation with payload and returns the function's
// response. A function error is a *[FunctionError].
func (f *Function) Call(ctx context.Context, payload []byte) ([]byte, error) {
	return f.call(ctx, payload, nil)
}

// Invoke sends an SQS event and returns the function's partial batch
// response: the function as an esm.Invoker.
func (f *Function) Invoke(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return f.invoke(ctx, ev, nil)
}

// Endpoint returns the function behind an Invoke endpoint started
// elsewhere: an emulator someone else runs (aws-lambda-rie listens on
// [DefaultEndpoint] unless told otherwise), or `sam local start-lambda`'s
// /2015-03-31/functions/NAME/invocations. Its Output is empty and its
// Close does nothing.
func Endpoint(url string) *Function { return &Function{url: url} }

// URL returns the function's Invoke endpoint, which takes an event as a
// POST body.
func (f *Function) URL() string { return f.url }

// DefaultEndpoint is where aws-lambda-rie, started without
// --runtime-interface-emulator-address, takes invocations.
const DefaultEndpoint = "http://127.0.0.1:8080/2015-03-31/functions/function/invocations"

// Output returns the tail (8 KiB) of the emulator's and the function's
// output: the function's log lines.
func (f *Function) Output() string {
	if f.proc == nil {
		return ""
	}
	return f.proc.Output()
}

// Close stops the emulator and the function.
func (f *Function) Close() error {
	if f.proc == nil {
		return nil
	}
	err := f.proc.Stop()
	os.RemoveAll(f.home)
	if err != nil {
		return fmt.Errorf("rie: %w", err)
	}
	return nil
}
