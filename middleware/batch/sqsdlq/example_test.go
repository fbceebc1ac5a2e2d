package sqsdlq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
)

// printingSQS stands in for *sqs.Client: it prints each call.
type printingSQS struct{}

func (printingSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	fmt.Println("GetQueueAttributes", aws.ToString(in.QueueUrl))
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:123456789012:orders-dlq","maxReceiveCount":5}`,
	}}, nil
}

func (printingSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	fmt.Println("SendMessage", aws.ToString(in.QueueUrl), aws.ToString(in.MessageAttributes[sqsdlq.AttrErrorType].StringValue))
	return &sqs.SendMessageOutput{}, nil
}

func (printingSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	fmt.Println("DeleteMessage", aws.ToString(in.ReceiptHandle))
	return &sqs.DeleteMessageOutput{}, nil
}

// A batch of three: one succeeds, one fails for good and goes to the
// dead-letter queue at once, one fails for now and is retried by SQS. In
// main, pass sqs.NewFromConfig(cfg) instead of the printing stand-in.
func Example() {
	mover, err := sqsdlq.New(printingSQS{})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := batch.SQS(func(_ context.Context, m events.SQSMessage) (struct{}, error) {
		switch m.Body {
		case "declined":
			return struct{}{}, batch.Permanent(errors.New("card declined"))
		case "timeout":
			return struct{}{}, errors.New("payment provider timed out")
		}
		return struct{}{}, nil
	}, batch.Options{Logger: slog.New(slog.DiscardHandler), DeadLetter: batch.DeadLetter{Mover: mover}})

	record := func(id, body string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body,
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{
		record("m1", "ok"), record("m2", "declined"), record("m3", "timeout"),
	}})
	fmt.Println("failed:", resp.BatchItemFailures, err)
	// Output:
	// GetQueueAttributes https://sqs.eu-west-1.amazonaws.com/123456789012/orders
	// SendMessage https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq *errors.errorString
	// DeleteMessage rh-m2
	// failed: [{m3}] <nil>
}
