// Package sqsvisibility_test holds the tests of sqsvisibility that run on
// moto_server's SQS: here, in the test module, so that sqsvisibility's own
// go.mod requires no module of the test harness (esm).
package sqsvisibility_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
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
	client := esm.SQSClient(t, moto)
	q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "300"})
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

// TestMotoKeepVisible: on moto's SQS, through the real client, a message
// whose record runs longer than its queue's visibility timeout (2 s) is
// not received by a second consumer polling meanwhile, with the batch
// handler's options at Lambda's default 3 s timeout (the Changer set, and
// KeepVisible.QueueTimeout the queue's), and is gone once acknowledged
// (deleted, as Lambda does with a record that succeeded). Without keeping
// visible (the control), and with the zero value, which does not know the
// queue's timeout and so changes nothing before the deadline (Lambda
// refuses a queue whose timeout is below the function's, as this one
// is), the second consumer receives it while the record runs.
func TestMotoKeepVisible(t *testing.T) {
	client := esm.SQSClient(t, moto)
	changer, err := sqsvisibility.New(client)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		kv   batch.KeepVisible
		want bool // whether the second consumer receives the message
	}{
		{"the queue's timeout known", batch.KeepVisible{QueueTimeout: 2 * time.Second}, false},
		{"zero value: no change before the deadline", batch.KeepVisible{}, true},
		{"off (control)", batch.KeepVisible{Every: -1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "2"})
			if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("long")}); err != nil {
				t.Fatal(err)
			}
			first := receiveAll(t, client, q.URL, 1, 10*time.Second)["long"]
			if first.ReceiptHandle == nil {
				t.Fatal("the message was not received")
			}
			// The invocation's deadline is 3 s after the receive: the
			// record runs 2.2 s, past the queue's visibility timeout.
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			stolen := make(chan struct{})
			var second atomic.Int32
			pollDone := make(chan struct{})
			go func() {
				defer close(pollDone)
				for {
					select {
					case <-stolen:
						return
					default:
					}
					out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 1})
					if err == nil && len(out.Messages) > 0 {
						second.Add(1)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			fn := func(ctx context.Context, m events.SQSMessage) (string, error) {
				select {
				case <-time.After(2200 * time.Millisecond):
					return "done", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			msg := events.SQSMessage{MessageId: aws.ToString(first.MessageId), ReceiptHandle: aws.ToString(first.ReceiptHandle), EventSourceARN: q.ARN, Body: "long"}
			resp, err := batch.SQS(fn, batch.Options{Pacing: batch.Pacing{Changer: changer}, KeepVisible: tc.kv})(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
			got := second.Load()
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("%+v, %v: want the record to succeed", resp, err)
			}
			if _, err := client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: first.ReceiptHandle}); err != nil && !tc.want {
				t.Fatalf("acknowledging the message: %v", err)
			}
			if (got > 0) != tc.want {
				t.Errorf("the second consumer received the message %d times while its record ran, want received: %v", got, tc.want)
			}
			if tc.want {
				close(stolen)
				<-pollDone
				return
			}
			// Acknowledged: never delivered again, past every timeout set.
			time.Sleep(3500 * time.Millisecond)
			close(stolen)
			<-pollDone
			if n := second.Load(); n != 0 {
				t.Errorf("the second consumer received the message %d times after it was acknowledged", n)
			}
			out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			if err != nil {
				t.Fatal(err)
			}
			if v, nv := out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]; v != "0" || nv != "0" {
				t.Errorf("queue holds %s visible and %s invisible messages after the acknowledgement, want none", v, nv)
			}
		})
	}
}
