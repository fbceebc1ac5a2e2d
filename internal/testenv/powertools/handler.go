package powertools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// HandlerRequest is what handler.mjs runs: events of any type through a
// Lambda handler made idempotent with makeIdempotent, against a DynamoDB
// table.
type HandlerRequest struct {
	Endpoint                  string            `json:"endpoint"`
	Table                     string            `json:"table"`
	FunctionName              string            `json:"-"`                   // AWS_LAMBDA_FUNCTION_NAME
	KeyPrefix                 string            `json:"keyPrefix,omitempty"` // empty: the function name
	EventKeyJMESPath          string            `json:"eventKeyJmesPath"`
	PayloadValidationJMESPath string            `json:"payloadValidationJmesPath,omitempty"`
	RemainingMs               int64             `json:"remainingMs,omitempty"`
	ReplayHeader              string            `json:"replayHeader,omitempty"` // a responseHook sets this header on replays
	Crash                     bool              `json:"crash,omitempty"`
	Events                    []json.RawMessage `json:"events"`
}

// HandlerReport is what handler.mjs saw.
type HandlerReport struct {
	Results []HandlerResult `json:"results"`
	Ran     []int           `json:"ran"`               // indices of the events whose handler ran
	Crashed *int            `json:"crashed,omitempty"` // the event whose handler exited the process
}

// HandlerResult is one event's outcome: the value the idempotent handler
// returned, or the name of the error it threw.
type HandlerResult struct {
	Status string          `json:"status"` // "success" or "fail"
	Value  json.RawMessage `json:"value,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// RunHandler runs handler.mjs in dir (the testdata folder) with req.
func RunHandler(ctx context.Context, dir string, req HandlerRequest) (HandlerReport, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return HandlerReport{}, err
	}
	cmd := exec.CommandContext(ctx, "node", "handler.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AWS_REGION=us-east-1", "AWS_LAMBDA_FUNCTION_NAME="+req.FunctionName, "POWERTOOLS_IDEMPOTENCY_DISABLED=false")
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return HandlerReport{}, fmt.Errorf("powertools: handler.mjs: %w\nstderr:\n%s", err, stderr.String())
	}
	var rep HandlerReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return HandlerReport{}, fmt.Errorf("powertools: report of handler.mjs %q: %w\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	return rep, nil
}
