// Command threeseconds is the function of package batch's emulator test: a
// handler built with batch.Options{} whose records each take the
// milliseconds in their body, run under Lambda's default 3 s timeout.
package main

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

func record(ctx context.Context, m events.SQSMessage) (struct{}, error) {
	ms, err := strconv.Atoi(m.Body)
	if err != nil {
		return struct{}{}, batch.Permanent(err)
	}
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return struct{}{}, nil
	case <-ctx.Done():
		return struct{}{}, ctx.Err()
	}
}

func main() { lambda.StartHandlerFunc(batch.SQS(record, batch.Options{})) }
