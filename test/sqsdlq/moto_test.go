// Package sqsdlq_test holds sqsdlq's tests that run on moto_server's SQS:
// here, in the test module, so that sqsdlq's own go.mod requires no module
// of the test harness (motoserver). The fake-client tests stay with the
// module.
package sqsdlq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// faultyAPI fails SendMessage and DeleteMessage at random: before the
// request (nothing happened) or after it (it was applied, the response is
// lost).
type faultyAPI struct {
	sqsdlq.API
	mu     sync.Mutex
	rng    *rand.Rand
	before float64
	after  float64
	faults map[string]int // "SendMessage/before", ...
}

var errInjected = errors.New("injected fault")

func (f *faultyAPI) roll(op string) (before, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r := f.rng.Float64(); {
	case r < f.before:
		f.faults[op+"/before"]++
		return true, false
	case r < f.before+f.after:
		f.faults[op+"/after"]++
		return false, true
	}
	return false, false
}

func (f *faultyAPI) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	before, after := f.roll("SendMessage")
	if before {
		return nil, errInjected
	}
	out, err := f.API.SendMessage(ctx, in, optFns...)
	if after && err == nil {
		return nil, fmt.Errorf("%w: the response was lost", errInjected)
	}
	return out, err
}

func (f *faultyAPI) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	before, after := f.roll("DeleteMessage")
	if before {
		return nil, errInjected
	}
	out, err := f.API.DeleteMessage(ctx, in, optFns...)
	if after && err == nil {
		return nil, fmt.Errorf("%w: the response was lost", errInjected)
	}
	return out, err
}

// newQueue creates a queue named after the test with the given attributes
// and returns its URL and ARN.
func newQueue(t *testing.T, client *sqs.Client, suffix string, attrs map[string]string) (url, arn string) {
	t.Helper()
	name := strings.ReplaceAll(motoserver.TableName(t), ".", "_")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	name += suffix
	out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	url = aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	a, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	return url, a.Attributes["QueueArn"]
}

// TestMovesUnderFaults runs a standard and a FIFO queue, each with a
// dead-letter queue, through the batch handler as Lambda's event source
// mapping does (receive, invoke, delete what the response does not list),
// with half the messages failing permanently and the mover's SendMessage
// and DeleteMessage failing at random before or after the request. It
// accounts for every message: each permanent one is in the dead-letter
// queue (at least once), each other one ran and is not, the source queue
// is empty: none is lost.
func TestMovesUnderFaults(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{false: "standard", true: "fifo"}[fifo], func(t *testing.T) {
			moveUnderFaults(t, fifo, 0.25, 0.15)
		})
	}
	// Without faults, a permanent failure is in the dead-letter queue after
	// its first receive.
	t.Run("standard without faults", func(t *testing.T) { moveUnderFaults(t, false, 0, 0) })
}

