package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

// One record of three fails: only its messageId is reported, so SQS deletes
// the other two and delivers it again.
func ExampleSQS() {
	handle := func(ctx context.Context, msg events.SQSMessage) (int, error) {
		if msg.Body == "" {
			return 0, errors.New("empty body")
		}
		return len(msg.Body), nil
	}
	h := batch.SQS(handle, batch.Options{Logger: slog.New(slog.DiscardHandler)})

	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: "hello"},
		{MessageId: "m2", Body: ""},
		{MessageId: "m3", Body: "world"},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":"m2"}]}
}

// In a FIFO queue a failure stops the rest of its message group; the other
// groups are not affected.
func ExampleSQS_fifo() {
	handle := func(ctx context.Context, msg events.SQSMessage) (struct{}, error) {
		if msg.Body == "bad" {
			return struct{}{}, errors.New("bad order line")
		}
		return struct{}{}, nil
	}
	record := func(id, group, body string) events.SQSMessage {
		return events.SQSMessage{
			MessageId:      id,
			Body:           body,
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders.fifo",
			Attributes:     map[string]string{"MessageGroupId": group},
		}
	}
	h := batch.SQS(handle, batch.Options{Logger: slog.New(slog.DiscardHandler)})

	resp, _ := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		record("a1", "customer-a", "ok"),
		record("a2", "customer-a", "bad"),
		record("b1", "customer-b", "ok"),
		record("a3", "customer-a", "ok"), // not attempted: a2 failed before it
		record("b2", "customer-b", "ok"),
	}})
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":"a2"},{"itemIdentifier":"a3"}]}
}

// OnRecord sees every outcome, for metrics; it runs concurrently.
func ExampleOptions_onRecord() {
	var ok, failed atomic.Int64
	opts := batch.Options{
		Logger: slog.New(slog.DiscardHandler),
		OnRecord: func(ctx context.Context, msg events.SQSMessage, err error) {
			if err != nil {
				failed.Add(1)
				return
			}
			ok.Add(1)
		},
	}
	handle := func(ctx context.Context, msg events.SQSMessage) (string, error) {
		if msg.Body == "panic" {
			panic("unexpected input")
		}
		return msg.Body, nil
	}
	h := batch.SQS(handle, opts)

	_, _ = h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: "a"},
		{MessageId: "m2", Body: "panic"},
		{MessageId: "m3", Body: "b"},
	}})
	fmt.Println("succeeded:", ok.Load(), "failed:", failed.Load())
	// Output:
	// succeeded: 2 failed: 1
}

// Validate reports a bad configuration as an error; SQS would panic on it.
func ExampleOptions_Validate() {
	err := batch.Options{Concurrency: -1}.Validate()
	fmt.Println(err)
	// Output:
	// batch: Options.Concurrency must not be negative, got -1
}

// The handler's type is what lambda.StartHandlerFunc expects. (This example
// is compiled, not run: it would start the Lambda runtime loop.)
func ExampleSQS_lambda() {
	handle := func(ctx context.Context, msg events.SQSMessage) (string, error) {
		return "summary of " + msg.Body, nil
	}
	lambda.StartHandlerFunc(batch.SQS(handle, batch.Options{
		Concurrency: 4,
		Logger:      slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	}))
}

// printChanges is a VisibilityChanger that prints the changes it is asked
// for; in production, sqsvisibility.New(sqsClient) makes the calls.
type printChanges struct{}

func (printChanges) ChangeVisibility(_ context.Context, changes []batch.VisibilityChange) []error {
	for _, c := range changes {
		// The timeouts are jittered: print them coarsely.
		fmt.Printf("%s: visible again in about %v\n", c.MessageID, c.Timeout.Round(10*time.Second))
	}
	return nil
}

// heldError is the error of a record whose key another worker holds until
// a known time, as idempotency.InProgressError is.
type heldError struct{ until time.Time }

func (e heldError) Error() string      { return "in progress elsewhere" }
func (e heldError) RetryAt() time.Time { return e.until }

// With Pacing, a record whose key is held elsewhere comes back just after
// the holder's lease ends, and any other failure backs off by its receive
// count, instead of both waiting for the queue's visibility timeout.
func ExampleSQS_pacing() {
	handle := func(ctx context.Context, msg events.SQSMessage) (struct{}, error) {
		switch msg.Body {
		case "held":
			return struct{}{}, heldError{until: time.Now().Add(3 * time.Minute)}
		case "bad":
			return struct{}{}, errors.New("model unavailable")
		}
		return struct{}{}, nil
	}
	h := batch.SQS(handle, batch.Options{
		Concurrency: 1,
		Logger:      slog.New(slog.DiscardHandler),
		Pacing:      batch.Pacing{Changer: printChanges{}},
	})
	record := func(id, body, receives string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Body: body, ReceiptHandle: "rh-" + id,
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:jobs",
			Attributes:     map[string]string{"ApproximateReceiveCount": receives}}
	}
	resp, _ := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		record("m1", "ok", "1"), record("m2", "held", "1"), record("m3", "bad", "1"),
	}})
	fmt.Println("failed:", len(resp.BatchItemFailures))
	// Output:
	// m2: visible again in about 3m0s
	// m3: visible again in about 10s
	// failed: 2
}

// The records of one partition key run in order. Here customer-a's second
// record fails, so its third is not started (Lambda delivers both again,
// from the lowest sequence number listed); customer-b carries on.
func ExampleKinesis() {
	handle := func(ctx context.Context, r events.KinesisEventRecord) (struct{}, error) {
		if string(r.Kinesis.Data) == `{"amount":-1}` {
			return struct{}{}, errors.New("negative amount")
		}
		return struct{}{}, nil
	}
	record := func(seq, key, data string) events.KinesisEventRecord {
		return events.KinesisEventRecord{EventID: "shardId-000000000000:" + seq, EventSourceArn: "arn:aws:kinesis:eu-west-1:123456789012:stream/orders",
			Kinesis: events.KinesisRecord{SequenceNumber: seq, PartitionKey: key, Data: []byte(data)}}
	}
	h := batch.Kinesis(handle, batch.StreamOptions{Logger: slog.New(slog.DiscardHandler)})

	resp, err := h(context.Background(), events.KinesisEvent{Records: []events.KinesisEventRecord{
		record("101", "customer-a", `{"amount":5}`),
		record("102", "customer-a", `{"amount":-1}`),
		record("103", "customer-b", `{"amount":7}`),
		record("104", "customer-a", `{"amount":3}`), // not started: 102 failed before it
	}})
	out, _ := json.Marshal(resp)
	fmt.Println(string(out), err)
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":"102"},{"itemIdentifier":"104"}]} <nil>
}

// A DynamoDB stream's records run in order per item (its key attributes);
// other items run concurrently. (This example is compiled, not run: it
// would start the Lambda runtime loop.)
func ExampleDynamoDBStream() {
	handle := func(ctx context.Context, r events.DynamoDBEventRecord) (struct{}, error) {
		if r.EventName == "REMOVE" {
			return struct{}{}, nil // nothing to index
		}
		_ = r.Change.NewImage["status"].String() // index the new image
		return struct{}{}, nil
	}
	lambda.StartHandlerFunc(batch.DynamoDBStream(handle, batch.StreamOptions{Concurrency: 4}))
}
