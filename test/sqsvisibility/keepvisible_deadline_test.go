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

// lateAnswerAPI forwards every call to SQS at once, so that its changes
// are applied, but answers those with an entry above a second (the
// keeper's, here) only after delay or when their context ends: SQS got
// the change, its answer is slow.
type lateAnswerAPI struct {
	sqsvisibility.API
	delay time.Duration
}

func (s *lateAnswerAPI) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out, err := s.API.ChangeMessageVisibilityBatch(context.WithoutCancel(ctx), in, optFns...)
	if err != nil || in.Entries[0].VisibilityTimeout <= 1 {
		return out, err
	}
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// receiveOne receives the message of q, one delivery, as Lambda's event
// source mapping would, and returns it as a record.
func receiveOne(t *testing.T, client *sqs.Client, q esm.Queue) events.SQSMessage {
	t.Helper()
	if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("long")}); err != nil {
		t.Fatal(err)
	}
	m, ok := receiveAll(t, client, q.URL, 1, 10*time.Second)["long"]
	if !ok {
		t.Fatal("the message was not received")
	}
	return events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), EventSourceARN: q.ARN, EventSource: "aws:sqs",
		Attributes: map[string]string{"ApproximateReceiveCount": "1"}, Body: "long"}
}

// TestMotoKeepVisibleDoesNotHoldResponse: on moto's SQS, through the real
// Changer, with a slow ChangeMessageVisibilityBatch, at Lambda's 3 s
// timeout with the queue's visibility timeout 3 s (which Lambda accepts),
// a change keeping the message invisible that is in flight when the
// record finishes does not hold the response: the handler returns by the
// records' deadline (2.5 s), well before Lambda's. It used to wait for the
// change, up to Every, and return at about 3.33 s (default Every; 10 of 12
// runs on the real clock), or 3.6 s (Every 1.2 s), so that the whole
// response was lost.
func TestMotoKeepVisibleDoesNotHoldResponse(t *testing.T) {
	client := esm.SQSClient(t, moto)
	const invocation = 3 * time.Second
	recordsDeadline := invocation - batch.DefaultReserve
	const slack = 300 * time.Millisecond // the handler's own work, on a loaded host under -race

	// The record's context ends at the records' deadline, just as a tick
	// (every 833 ms) starts a change that never gets its answer: several
	// runs, since the real clock decides which comes first.
	for run := range 4 {
		t.Run(fmt.Sprintf("default Every, record cut at the records' deadline, run %d", run), func(t *testing.T) {
			t.Parallel()
			q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "3"})
			msg := receiveOne(t, client, q)
			api := &slowAPI{API: client, delay: time.Minute}
			changer, err := sqsvisibility.New(api)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), invocation)
			defer cancel()
			fn := func(ctx context.Context, _ events.SQSMessage) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			}
			h := batch.SQS(fn, batch.Options{Logger: slog.New(slog.DiscardHandler), Pacing: batch.Pacing{Changer: changer},
				KeepVisible: batch.KeepVisible{QueueTimeout: invocation}})
			resp, _ := h(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
			took := time.Since(start)
			t.Logf("returned after %v", took)
			if took > recordsDeadline+slack {
				t.Errorf("the handler returned %v after its start, want by the records' deadline, %v (Lambda's is %v)", took, recordsDeadline, invocation)
			}
			if len(resp.BatchItemFailures) != 1 {
				t.Errorf("failures %+v, want the record cut at its deadline", resp.BatchItemFailures)
			}
		})
	}

	// The keeper's change at 2.4 s is applied but its answer is slow; the
	// record fails at 2.45 s: the handler returns then, and pacing's
	// change (1 s), made after the keeper's, is the one the message
	// keeps: it comes back about 3.45 s after the start, before the
	// keeper's change (to 4 s, whole seconds, from 2.4 s) would let it.
	t.Run("Every 1200ms, record fails at 2450ms, the keeper's change applied late", func(t *testing.T) {
		t.Parallel()
		q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "3"})
		msg := receiveOne(t, client, q)
		changer, err := sqsvisibility.New(&lateAnswerAPI{API: client, delay: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var paced []error
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), invocation)
		defer cancel()
		fn := func(ctx context.Context, _ events.SQSMessage) (string, error) {
			select {
			case <-time.After(2450 * time.Millisecond):
				return "", errors.New("fails")
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		h := batch.SQS(fn, batch.Options{Logger: slog.New(slog.DiscardHandler),
			Pacing: batch.Pacing{Changer: changer, Base: time.Second, Cap: time.Second, Jitter: 1e-9,
				OnChange: func(_ context.Context, _ batch.VisibilityChange, err error) {
					mu.Lock()
					paced = append(paced, err)
					mu.Unlock()
				}},
			KeepVisible: batch.KeepVisible{Every: 1200 * time.Millisecond, QueueTimeout: invocation}})
		resp, _ := h(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
		took := time.Since(start)
		t.Logf("returned after %v", took)
		if took > 2450*time.Millisecond+slack {
			t.Errorf("the handler returned %v after its start, want as the record failed, 2.45 s (Lambda's deadline is %v)", took, invocation)
		}
		if len(resp.BatchItemFailures) != 1 {
			t.Fatalf("failures %+v, want the record", resp.BatchItemFailures)
		}
		mu.Lock()
		if len(paced) != 1 || paced[0] != nil {
			t.Errorf("pacing's outcomes %v, want its change applied", paced)
		}
		mu.Unlock()
		if again := receiveAll(t, client, q.URL, 1, time.Until(start.Add(5*time.Second))); len(again) != 1 {
			t.Errorf("the message did not come back within 5 s of the start: pacing's 1 s change is not the one it kept")
		}
	})
}
