package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// TestRedriveMismatch: the function validates the payload (WithPayload,
// the amount) and completes order o-1; a second message, o-1 with another
// amount, fails with a payload mismatch, and the batch handler's sqsdlq
// mover puts it in the dead-letter queue with its sqsonce.* attributes.
// Redrive does not class it replay (it did, and sent it back to fail
// again): it is "mismatch", counted with those that fail again, and its
// real redelivery fails again without running the operation. A message
// of that record that SQS moved (no sqsonce.* attributes) is classed
// replay, the description saying that the tool cannot check the record's
// payload digest.
func TestRedriveMismatch(t *testing.T) {
	const classMismatch = "mismatch" // spelled here, so that the test builds without the class
	env, store, _, _ := dynamoEnv(t, "orders")
	env = maps.Clone(env)
	env[envKey] = "body:order_id"
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	fn := idempotency.Wrap(g, idempotency.BodyField("order_id"), func(context.Context, events.SQSMessage) (string, error) { ran++; return "receipt", nil },
		idempotency.WithPayload(idempotency.BodyField("amount_cents")))
	q := newQueues(t)
	ctx := context.Background()
	arns := map[string]string{q.dlq.ARN: q.dlq.URL}
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.source.URL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	sourceARN := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	arns[sourceARN] = q.source.URL
	mover, err := sqsdlq.New(q.client, sqsdlq.WithQueueURL(func(arn string) (string, error) {
		if u, ok := arns[arn]; ok {
			return u, nil
		}
		return "", fmt.Errorf("no URL for %s", arn)
	}))
	if err != nil {
		t.Fatal(err)
	}
	var fnErr error
	h := batch.SQS(func(ctx context.Context, m events.SQSMessage) (string, error) {
		r, err := fn(ctx, m)
		fnErr = err
		return r, err
	}, batch.Options{MinRemaining: time.Second, Logger: slog.New(slog.DiscardHandler), DeadLetter: batch.DeadLetter{Mover: mover}})
	// deliver sends body to the queue and runs the function on it as
	// Lambda does: a message it completes is deleted, one it fails
	// permanently is moved by sqsdlq.
	deliver := func(body string) error {
		t.Helper()
		if body != "" {
			if _, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.source.URL), MessageBody: aws.String(body)}); err != nil {
				t.Fatal(err)
			}
		}
		rcv, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.source.URL), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: 30, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: esm.SystemAttributes})
		if err != nil {
			t.Fatal(err)
		}
		if len(rcv.Messages) != 1 {
			t.Fatalf("%d messages in the queue, want 1", len(rcv.Messages))
		}
		ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := h(ictx, esm.Event(sourceARN, rcv.Messages))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) == 0 && fnErr == nil { // a failure sqsdlq moved is deleted already
			if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.source.URL), ReceiptHandle: rcv.Messages[0].ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		return fnErr
	}
	first := `{"order_id":"o-1","amount_cents":1299}`
	second := `{"order_id":"o-1","amount_cents":5}`
	if err := deliver(first); err != nil || ran != 1 {
		t.Fatalf("the first order: ran %d, %v", ran, err)
	}
	if err := deliver(second); !errors.Is(err, idempotency.ErrPayloadMismatch) || ran != 1 {
		t.Fatalf("the second message: ran %d, %v; want %v", ran, err, idempotency.ErrPayloadMismatch)
	}
	// sqsdlq moved it, with its attributes.
	moved := q.drain(t, q.dlq.URL)
	if len(moved) != 1 || aws.ToString(moved[0].Body) != second ||
		aws.ToString(moved[0].MessageAttributes[sqsdlq.AttrErrorType].StringValue) != "*idempotency.PayloadMismatchError" {
		t.Fatalf("the dead-letter queue holds %+v, want the second message with sqsdlq's attributes", moved)
	}
	mismatchID := sendToDLQ(t, q, second, moved[0].MessageAttributes)
	// The first message, and the second, as SQS moves them after
	// maxReceiveCount: no sqsonce.* attribute.
	replayID := sendToDLQ(t, q, first, nil)
	unflaggedID := sendToDLQ(t, q, second, nil)

	got := dryRunClasses(t, env, q)
	if m := got[mismatchID]; m.Class != classMismatch || m.RecordID == "" {
		t.Errorf("the message sqsdlq moved for a payload mismatch: class %q (%s), want %q", m.Class, m.Problem, classMismatch)
	}
	for _, id := range []string{replayID, unflaggedID} {
		if m := got[id]; m.Class != classReplay || !strings.Contains(m.Problem, "payload digest") || !strings.Contains(m.Problem, "cannot check") {
			t.Errorf("a message SQS moved, of a record with a payload digest: class %q, problem %q; want %q, saying the digest cannot be checked", m.Class, m.Problem, classReplay)
		}
	}
	text := cli(t, env, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s", "--dry-run").want(t, exitOK).stdout
	for _, want := range []string{"   1 payload mismatch", "1 of them to fail again", "cannot check"} {
		if !strings.Contains(text, want) {
			t.Errorf("redrive --dry-run's text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "1299") || strings.Contains(text, `"amount_cents":5`) {
		t.Errorf("redrive's text quotes a message:\n%s", text)
	}

	// The redelivery of the mismatch, as redrive sends it: it fails again
	// and the operation does not run, as classed.
	q.drain(t, q.dlq.URL)
	sendToDLQ(t, q, second, moved[0].MessageAttributes)
	cli(t, env, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s").want(t, exitOK)
	if err := deliver(""); !errors.Is(err, idempotency.ErrPayloadMismatch) || ran != 1 {
		t.Errorf("the redelivery of the mismatch: ran %d, %v; want it failed with %v, not run", ran, err, idempotency.ErrPayloadMismatch)
	}
	_ = q.drain(t, q.dlq.URL)
}
