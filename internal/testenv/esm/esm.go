package esm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Mapping is an SQS event source mapping's settings, as Lambda's
// GetEventSourceMapping reports them, and the queue's URL on the endpoint
// the poller talks to.
type Mapping struct {
	QueueURL string // where to receive and delete
	QueueARN string // the event's eventSourceARN; its region is the event's awsRegion

	// BatchSize is the most records an invocation gets. Default 10.
	BatchSize int
	// MaxBatchingWindow is how long a batch is gathered after its first
	// record, unless it fills first. Zero: what one receive returns.
	MaxBatchingWindow time.Duration
	// MaxConcurrency is the most invocations at once (ScalingConfig's
	// MaximumConcurrency). Default: one per Invoker.
	MaxConcurrency int
}

// API is the part of the SQS client the poller calls; *sqs.Client has it.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Invoker runs the function on one event, one invocation at a time. An
// error is a failed invocation (a function error, a timeout): no record of
// the batch is deleted.
type Invoker interface {
	Invoke(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)
}

// InvokerFunc is an [Invoker] made of a function, such as a batch handler
// run in process.
type InvokerFunc func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return f(ctx, ev)
}

// SystemAttributes are the message system attributes Lambda puts in an SQS
// event's "attributes", when SQS returns them.
var SystemAttributes = []sqstypes.MessageSystemAttributeName{
	sqstypes.MessageSystemAttributeNameApproximateReceiveCount,
	sqstypes.MessageSystemAttributeNameSentTimestamp,
	sqstypes.MessageSystemAttributeNameSenderId,
	sqstypes.MessageSystemAttributeNameApproximateFirstReceiveTimestamp,
	sqstypes.MessageSystemAttributeNameSequenceNumber,
	sqstypes.MessageSystemAttributeNameMessageGroupId,
	sqstypes.MessageSystemAttributeNameMessageDeduplicationId,
	sqstypes.MessageSystemAttributeNameAWSTraceHeader,
}

// Event returns the SQS event Lambda delivers for msgs, received from the
// queue queueARN.
func Event(queueARN string, msgs []sqstypes.Message) events.SQSEvent {
	region := ""
	if parts := strings.Split(queueARN, ":"); len(parts) > 3 {
		region = parts[3]
	}
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, m := range msgs {
		attrs := make(map[string]string, len(m.Attributes))
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		mattrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			a := events.SQSMessageAttribute{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: v.StringListValues,
				BinaryListValues: v.BinaryListValues,
				DataType:         aws.ToString(v.DataType),
			}
			if a.StringListValues == nil {
				a.StringListValues = []string{}
			}
			if a.BinaryListValues == nil {
				a.BinaryListValues = [][]byte{}
			}
			mattrs[k] = a
		}
		ev.Records[i] = events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             attrs,
			MessageAttributes:      mattrs,
			EventSourceARN:         queueARN,
			EventSource:            "aws:sqs",
			AWSRegion:              region,
		}
	}
	return ev
}

// ErrBadResponse is returned by [Acknowledged] when a partial batch
// response names an empty itemIdentifier or one that is not in the batch:
// Lambda then fails the whole batch.
var ErrBadResponse = errors.New("esm: batch item failure names no record of the batch")

// Acknowledged returns the records of ev that resp acknowledges, as Lambda
// reads a partial batch response (ReportBatchItemFailures on): every record
// that no batch item failure names. It returns none and [ErrBadResponse]
// if a failure names an empty or unknown itemIdentifier.
func Acknowledged(ev events.SQSEvent, resp events.SQSEventResponse) ([]events.SQSMessage, error) {
	in := make(map[string]bool, len(ev.Records))
	for _, r := range ev.Records {
		in[r.MessageId] = true
	}
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier == "" || !in[f.ItemIdentifier] {
			return nil, ErrBadResponse
		}
		failed[f.ItemIdentifier] = true
	}
	var acked []events.SQSMessage
	for _, r := range ev.Records {
		if !failed[r.MessageId] {
			acked = append(acked, r)
		}
	}
	return acked, nil
}

// Delete deletes msgs from the queue at queueURL, ten to a
// DeleteMessageBatch call. It returns the errors of the calls and of the
// entries SQS refused, joined.
func Delete(ctx context.Context, api API, queueURL string, msgs []events.SQSMessage) error {
	var errs []error
	for start := 0; start < len(msgs); start += 10 {
		chunk := msgs[start:min(start+10, len(msgs))]
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(m.ReceiptHandle)}
		}
		out, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if err != nil {
			errs = append(errs, fmt.Errorf("esm: delete %d messages: %w", len(chunk), err))
			continue
		}
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			if i >= 0 && i < len(chunk) {
				errs = append(errs, fmt.Errorf("esm: delete message %s: %s: %s", chunk[i].MessageId, aws.ToString(f.Code), aws.ToString(f.Message)))
			}
		}
	}
	return errors.Join(errs...)
}
