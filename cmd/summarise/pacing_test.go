package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
)

// received sends n copies of the fixture's message to a new queue on moto
// (visibility timeout 300 s) and returns them as Lambda would deliver them:
// real receipt handles, the queue's ARN.
func received(t *testing.T, client *sqs.Client, n int) (events.SQSEvent, esm.Queue) {
	t.Helper()
	q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "300"})
	tmpl := loadFixture(t, "duplicate-delivery.json").Records[0]
	for range n {
		if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(tmpl.Body)}); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, client, q.URL, n, 20*time.Second)
	if len(got) != n {
		t.Fatalf("received %d of %d messages", len(got), n)
	}
	var ev events.SQSEvent
	for id, handle := range got {
		r := tmpl
		r.MessageId, r.ReceiptHandle, r.EventSourceARN = id, handle, q.ARN
		ev.Records = append(ev.Records, r)
	}
	return ev, q
}

// receive receives until want messages came or within passed, and returns
// their receipt handles by message id.
func receive(t *testing.T, client *sqs.Client, url string, want int, within time.Duration) map[string]string {
	t.Helper()
	got := map[string]string{} // message id → receipt handle
	deadline := time.Now().Add(within)
	for len(got) < want && time.Now().Before(deadline) {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			got[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
		}
	}
	return got
}

// TestPacingWired runs the app's handler on messages received from moto's
// SQS, in an invocation with less time left than SQSONCE_MIN_REMAINING: no
// record starts, so pacing makes each visible again at once (timeout 0),
// through the *sqs.Client the app builds, although the queue's visibility
// timeout would hide them for five minutes. With SQSONCE_PACING=off they
// stay hidden.
func TestPacingWired(t *testing.T) {
	awsEnv(t)
	client := esm.SQSClient(t, moto)
	for _, tc := range []struct {
		pacing    string
		wantAgain int
	}{
		{"on", 2},
		{"off", 0},
	} {
		t.Run(tc.pacing, func(t *testing.T) {
			ev, q := received(t, client, 2)
			c, err := loadConfig(localEnv(map[string]string{envPacing: tc.pacing, envSQSEndpoint: moto.Endpoint(t)}), "", "")
			if err != nil {
				t.Fatal(err)
			}
			a, err := build(t.Context(), c, outputs{Logger: slog.New(slog.DiscardHandler), Metrics: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			defer a.close()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // below the default 90s margin
			defer cancel()
			resp, err := a.handle(ctx, ev)
			if !errors.As(err, new(*batch.FullBatchFailureError)) || len(resp.BatchItemFailures) != 2 || a.calls.Len() != 0 {
				t.Fatalf("resp = %+v, %v, %d provider calls; want both records failed, not started, and so the batch", resp, err, a.calls.Len())
			}
			within := 20 * time.Second
			if tc.wantAgain == 0 {
				within = 2 * time.Second // long enough for a change that was made to show
			}
			if again := receive(t, client, q.URL, 2, within); len(again) != tc.wantAgain {
				t.Errorf("SQSONCE_PACING=%s: %d messages delivered again, want %d", tc.pacing, len(again), tc.wantAgain)
			}
		})
	}
}

// TestDeadLetterWired runs the app's handler on a malformed message and a
// good one received from moto's SQS: with SQSONCE_DEAD_LETTER=on the
// malformed one is in the queue's dead-letter queue after this one receive,
// with its reason, and gone from the queue; the good one ran.
func TestDeadLetterWired(t *testing.T) {
	awsEnv(t)
	client := esm.SQSClient(t, moto)
	dlq := esm.NewQueue(t, client, nil)
	q := esm.NewQueue(t, client, map[string]string{
		"VisibilityTimeout": "300", "RedrivePolicy": `{"deadLetterTargetArn":"` + dlq.ARN + `","maxReceiveCount":5}`,
	})
	good := loadFixture(t, "duplicate-delivery.json").Records[0]
	for _, body := range []string{good.Body, `{"idempotency_key": "sum-1", "document": {`} {
		if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	var ev events.SQSEvent
	for len(ev.Records) < 2 {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
				Body: aws.ToString(m.Body), Attributes: m.Attributes, EventSourceARN: q.ARN, EventSource: "aws:sqs"})
		}
	}
	c, err := loadConfig(localEnv(map[string]string{envDeadLetter: "on", envSQSEndpoint: moto.Endpoint(t)}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := build(t.Context(), c, outputs{Logger: slog.New(slog.DiscardHandler), Metrics: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // above the default 90s margin
	defer cancel()
	resp, err := a.handle(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 || a.calls.Len() != 1 {
		t.Fatalf("resp = %+v, %v, %d provider calls; want the good record run and the malformed one moved", resp, err, a.calls.Len())
	}
	out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 2,
		MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].MessageAttributes[sqsdlq.AttrErrorType].StringValue) != "*idempotency.BodyError" {
		t.Fatalf("dead-letter queue holds %+v, want the malformed message with its reason", out.Messages)
	}
	if reason := aws.ToString(out.Messages[0].MessageAttributes[sqsdlq.AttrReason].StringValue); strings.Contains(reason, "sum-1") {
		t.Errorf("reason %q quotes the message's content", reason)
	}
	if !emptyQueue(t, client, q.URL) {
		t.Error("the source queue still holds a message: the moved one was not deleted")
	}
}

// emptyQueue reports whether the queue holds no message, visible or in
// flight.
func emptyQueue(t *testing.T, client *sqs.Client, url string) bool {
	t.Helper()
	a, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The good record is not deleted by the handler (Lambda would): one
	// in flight.
	return a.Attributes["ApproximateNumberOfMessages"] == "0" && a.Attributes["ApproximateNumberOfMessagesNotVisible"] == "1"
}
