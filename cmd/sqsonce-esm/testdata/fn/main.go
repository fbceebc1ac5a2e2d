// Command fn is the function of sqsonce-esm's tests: it fails the records
// whose body starts with "fail", returns an error that quotes the record
// for a batch holding a body that starts with "error", and names a message
// id of no record of the batch for a body that starts with "bogus".
package main

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func handle(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		switch {
		case strings.HasPrefix(r.Body, "error"):
			return resp, errors.New("cannot handle " + r.Body)
		case strings.HasPrefix(r.Body, "bogus"):
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: "not-" + r.MessageId})
		case strings.HasPrefix(r.Body, "fail"):
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}

func main() { lambda.Start(handle) }
