// Command echo is the function of package runtimeapi's tests. It sleeps for
// the event's sleep_ms, then answers with what its invocation saw: the
// request id, deadline, tenant id, function ARN and trace id from
// lambdacontext and the context, and the process's AWS_LAMBDA_MAX_CONCURRENCY.
// An event with "fail" set returns an error with that message; one with
// "panic" set panics. Each invocation prints one JSON line to standard
// output and one plain line to standard error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Event is what a test sends.
type Event struct {
	SleepMS int    `json:"sleep_ms"`
	Fail    string `json:"fail"`
	Panic   bool   `json:"panic"`
}

// Response is what the function saw.
type Response struct {
	RequestID      string `json:"request_id"`
	DeadlineMS     int64  `json:"deadline_ms"`
	TenantID       string `json:"tenant_id"`
	FunctionARN    string `json:"function_arn"`
	TraceID        string `json:"trace_id"`
	MaxConcurrency int    `json:"max_concurrency"`
	PID            int    `json:"pid"`
	UID            int    `json:"uid"`
}

func handle(ctx context.Context, ev Event) (Response, error) {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return Response{}, errors.New("no lambdacontext")
	}
	resp := Response{
		RequestID:      lc.AwsRequestID,
		TenantID:       lc.TenantID,
		FunctionARN:    lc.InvokedFunctionArn,
		MaxConcurrency: lambdacontext.MaxConcurrency(),
		PID:            os.Getpid(),
		UID:            os.Getuid(),
	}
	if d, ok := ctx.Deadline(); ok {
		resp.DeadlineMS = d.UnixMilli()
	}
	resp.TraceID, _ = ctx.Value("x-amzn-trace-id").(string)
	line, _ := json.Marshal(map[string]string{"msg": "echo", "request_id": lc.AwsRequestID, "tenant_id": lc.TenantID})
	fmt.Println(string(line))
	fmt.Fprintln(os.Stderr, "echo: stderr of", lc.AwsRequestID)
	select {
	case <-time.After(time.Duration(ev.SleepMS) * time.Millisecond):
	case <-ctx.Done():
		return Response{}, ctx.Err()
	}
	if ev.Panic {
		panic("echo: asked to panic")
	}
	if ev.Fail != "" {
		return Response{}, errors.New(ev.Fail)
	}
	return resp, nil
}

func main() { lambda.Start(handle) }
