// Command fn is the function of package rie's tests: it fails the records
// whose body is $FAIL_BODY, returns an error for a record whose body is
// "error", and outlives its deadline for a record whose body is "hang".
package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		switch r.Body {
		case "error":
			return resp, errors.New("asked to fail")
		case "hang":
			time.Sleep(time.Hour)
		case os.Getenv("FAIL_BODY"):
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}

func main() { lambda.Start(handle) }
