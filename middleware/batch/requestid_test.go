package batch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// TestSQSLinesNameTheirInvocation: invocations running at once in one
// process share one handler and one log; each line names the request id
// of the invocation whose record it is about.
func TestSQSLinesNameTheirInvocation(t *testing.T) {
	var logs syncBuffer
	fn := func(ctx context.Context, msg events.SQSMessage) (int, error) { return 0, errRecord }
	h := SQS(fn, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), NoFullBatchError: true})
	const invocations = 8
	var wg sync.WaitGroup
	for i := range invocations {
		wg.Go(func() {
			ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: fmt.Sprint("req-", i)})
			if _, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{std(fmt.Sprint("m-", i), "fail"), std(fmt.Sprint("n-", i), "fail")}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	lines := logLines(t, logs.buffer())
	if len(lines) != 2*invocations {
		t.Fatalf("%d lines, want %d", len(lines), 2*invocations)
	}
	for _, l := range lines {
		var n int
		if _, err := fmt.Sscanf(fmt.Sprint(l["messageId"])[2:], "%d", &n); err != nil {
			t.Fatalf("line %v: %v", l, err)
		}
		if want := fmt.Sprint("req-", n); l["request_id"] != want {
			t.Errorf("line %v: request_id %v, want %s", l, l["request_id"], want)
		}
	}
}

// TestSQSLinesWithoutLambdaContext: outside Lambda a line has no request_id.
func TestSQSLinesWithoutLambdaContext(t *testing.T) {
	var logs bytes.Buffer
	fn := func(ctx context.Context, msg events.SQSMessage) (int, error) { return 0, errRecord }
	if _, err := SQS(fn, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), NoFullBatchError: true})(t.Context(), events.SQSEvent{Records: []events.SQSMessage{std("m-1", "fail")}}); err != nil {
		t.Fatal(err)
	}
	lines := logLines(t, &logs)
	if len(lines) != 1 || lines[0]["request_id"] != nil {
		t.Errorf("lines %v: want one, without a request_id", lines)
	}
}
