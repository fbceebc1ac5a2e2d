package batch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// retryOr fails a record whose body is "held" with an error that wraps an
// in-progress one (a key another invocation holds), and otherwise does
// what byBody does.
func retryOr(ctx context.Context, msg events.SQSMessage) (string, error) {
	if msg.Body == "held" {
		return "", fmt.Errorf("guard: %w", inProgress{at: time.Now().Add(time.Minute)})
	}
	return byBody(ctx, msg)
}

// TestSQSRoutineRetryIsNotAnError checks what a batch whose every record
// failed returns, by the kind of failures: a lone duplicate in progress
// elsewhere (and a FIFO group behind one) returns its response without an
// error by default, so that the function's Errors metric does not count a
// routine duplicate; any other failure among them returns a
// *FullBatchFailureError; AlwaysFullBatchError returns it for retries too,
// as Powertools does; NoFullBatchError never does. Every failed record is
// listed in each case.
func TestSQSRoutineRetryIsNotAnError(t *testing.T) {
	held := []events.SQSMessage{std("m1", "held")}
	heldFIFO := []events.SQSMessage{fifo("a1", "A", "held"), fifo("a2", "A", "ok"), fifo("b1", "B", "held")}
	mixed := []events.SQSMessage{std("m1", "held"), std("m2", "fail")}
	for _, tt := range []struct {
		name    string
		records []events.SQSMessage
		opts    Options
		wantErr bool
	}{
		{"a lone duplicate in progress", held, Options{}, false},
		{"in progress, and its FIFO group behind it", heldFIFO, Options{}, false},
		{"in progress and a real failure", mixed, Options{}, true},
		{"in progress, AlwaysFullBatchError", held, Options{AlwaysFullBatchError: true}, true},
		{"in progress and a real failure, NoFullBatchError", mixed, Options{NoFullBatchError: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Logger = quiet()
			resp, err := SQS(retryOr, opts)(t.Context(), events.SQSEvent{Records: tt.records})
			if got := errors.As(err, new(*FullBatchFailureError)); got != tt.wantErr || (!got && err != nil) {
				t.Fatalf("err = %v, want a *FullBatchFailureError: %v", err, tt.wantErr)
			}
			if len(resp.BatchItemFailures) != len(tt.records) {
				t.Errorf("response lists %d records, want all %d", len(resp.BatchItemFailures), len(tt.records))
			}
		})
	}
}

// TestStreamRoutineRetryIsNotAnError: the same rule for a stream handler.
func TestStreamRoutineRetryIsNotAnError(t *testing.T) {
	held := func(context.Context, events.KinesisEventRecord) (int, error) {
		return 0, inProgress{at: time.Now().Add(time.Minute)}
	}
	recs := []events.KinesisEventRecord{kin("1", "k", ""), kin("2", "k", "")}
	resp, err := Kinesis(held, StreamOptions{Logger: quiet()})(t.Context(), events.KinesisEvent{Records: recs})
	if err != nil || len(kinFailed(t, resp)) != 2 {
		t.Errorf("in progress: %+v, %v; want both records listed and no error", resp, err)
	}
	_, err = Kinesis(held, StreamOptions{Logger: quiet(), AlwaysFullBatchError: true})(t.Context(), events.KinesisEvent{Records: recs})
	if !errors.As(err, new(*FullBatchFailureError)) {
		t.Errorf("AlwaysFullBatchError: %v, want a *FullBatchFailureError", err)
	}
}

// TestFullBatchOptionsExclusive: the two options contradict each other.
func TestFullBatchOptionsExclusive(t *testing.T) {
	if err := (Options{NoFullBatchError: true, AlwaysFullBatchError: true}).Validate(); err == nil {
		t.Error("Options: both set validated")
	}
	if err := (StreamOptions{NoFullBatchError: true, AlwaysFullBatchError: true}).Validate(); err == nil {
		t.Error("StreamOptions: both set validated")
	}
}
