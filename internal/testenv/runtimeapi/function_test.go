package runtimeapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/runtimeapi"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// bootstrap builds testdata/echo as Lambda runs a Go function
// (-tags lambda.norpc, CGO off), once per test binary.
func bootstrap(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "runtimeapi-echo-"); buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", buildPath, "./testdata/echo")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// start runs testdata/echo under a server of its own. When the test ends
// the process is shut down (410 on /next); the test fails if it had to be
// killed or broke the protocol, and logs its output if the test failed.
func start(t *testing.T, c runtimeapi.Config) *runtimeapi.Function {
	t.Helper()
	c.Bootstrap = bootstrap(t)
	fn, err := runtimeapi.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fn.Close(); err != nil {
			t.Error(err)
		}
		if err := fn.Err(); err != nil {
			t.Errorf("protocol errors: %v", err)
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", fn.Stdout(), fn.Stderr())
		}
	})
	return fn
}

// echoed is testdata/echo's response.
type echoed struct {
	RequestID      string `json:"request_id"`
	DeadlineMS     int64  `json:"deadline_ms"`
	TenantID       string `json:"tenant_id"`
	FunctionARN    string `json:"function_arn"`
	TraceID        string `json:"trace_id"`
	MaxConcurrency int    `json:"max_concurrency"`
	PID            int    `json:"pid"`
}

func decode(t *testing.T, r runtimeapi.Result) echoed {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("invocation %s: function error %v", r.RequestID, r.Err)
	}
	var e echoed
	if err := json.Unmarshal(r.Response, &e); err != nil {
		t.Fatalf("invocation %s: response %q: %v", r.RequestID, r.Response, err)
	}
	return e
}

