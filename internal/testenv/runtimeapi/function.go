package runtimeapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Config is one execution environment: a bootstrap and what Lambda would
// put in its environment.
type Config struct {
	Bootstrap string // the function's executable, built for this machine; required

	// Env is the function's own environment: its variables and the AWS
	// credentials it should use. It is applied after the Lambda
	// variables below, so it can override any of them but
	// AWS_LAMBDA_RUNTIME_API.
	Env map[string]string
	// MaxConcurrency is AWS_LAMBDA_MAX_CONCURRENCY, the invocations one
	// process serves at once (Lambda Managed Instances). Zero: not set,
	// one at a time, as in Lambda's on-demand mode.
	MaxConcurrency int
	// Timeout is each invocation's timeout unless it sets its own.
	// Default [DefaultTimeout].
	Timeout time.Duration
	// FunctionName is AWS_LAMBDA_FUNCTION_NAME and names the function's
	// ARN. Default "function".
	FunctionName string
	// MemorySize is AWS_LAMBDA_FUNCTION_MEMORY_SIZE in MB. Default 128.
	MemorySize int
	// Region is AWS_REGION and AWS_DEFAULT_REGION, and the ARN's region.
	// Default "us-east-1".
	Region string
	// Dir is the working directory (Lambda's is LAMBDA_TASK_ROOT).
	// Default the bootstrap's directory.
	Dir string
}

// Function is a bootstrap process served by a [Server] of its own: one
// execution environment. The [Server]'s methods enqueue its invocations
// and report what happened to them.
type Function struct {
	*Server
	cmd    *exec.Cmd
	home   string
	stdout *buffer
	stderr *buffer
	done   chan struct{} // closed when the process has exited
	state  *os.ProcessState
}

// stopTimeout bounds the wait for the process to exit after Shutdown.
const stopTimeout = 10 * time.Second

// Start starts a [Server] and the bootstrap with AWS_LAMBDA_RUNTIME_API
// pointing at it. It does not wait for the bootstrap's init: see
// [Server.WaitPolling].
func Start(c Config) (*Function, error) {
	if c.Bootstrap == "" {
		return nil, errors.New("runtimeapi: Config.Bootstrap is required")
	}
	bootstrap, err := filepath.Abs(c.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("runtimeapi: bootstrap: %w", err)
	}
	if _, err := os.Stat(bootstrap); err != nil {
		return nil, fmt.Errorf("runtimeapi: bootstrap: %w", err)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.FunctionName == "" {
		c.FunctionName = "function"
	}
	if c.MemorySize == 0 {
		c.MemorySize = 128
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Dir == "" {
		c.Dir = filepath.Dir(bootstrap)
	}
	if c.MaxConcurrency < 0 {
		return nil, fmt.Errorf("runtimeapi: MaxConcurrency %d is negative", c.MaxConcurrency)
	}
	home, err := os.MkdirTemp("", "runtimeapi-home-")
	if err != nil {
		return nil, fmt.Errorf("runtimeapi: %w", err)
	}
	s, err := NewServer()
	if err != nil {
		os.RemoveAll(home)
		return nil, err
	}
	s.timeout = c.Timeout
	s.arn = "arn:aws:lambda:" + c.Region + ":123456789012:function:" + c.FunctionName

	initType := "on-demand"
	if c.MaxConcurrency > 0 {
		initType = "lambda-managed-instances"
	}
	env := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"HOME":                            home,
		"TZ":                              ":UTC",
		"LAMBDA_TASK_ROOT":                c.Dir,
		"_HANDLER":                        filepath.Base(bootstrap),
		"AWS_LAMBDA_FUNCTION_NAME":        c.FunctionName,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(c.MemorySize),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + c.FunctionName,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + strings.ReplaceAll(newUUID(), "-", ""),
		"AWS_LAMBDA_INITIALIZATION_TYPE":  initType,
		"AWS_REGION":                      c.Region,
		"AWS_DEFAULT_REGION":              c.Region,
	}
	if c.MaxConcurrency > 0 {
		env["AWS_LAMBDA_MAX_CONCURRENCY"] = strconv.Itoa(c.MaxConcurrency)
	}
	for k, v := range c.Env {
		env[k] = v
	}
	env["AWS_LAMBDA_RUNTIME_API"] = s.Addr()

	cmd := exec.Command(bootstrap)
	cmd.Dir = c.Dir
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	f := &Function{Server: s, cmd: cmd, home: home, stdout: &buffer{}, stderr: &buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = f.stdout, f.stderr
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		_ = s.Close()
		os.RemoveAll(home)
		return nil, fmt.Errorf("runtimeapi: start %s: %w", bootstrap, err)
	}
	go func() {
		_ = cmd.Wait()
		f.state = cmd.ProcessState
		close(f.done)
	}()
	return f, nil
}

// Exited is closed when the process has exited.
func (f *Function) Exited() <-chan struct{} { return f.done }

// ProcessState returns the exited process's state, or nil while it runs.
func (f *Function) ProcessState() *os.ProcessState {
	select {
	case <-f.done:
		return f.state
	default:
		return nil
	}
}

// Stdout returns what the process wrote to standard output so far: the
// function's log lines and EMF lines. Everything a process wrote is there
// once it has exited ([Function.Close]).
func (f *Function) Stdout() string { return f.stdout.String() }

// Stderr returns what the process wrote to standard error so far.
func (f *Function) Stderr() string { return f.stderr.String() }

// Close ends the process as Lambda's runtime loop expects to end: the
// server answers /next with 410 Gone once every invocation is answered,
// and aws-lambda-go exits. A process still running 10 s later is killed,
// and Close says so. Then the server closes.
func (f *Function) Close() error {
	f.Server.Shutdown()
	var err error
	select {
	case <-f.done:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		<-f.done
		err = fmt.Errorf("runtimeapi: the process did not exit within %v of the shutdown; killed", stopTimeout)
	}
	// Whatever the process started in its group goes with it.
	_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
	os.RemoveAll(f.home)
	return errors.Join(err, f.Server.Close())
}

// Invoke sends an SQS event with the server's defaults and returns the
// function's partial batch response; a function error is a
// *[FunctionError]. A Function is an esm.Invoker that serves as many
// invocations at once as its MaxConcurrency.
func (f *Function) Invoke(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return events.SQSEventResponse{}, fmt.Errorf("runtimeapi: %w", err)
	}
	res, err := f.Call(ctx, Invocation{Payload: payload})
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	if res.Err != nil {
		return events.SQSEventResponse{}, res.Err
	}
	var resp events.SQSEventResponse
	if t := bytes.TrimSpace(res.Response); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(t, &resp); err != nil {
			return events.SQSEventResponse{}, fmt.Errorf("runtimeapi: the response is not a partial batch response: %w", err)
		}
	}
	return resp, nil
}

// JSONLines returns the lines of out that are JSON objects, decoded, in
// order: the structured log lines and EMF lines of [Function.Stdout].
func JSONLines(out string) []map[string]any {
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] != '{' {
			continue
		}
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// buffer collects a process's output.
type buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
