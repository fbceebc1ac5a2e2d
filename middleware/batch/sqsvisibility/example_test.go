package sqsvisibility_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
)

// printingSQS stands in for *sqs.Client: it prints each call.
type printingSQS struct{}

func (printingSQS) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	fmt.Printf("%s: %d entries\n", aws.ToString(in.QueueUrl), len(in.Entries))
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// A batch of 25 records that all fail: their visibility changes go out in
// calls of ten, to the queue URL derived from the records' ARN. In main,
// pass sqs.NewFromConfig(cfg) instead of the printing stand-in.
func Example() {
	changer, err := sqsvisibility.New(printingSQS{}, sqsvisibility.WithConcurrency(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	h := batch.SQS(func(context.Context, events.SQSMessage) (struct{}, error) {
		return struct{}{}, fmt.Errorf("model unavailable")
	}, batch.Options{Logger: slog.New(slog.DiscardHandler), Pacing: batch.Pacing{Changer: changer}})

	var ev events.SQSEvent
	for i := range 25 {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: fmt.Sprint("m", i), ReceiptHandle: fmt.Sprint("rh", i),
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:summarise",
			Attributes:     map[string]string{"ApproximateReceiveCount": "1"},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, _ := h(ctx, ev)
	fmt.Println("failed:", len(resp.BatchItemFailures))
	// Output:
	// https://sqs.eu-west-1.amazonaws.com/123456789012/summarise: 10 entries
	// https://sqs.eu-west-1.amazonaws.com/123456789012/summarise: 10 entries
	// https://sqs.eu-west-1.amazonaws.com/123456789012/summarise: 5 entries
	// failed: 25
}
