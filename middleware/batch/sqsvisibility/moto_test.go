package sqsvisibility_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsvisibility"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

type countingAPI struct {
	sqsvisibility.API
	calls atomic.Int32
}

func (c *countingAPI) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c.calls.Add(1)
	return c.API.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

// receiveAll receives until want messages were received or the deadline
// passes; it returns the messages by body.
func receiveAll(t *testing.T, client *sqs.Client, url string, want int, within time.Duration) map[string]types.Message {
	t.Helper()
	got := map[string]types.Message{}
	deadline := time.Now().Add(within)
	for len(got) < want && time.Now().Before(deadline) {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			got[aws.ToString(m.Body)] = m
		}
	}
	return got
}

// TestMoto pages 12 received messages back at once on moto's SQS, through
// the real client, and sees them delivered again although the queue's
// visibility timeout would hide them for five minutes.
func TestMoto(t *testing.T) {
	client := moto.SQS(t)
	q := motoserver.NewQueue(t, client, map[string]string{"VisibilityTimeout": "300"})
	ctx := context.Background()
	const n = 12
	for i := range n {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("body-" + string(rune('a'+i)))}); err != nil {
			t.Fatal(err)
		}
	}
	first := receiveAll(t, client, q.URL, n, 20*time.Second)
	if len(first) != n {
		t.Fatalf("received %d of %d messages", len(first), n)
	}
	if again := receiveAll(t, client, q.URL, 1, time.Second); len(again) != 0 {
		t.Fatalf("%d messages visible again before any change: the test would prove nothing", len(again))
	}

	var changes []batch.VisibilityChange
	for _, m := range first {
		changes = append(changes, batch.VisibilityChange{
			MessageID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			EventSourceARN: q.ARN, Timeout: 0,
		})
	}
	changes = append(changes, batch.VisibilityChange{MessageID: "forged", ReceiptHandle: "not-a-receipt-handle", EventSourceARN: q.ARN})

	api := &countingAPI{API: client}
	c, err := sqsvisibility.New(api)
	if err != nil {
		t.Fatal(err)
	}
	errs := c.ChangeVisibility(ctx, changes)
	if api.calls.Load() != 2 {
		t.Errorf("%d calls for %d changes, want 2", api.calls.Load(), len(changes))
	}
	for i, err := range errs[:n] {
		if err != nil {
			t.Errorf("change of %s: %v", changes[i].MessageID, err)
		}
	}
	var ee *sqsvisibility.EntryError
	if errs == nil || !errors.As(errs[n], &ee) || !strings.Contains(ee.Code, "ReceiptHandle") {
		t.Errorf("change with a forged receipt handle: err = %v, want an EntryError for it alone", errs)
	}
	if again := receiveAll(t, client, q.URL, n, 20*time.Second); len(again) != n {
		t.Errorf("%d of %d messages delivered again after their visibility was set to 0", len(again), n)
	}
}