func moveUnderFaults(t *testing.T, fifo bool, before, after float64) {
	client := sqs.NewFromConfig(moto.Config(t)) // moto serves SQS on the DynamoDB endpoint
	ctx := t.Context()
	suffix, attrs := "", map[string]string{}
	if fifo {
		suffix, attrs = ".fifo", map[string]string{"FifoQueue": "true"}
	}
	dlqURL, dlqARN := newQueue(t, client, "-dlq"+suffix, attrs)
	// A short visibility timeout brings back what a fault left; without
	// faults nothing should come back, so a long one keeps a slow machine
	// from counting a second receive of a message still being moved.
	visibility := "1"
	if before+after == 0 {
		visibility = "60"
	}
	srcAttrs := map[string]string{
		"VisibilityTimeout": visibility,
		// High, so that SQS's own redrive does not hide a move that failed.
		"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"50"}`,
	}
	for k, v := range attrs {
		srcAttrs[k] = v
	}
	srcURL, srcARN := newQueue(t, client, suffix, srcAttrs)

	const n = 40
	var permanent, ok []string
	for i := range n {
		body := fmt.Sprintf("ok-%02d", i)
		if i%2 == 0 {
			body = fmt.Sprintf("perm-%02d", i)
			permanent = append(permanent, body)
		} else {
			ok = append(ok, body)
		}
		in := &sqs.SendMessageInput{QueueUrl: aws.String(srcURL), MessageBody: aws.String(body),
			MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("t1")}}}
		if fifo {
			in.MessageGroupId = aws.String("g" + strconv.Itoa(i%4))
			in.MessageDeduplicationId = aws.String(body)
		}
		if _, err := client.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}

	api := &faultyAPI{API: client, rng: rand.New(rand.NewPCG(7, 11)), before: before, after: after, faults: map[string]int{}}
	mover, err := sqsdlq.New(api, sqsdlq.WithQueueURL(func(arn string) (string, error) {
		switch arn {
		case srcARN:
			return srcURL, nil
		case dlqARN:
			return dlqURL, nil
		}
		return "", fmt.Errorf("no URL for %s", arn)
	}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ran := map[string]int{} // ok bodies: successful runs
	var order []string      // ok bodies in the order they first succeeded
	moved, notSent := 0, 0
	h := batch.SQS(func(_ context.Context, m events.SQSMessage) (struct{}, error) {
		if strings.HasPrefix(m.Body, "perm-") {
			return struct{}{}, batch.Permanent(errors.New("rejected by the operation"))
		}
		mu.Lock()
		defer mu.Unlock()
		if ran[m.Body] == 0 {
			order = append(order, m.Body)
		}
		ran[m.Body]++
		return struct{}{}, nil
	}, batch.Options{
		MinRemaining: time.Second,
		Logger:       slog.New(slog.DiscardHandler),
		DeadLetter: batch.DeadLetter{Mover: mover, OnMove: func(_ context.Context, _ events.SQSMessage, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err == nil || errors.Is(err, batch.ErrNotDeleted) {
				moved++
			} else {
				notSent++
			}
		}},
	})

	// The event source mapping: until the queue is empty.
	invocations := 0
	for stop := time.Now().Add(90 * time.Second); ; {
		if time.Now().After(stop) {
			t.Fatalf("the source queue is not empty after 90 s")
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			if empty(t, client, srcURL) {
				break
			}
			continue
		}
		ev := events.SQSEvent{}
		for _, m := range out.Messages {
			ma := map[string]events.SQSMessageAttribute{}
			for k, v := range m.MessageAttributes {
				ma[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
			}
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Attributes: m.Attributes, MessageAttributes: ma, EventSourceARN: srcARN, EventSource: "aws:sqs", AWSRegion: "us-east-1",
			})
		}
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, herr := h(ictx, ev)
		cancel()
		invocations++
		if herr != nil {
			continue // a failed invocation: Lambda deletes nothing
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, r := range ev.Records {
			if !failed[r.MessageId] {
				if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(srcURL), ReceiptHandle: aws.String(r.ReceiptHandle)}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	// Drain the dead-letter queue.
	inDLQ := map[string]int{}
	for {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 300,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			// Deleted as read: a FIFO queue delivers none of a group's
			// later messages while an earlier one is in flight.
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			body := aws.ToString(m.Body)
			inDLQ[body]++
			a := m.MessageAttributes
			if aws.ToString(a["tenant"].StringValue) != "t1" || aws.ToString(a[sqsdlq.AttrReason].StringValue) != "rejected by the operation" ||
				aws.ToString(a[sqsdlq.AttrErrorType].StringValue) != "*errors.errorString" || aws.ToString(a[sqsdlq.AttrSourceQueue].StringValue) != srcARN {
				t.Errorf("dead-letter message %s: attributes %v, want its own and the reason's", body, a)
			}
			if before+after == 0 && aws.ToString(a[sqsdlq.AttrReceiveCount].StringValue) != "1" {
				t.Errorf("dead-letter message %s moved at receive %s, want its first", body, aws.ToString(a[sqsdlq.AttrReceiveCount].StringValue))
			}
		}
	}

	lost, dups := 0, 0
	for _, b := range permanent {
		switch c := inDLQ[b]; {
		case c == 0:
			lost++
			t.Errorf("%s failed permanently and is not in the dead-letter queue: lost", b)
		case c > 1:
			dups += c - 1
		}
	}
	for _, b := range ok {
		if ran[b] == 0 {
			lost++
			t.Errorf("%s never ran: lost", b)
		}
		if inDLQ[b] != 0 {
			t.Errorf("%s succeeded and is in the dead-letter queue", b)
		}
	}
	if fifo {
		if dups != 0 {
			t.Errorf("%d duplicates in the FIFO dead-letter queue: its deduplication id should drop them", dups)
		}
		// Within a group, the ok messages first succeeded in send order.
		for g := range 4 {
			var got []string
			for _, b := range order {
				if i, _ := strconv.Atoi(b[len(b)-2:]); i%4 == g {
					got = append(got, b)
				}
			}
			if !slices.IsSorted(got) {
				t.Errorf("group g%d ran out of order: %v", g, got)
			}
		}
	}
	api.mu.Lock()
	faults := fmt.Sprint(api.faults)
	api.mu.Unlock()
	if before+after > 0 && (api.faults["SendMessage/before"] == 0 || api.faults["SendMessage/after"] == 0 ||
		api.faults["DeleteMessage/before"] == 0 || api.faults["DeleteMessage/after"] == 0) {
		t.Errorf("faults %s: want each kind at least once, or the test proves less than it says", faults)
	}
	t.Logf("%d messages (%d permanent), %d invocations; faults %s; moves reported sent %d, not sent %d; in the dead-letter queue %d (%d duplicates); lost %d",
		n, len(permanent), invocations, faults, moved, notSent, len(inDLQ), dups, lost)
}

// empty reports whether the queue holds no message, visible or in flight.
func empty(t *testing.T, client *sqs.Client, url string) bool {
	t.Helper()
	a, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a.Attributes["ApproximateNumberOfMessages"] == "0" && a.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
}

// TestMoveKeepsGroupOnStandardQueue: a fair queue's message (a standard
// queue, MessageGroupId set by its producer) goes to a standard
// dead-letter queue in its group: under message-group tenancy its record
// id depends on it. (moto keeps a standard queue's MessageGroupId and
// returns it with the message's attributes, as SQS does.)
func TestMoveKeepsGroupOnStandardQueue(t *testing.T) {
	client := sqs.NewFromConfig(moto.Config(t)) // moto serves SQS on the DynamoDB endpoint
	ctx := t.Context()
	dlqURL, dlqARN := newQueue(t, client, "-dlq", nil)
	srcURL, srcARN := newQueue(t, client, "", map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, dlqARN)})
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(srcURL), MessageBody: aws.String(`{"order_id":"o-1"}`),
		MessageGroupId: aws.String("tenant-a")}); err != nil {
		t.Fatal(err)
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	m := out.Messages[0]
	if g := m.Attributes["MessageGroupId"]; g != "tenant-a" {
		t.Fatalf("the standard queue returned MessageGroupId %q", g)
	}
	mover, err := sqsdlq.New(client, sqsdlq.WithQueueURL(func(arn string) (string, error) {
		return map[string]string{srcARN: srcURL, dlqARN: dlqURL}[arn], nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	errs := mover.MoveToDeadLetter(ctx, []batch.DeadLetterMove{{Reason: "permanent", Message: events.SQSMessage{MessageId: aws.ToString(m.MessageId),
		ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), EventSourceARN: srcARN, Attributes: m.Attributes}}})
	if errs != nil {
		t.Fatal(errs)
	}
	moved, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 2,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil || len(moved.Messages) != 1 {
		t.Fatalf("the dead-letter queue: %v, %d messages", err, len(moved.Messages))
	}
	if g := moved.Messages[0].Attributes["MessageGroupId"]; g != "tenant-a" {
		t.Errorf("moved to a standard dead-letter queue with MessageGroupId %q, want tenant-a", g)
	}
}
