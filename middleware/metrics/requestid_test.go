package metrics_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// TestBatchNamesTheInvocation: an invocation's EMF line carries its Lambda
// request id (invocations running at once share the process's output);
// outside Lambda there is none.
func TestBatchNamesTheInvocation(t *testing.T) {
	var buf bytes.Buffer
	rec, err := metrics.New(metrics.Config{Writer: &buf, Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	fn := rec.Batch(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	})
	const id = "8476a536-e9f4-11e8-9739-2dfe598c3fcd"
	ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: id})
	if _, err := fn(ctx, events.SQSEvent{}); err != nil {
		t.Fatal(err)
	}
	if root := line(t, buf.Bytes()); root["request_id"] != id {
		t.Errorf("line %s: want the invocation's request_id", buf.Bytes())
	}
	buf.Reset()
	if _, err := fn(t.Context(), events.SQSEvent{}); err != nil {
		t.Fatal(err)
	}
	if root := line(t, buf.Bytes()); root["request_id"] != nil {
		t.Errorf("line %s outside Lambda: want no request_id", buf.Bytes())
	}
}
