package sqsvisibility_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
)

// slowAPI delays every call by delay (less if its context ends first) and
// records whether a call reached the server after its context had ended.
type slowAPI struct {
	sqsvisibility.API
	delay time.Duration

	mu        sync.Mutex
	sent      int
	sentLate  int             // calls forwarded with their context already done
	forwarded map[string]bool // receipt handles of the entries forwarded
}

func (s *slowAPI) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	s.sent++
	if ctx.Err() != nil {
		s.sentLate++
	}
	if s.forwarded == nil {
		s.forwarded = map[string]bool{}
	}
	for _, e := range in.Entries {
		s.forwarded[aws.ToString(e.ReceiptHandle)] = true
	}
	s.mu.Unlock()
	return s.API.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

// TestDeadlineMidPacing runs the batch handler with the real Changer on
// moto's SQS, one slow call at a time, under a deadline that lands while it
// paces: the handler returns before the deadline, the calls made in time
// are applied, the others are not sent, and the messages whose change was
// not sent keep the queue's visibility timeout. A call sent in time whose
// answer the deadline cut short may or may not have been applied (SQS got
// it): its messages may come back, and only those.
func TestDeadlineMidPacing(t *testing.T) {
	client := esm.SQSClient(t, moto)
	q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "300"})
	ctx := t.Context()
	const n = 35 // four calls of at most ten
	for i := range n {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(fmt.Sprintf("body-%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	received := receiveAll(t, client, q.URL, n, 30*time.Second)
	if len(received) != n {
		t.Fatalf("received %d of %d messages", len(received), n)
	}
	var recs []events.SQSMessage
	handle := map[string]string{} // message id → receipt handle
	for _, m := range received {
		handle[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
		recs = append(recs, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSourceARN: q.ARN, EventSource: "aws:sqs",
		})
	}

	api := &slowAPI{API: client, delay: 300 * time.Millisecond}
	changer, err := sqsvisibility.New(api, sqsvisibility.WithConcurrency(1), sqsvisibility.WithQueueURL(func(string) (string, error) { return q.URL, nil }))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	applied, cut := map[string]bool{}, 0
	const reserve = 500 * time.Millisecond
	h := batch.SQS(func(context.Context, events.SQSMessage) (struct{}, error) { return struct{}{}, errors.New("fails") }, batch.Options{
		Concurrency: 1, MinRemaining: time.Nanosecond, Reserve: reserve, Logger: slog.New(slog.DiscardHandler),
		Pacing: batch.Pacing{Changer: changer, Base: time.Second, Cap: time.Second, Jitter: 1e-9,
			OnChange: func(_ context.Context, c batch.VisibilityChange, err error) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					applied[c.MessageID] = true
				case errors.Is(err, context.DeadlineExceeded):
					cut++
				default:
					t.Errorf("change of %s: %v", c.MessageID, err)
				}
			}},
	})
	// 1.5 s: records and calls may run for 1 s; four calls take 1.2 s.
	deadline := time.Now().Add(3 * reserve)
	ictx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	resp, err := h(ictx, events.SQSEvent{Records: recs})
	if returned := time.Now(); !returned.Before(deadline) {
		t.Errorf("the handler returned %v after the invocation's deadline", returned.Sub(deadline))
	}
	if !errors.As(err, new(*batch.FullBatchFailureError)) || len(resp.BatchItemFailures) != n {
		t.Fatalf("response %d failures, err %v; want every record failed, and so the batch", len(resp.BatchItemFailures), err)
	}
	mu.Lock()
	nApplied, nCut := len(applied), cut
	mu.Unlock()
	if nApplied == 0 || nCut == 0 || nApplied+nCut != n {
		t.Fatalf("%d changes applied, %d cut short, of %d: want some of each (the deadline lands mid-pacing)", nApplied, nCut, n)
	}
	api.mu.Lock()
	late := api.sentLate
	forwarded := api.forwarded
	api.mu.Unlock()
	if late != 0 {
		t.Errorf("%d calls reached SQS after the records' deadline", late)
	}
	// The applied changes (1 s) bring their messages back; those whose
	// call was never sent keep the queue's 300 s. A call sent in time and
	// cut short while SQS answered may have been applied: in doubt.
	inDoubt := 0
	for id, h := range handle {
		if !applied[id] && forwarded[h] {
			inDoubt++
		}
	}
	again := receiveAll(t, client, q.URL, nApplied+inDoubt, 15*time.Second)
	back := map[string]bool{}
	for _, m := range again {
		id := aws.ToString(m.MessageId)
		back[id] = true
		if !applied[id] && !forwarded[handle[id]] {
			t.Errorf("message %s came back, but its change was never sent", id)
		}
	}
	for id := range applied {
		if !back[id] {
			t.Errorf("message %s did not come back, but its change was applied", id)
		}
	}
	if more := receiveAll(t, client, q.URL, 1, 2*time.Second); len(more) != 0 {
		t.Errorf("%d more messages came back: their change was never sent", len(more))
	}
}
