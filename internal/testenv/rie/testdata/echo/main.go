// Command echo is the function of package rie's tests of concurrency and
// tenants: it sleeps for the event's sleep_ms, then answers with its
// request id, tenant id, AWS_LAMBDA_MAX_CONCURRENCY, process and user ids,
// and when its work started and ended (Unix ms).
package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	SleepMS int `json:"sleep_ms"`
}

type response struct {
	RequestID      string `json:"request_id"`
	TenantID       string `json:"tenant_id"`
	MaxConcurrency int    `json:"max_concurrency"`
	PID            int    `json:"pid"`
	UID            int    `json:"uid"`
	StartMS        int64  `json:"start_ms"`
	EndMS          int64  `json:"end_ms"`
}

func handle(ctx context.Context, ev event) (response, error) {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return response{}, errors.New("no lambdacontext")
	}
	start := time.Now()
	time.Sleep(time.Duration(ev.SleepMS) * time.Millisecond)
	return response{
		RequestID:      lc.AwsRequestID,
		TenantID:       lc.TenantID,
		MaxConcurrency: lambdacontext.MaxConcurrency(),
		PID:            os.Getpid(),
		UID:            os.Getuid(),
		StartMS:        start.UnixMilli(),
		EndMS:          time.Now().UnixMilli(),
	}, nil
}

func main() { lambda.Start(handle) }