func payload(sleep time.Duration, extra string) []byte {
	return []byte(fmt.Sprintf(`{"sleep_ms":%d%s}`, sleep.Milliseconds(), extra))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestConcurrency runs eight invocations at AWS_LAMBDA_MAX_CONCURRENCY=4
// through aws-lambda-go's runtime loop in one process: four /next requests
// wait at once, four invocations overlap and never more, and each answer
// goes to its own request id with its own tenant, trace id and deadline.
func TestConcurrency(t *testing.T) {
	const n = 4
	fn := start(t, runtimeapi.Config{MaxConcurrency: n, FunctionName: "echo"})
	if err := fn.WaitPolling(ctx(t), n); err != nil {
		t.Fatal(err)
	}
	var calls []*runtimeapi.Call
	for i := range 2 * n {
		c, err := fn.Enqueue(runtimeapi.Invocation{
			Payload:   payload(300*time.Millisecond, ""),
			RequestID: fmt.Sprintf("req-%d", i),
			TenantID:  fmt.Sprintf("tenant-%d", i%3),
		})
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	pids := map[int]bool{}
	for i, c := range calls {
		r, err := c.Wait(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		e := decode(t, r)
		want := echoed{
			RequestID:      fmt.Sprintf("req-%d", i),
			DeadlineMS:     r.Deadline.UnixMilli(),
			TenantID:       fmt.Sprintf("tenant-%d", i%3),
			FunctionARN:    "arn:aws:lambda:us-east-1:123456789012:function:echo",
			TraceID:        r.TraceID,
			MaxConcurrency: n,
			PID:            e.PID,
		}
		if e != want {
			t.Errorf("invocation %d saw %+v, want %+v", i, e, want)
		}
		if got := r.Deadline.Sub(r.HandedOut); got < runtimeapi.DefaultTimeout-time.Millisecond || got > runtimeapi.DefaultTimeout {
			t.Errorf("invocation %d: deadline %v after it was handed out, want the default %v", i, got, runtimeapi.DefaultTimeout)
		}
		pids[e.PID] = true
	}
	if len(pids) != 1 {
		t.Errorf("answered by processes %v, want one", pids)
	}
	if got := fn.MaxInFlight(); got != n {
		t.Errorf("at most %d invocations in flight at once, want %d", got, n)
	}
	// Each invocation wrote its own lines.
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range runtimeapi.JSONLines(fn.Stdout()) {
		if l["msg"] == "echo" {
			ids = append(ids, fmt.Sprint(l["request_id"]))
		}
	}
	if len(ids) != 2*n {
		t.Errorf("stdout has %d echo lines, want %d: %v", len(ids), 2*n, ids)
	}
	for i := range 2 * n {
		if !strings.Contains(fn.Stderr(), fmt.Sprintf("echo: stderr of req-%d\n", i)) {
			t.Errorf("stderr lacks req-%d's line", i)
		}
	}
}

// TestOneAtATime: without AWS_LAMBDA_MAX_CONCURRENCY the loop serves one
// invocation at a time, however many are queued.
func TestOneAtATime(t *testing.T) {
	fn := start(t, runtimeapi.Config{})
	var calls []*runtimeapi.Call
	for range 3 {
		c, err := fn.Enqueue(runtimeapi.Invocation{Payload: payload(100*time.Millisecond, "")})
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	for _, c := range calls {
		r, err := c.Wait(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if e := decode(t, r); e.MaxConcurrency != 1 || e.RequestID != c.RequestID() {
			t.Errorf("saw %+v, want max concurrency 1 and request id %s", e, c.RequestID())
		}
	}
	if got := fn.MaxInFlight(); got != 1 {
		t.Errorf("at most %d invocations in flight at once, want 1", got)
	}
}

// TestDeadlines: each invocation's deadline governs it alone. One with a
// 200 ms timeout ends at its deadline while another, in flight at the same
// time with a 10 s timeout, finishes its work; a deadline set outright is
// the one the function sees.
func TestDeadlines(t *testing.T) {
	fn := start(t, runtimeapi.Config{MaxConcurrency: 3})
	if err := fn.WaitPolling(ctx(t), 3); err != nil {
		t.Fatal(err)
	}
	short, err := fn.Enqueue(runtimeapi.Invocation{Payload: payload(2*time.Second, ""), Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	long, err := fn.Enqueue(runtimeapi.Invocation{Payload: payload(500*time.Millisecond, ""), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(20 * time.Second).Truncate(time.Millisecond)
	fixed, err := fn.Enqueue(runtimeapi.Invocation{Payload: payload(0, ""), Deadline: at})
	if err != nil {
		t.Fatal(err)
	}

	rs, err := short.Wait(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if rs.Err == nil || rs.Err.Message != "context deadline exceeded" {
		t.Errorf("short invocation: %+v, want a function error: context deadline exceeded", rs)
	}
	if took := rs.Answered.Sub(rs.HandedOut); took < 200*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("short invocation answered after %v, want about its 200ms timeout", took)
	}
	rl, err := long.Wait(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if e := decode(t, rl); e.DeadlineMS != rl.Deadline.UnixMilli() || rl.Deadline.Sub(rl.HandedOut) < 9*time.Second {
		t.Errorf("long invocation saw deadline %d, sent %v (%v after hand-out)", e.DeadlineMS, rl.Deadline, rl.Deadline.Sub(rl.HandedOut))
	}
	if rl.Late() || !rs.Late() {
		t.Errorf("Late: short %v, long %v; want true, false", rs.Late(), rl.Late())
	}
	if !rl.HandedOut.Before(rs.Answered) {
		t.Errorf("the long invocation was handed out at %v, after the short one ended (%v): they did not overlap", rl.HandedOut, rs.Answered)
	}
	rf, err := fixed.Wait(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if e := decode(t, rf); e.DeadlineMS != at.UnixMilli() {
		t.Errorf("fixed deadline: the function saw %d, want %d", e.DeadlineMS, at.UnixMilli())
	}
}

// TestFunctionError: a returned error goes to /error, and the process
// serves the next invocation.
func TestFunctionError(t *testing.T) {
	fn := start(t, runtimeapi.Config{MaxConcurrency: 2})
	r, err := fn.Call(ctx(t), runtimeapi.Invocation{Payload: payload(0, `,"fail":"asked to fail"`)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Err == nil || r.Err.Type != "errorString" || r.Err.Message != "asked to fail" || r.Response != nil {
		t.Errorf("result %+v, err %+v; want a function error of type errorString", r, r.Err)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Err.Body, &body); err != nil || body["errorMessage"] != "asked to fail" {
		t.Errorf("error body %s: %v", r.Err.Body, err)
	}
	r, err = fn.Call(ctx(t), runtimeapi.Invocation{Payload: payload(0, "")})
	if err != nil {
		t.Fatal(err)
	}
	decode(t, r)
}

// TestPanic: a panic goes to /error and ends the process, but only after
// the invocations in flight beside it have been answered, as aws-lambda-go
// runs them to completion.
func TestPanic(t *testing.T) {
	fn := start(t, runtimeapi.Config{MaxConcurrency: 3})
	if err := fn.WaitPolling(ctx(t), 3); err != nil {
		t.Fatal(err)
	}
	var others []*runtimeapi.Call
	for range 2 {
		c, err := fn.Enqueue(runtimeapi.Invocation{Payload: payload(500*time.Millisecond, "")})
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, c)
	}
	r, err := fn.Call(ctx(t), runtimeapi.Invocation{Payload: payload(0, `,"panic":true`)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Err == nil || r.Err.Message != "echo: asked to panic" {
		t.Errorf("panic: %+v, want a function error", r.Err)
	}
	for _, c := range others {
		r, err := c.Wait(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		decode(t, r)
	}
	select {
	case <-fn.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit after a panic")
	}
	if fn.Gone() != 0 || fn.ProcessState().Success() {
		t.Errorf("exit %v after %d 410s; want a failed exit of its own", fn.ProcessState(), fn.Gone())
	}
}

// TestClose: Close ends the process through 410 Gone on /next; the loop
// exits with status 1, saying why.
func TestClose(t *testing.T) {
	fn := start(t, runtimeapi.Config{MaxConcurrency: 2})
	if _, err := fn.Call(ctx(t), runtimeapi.Invocation{Payload: payload(0, "")}); err != nil {
		t.Fatal(err)
	}
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
	if st := fn.ProcessState(); st == nil || st.ExitCode() != 1 || fn.Gone() < 1 {
		t.Errorf("exit %v after %d 410s, want status 1 after at least one", st, fn.Gone())
	}
	if !strings.Contains(fn.Stderr(), "got unexpected status code: 410") {
		t.Errorf("stderr does not say the loop ended on 410:\n%s", fn.Stderr())
	}
	if _, err := fn.Enqueue(runtimeapi.Invocation{Payload: payload(0, "")}); !errors.Is(err, runtimeapi.ErrClosed) {
		t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
}
