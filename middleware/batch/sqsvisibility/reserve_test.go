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

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
)

// slowAPI delays every call by delay (less if its context ends first) and
// records whether a call reached the server after its context had ended.
type slowAPI struct {
	sqsvisibility.API
	delay time.Duration

	mu       sync.Mutex
	sent     int
	sentLate int // calls forwarded with their context already done
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
	s.mu.Unlock()
	return s.API.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

// TestDeadlineMidPacing runs the batch handler with the real Changer on
// moto's SQS, one slow call at a time, under a deadline that lands while it
// paces: the handler returns before the deadline, the calls made in time
// are applied, the others are not sent, and the messages whose change was
// not applied keep the queue's visibility timeout.
func TestDeadlineMidPacing(t *testing.T) {
	client := moto.SQS(t)
	q := motoserver.NewQueue(t, client, map[string]string{"VisibilityTimeout": "300"})
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
	for _, m := range received {
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
	api.mu.Unlock()
	if late != 0 {
		t.Errorf("%d calls reached SQS after the records' deadline", late)
	}
	// The applied changes (1 s) bring their messages back; the others keep
	// the queue's 300 s.
	again := receiveAll(t, client, q.URL, nApplied, 15*time.Second)
	if len(again) != nApplied {
		t.Errorf("%d messages came back, want the %d whose change was applied", len(again), nApplied)
	}
	for _, m := range again {
		if !applied[aws.ToString(m.MessageId)] {
			t.Errorf("message %s came back, but its change was cut short", aws.ToString(m.MessageId))
		}
	}
	if more := receiveAll(t, client, q.URL, 1, 2*time.Second); len(more) != 0 {
		t.Errorf("%d more messages came back: their change was not applied", len(more))
	}
}
