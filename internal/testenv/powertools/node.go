package powertools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Request is what the driver runs: SQS events through makeIdempotent inside
// a BatchProcessor, against a DynamoDB table. KeyAttr, SortKeyAttr and
// StaticPkValue are the persistence layer's options of those names (empty:
// Powertools' defaults); Run sets AWS_LAMBDA_FUNCTION_NAME to [FunctionName].
type Request struct {
	Endpoint                  string            `json:"endpoint"`
	Table                     string            `json:"table"`
	KeyAttr                   string            `json:"keyAttr,omitempty"`
	SortKeyAttr               string            `json:"sortKeyAttr,omitempty"`
	StaticPkValue             string            `json:"staticPkValue,omitempty"`
	KeyPrefix                 string            `json:"keyPrefix"`
	EventKeyJMESPath          string            `json:"eventKeyJmesPath"`
	PayloadValidationJMESPath string            `json:"payloadValidationJmesPath,omitempty"`
	ExpiresAfterSeconds       int               `json:"expiresAfterSeconds,omitempty"`
	RemainingMs               int64             `json:"remainingMs,omitempty"`
	Crash                     bool              `json:"crash,omitempty"`
	ModelMs                   int               `json:"modelMs,omitempty"`
	Events                    []events.SQSEvent `json:"events"`
}

// Report is what the driver saw.
type Report struct {
	Events  []EventReport `json:"events"`
	Ran     []string      `json:"ran"`               // messageIds whose handler ran
	Crashed string        `json:"crashed,omitempty"` // the messageId whose handler exited the process
	Mallocs uint64        `json:"mallocs,omitempty"` // heap allocations while the events ran (Go workers only)
	Usage   Usage         `json:"-"`
}

// EventReport is one event's outcome.
type EventReport struct {
	BatchItemFailures []events.SQSBatchItemFailure `json:"batchItemFailures"`
	Records           []RecordReport               `json:"records"`
	Ms                float64                      `json:"ms"`
}

// RecordReport is one record's outcome: the value the idempotent handler
// returned (absent when undefined), or the name of the error it threw.
type RecordReport struct {
	MessageID string          `json:"messageId"`
	Status    string          `json:"status"` // "success" or "fail"
	Value     json.RawMessage `json:"value,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// Usage is the driver process's resource use.
type Usage struct {
	CPU     time.Duration // user + system
	MaxRSS  int64         // bytes
	Elapsed time.Duration
}

// ErrUnavailable reports that node or the installed packages are missing.
var ErrUnavailable = errors.New("powertools: node or the Powertools packages are not installed (run npm ci in internal/testenv/powertools/testdata, or make test)")

// Available reports whether node and the packages in dir (the testdata
// folder) are installed.
func Available(dir string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@aws-lambda-powertools", "idempotency", "package.json")); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// FunctionName is the driver's AWS_LAMBDA_FUNCTION_NAME.
const FunctionName = "pt-interop"

// Run runs the driver in dir (the testdata folder) with req.
func Run(ctx context.Context, dir string, req Request) (Report, error) {
	cmd := exec.CommandContext(ctx, "node", "driver.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AWS_REGION=us-east-1", "AWS_LAMBDA_FUNCTION_NAME="+FunctionName, "POWERTOOLS_IDEMPOTENCY_DISABLED=false")
	return RunProcess(cmd, req)
}

// RunProcess runs cmd, a program that speaks the driver's protocol: req as
// JSON on its standard input, a [Report] as JSON on its standard output.
// The report's Usage is the process's own.
func RunProcess(cmd *exec.Cmd, req Request) (Report, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return Report{}, err
	}
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return Report{}, fmt.Errorf("powertools: %s: %w\nstderr:\n%s", cmd.Path, err, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return Report{}, fmt.Errorf("powertools: report of %s %q: %w\nstderr:\n%s", cmd.Path, stdout.String(), err, stderr.String())
	}
	rep.Usage.Elapsed = time.Since(start)
	rep.Usage.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rep.Usage.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return rep, nil
}
