package sqsdlq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
)

const (
	srcARN     = "arn:aws:sqs:eu-west-1:123456789012:jobs"
	dlqARN     = "arn:aws:sqs:eu-west-1:123456789012:jobs-dlq"
	srcURL     = "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"
	dlqURL     = "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs-dlq"
	fifoSrcARN = "arn:aws:sqs:eu-west-1:123456789012:jobs.fifo"
	fifoDLQARN = "arn:aws:sqs:eu-west-1:123456789012:jobs-dlq.fifo"
)

// fakeSQS answers GetQueueAttributes from policies, records sends and
// deletes, and fails those whose message id (from the body "id:…") is in
// failSend or failDelete.
type fakeSQS struct {
	mu         sync.Mutex
	policies   map[string]string // queue URL → RedrivePolicy
	gets       int
	sends      []*sqs.SendMessageInput
	deletes    []string // receipt handles
	failSend   map[string]bool
	failDelete map[string]bool
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	p, ok := f.policies[aws.ToString(in.QueueUrl)]
	if !ok {
		return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{}}, nil
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"RedrivePolicy": p}}, nil
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSend[aws.ToString(in.MessageBody)] {
		return nil, errors.New("send throttled")
	}
	f.sends = append(f.sends, in)
	return &sqs.SendMessageOutput{MessageId: aws.String("new")}, nil
}

func (f *fakeSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if aws.ToString(in.QueueUrl) == "" {
		return nil, errors.New("no queue")
	}
	rh := aws.ToString(in.ReceiptHandle)
	if f.failDelete[rh] {
		return nil, errors.New("delete throttled")
	}
	f.deletes = append(f.deletes, rh)
	return &sqs.DeleteMessageOutput{}, nil
}

func move(id, arn string, attrs map[string]events.SQSMessageAttribute) batch.DeadLetterMove {
	return batch.DeadLetterMove{
		Message: events.SQSMessage{
			MessageId: id, ReceiptHandle: "rh-" + id, Body: "body-" + id, EventSourceARN: arn,
			Attributes:        map[string]string{"ApproximateReceiveCount": "2", "MessageGroupId": "g-" + id},
			MessageAttributes: attrs,
		},
		Reason: "idempotency: key from body field \"k\" of message " + id + ": no key", ErrorType: "*idempotency.KeyError",
	}
}

func newMover(t *testing.T, api sqsdlq.API, opts ...sqsdlq.Option) *sqsdlq.Mover {
	t.Helper()
	m, err := sqsdlq.New(api, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBothOrNeither: a message is deleted only once sent; a failed send
// leaves it in its queue, a failed delete is reported as ErrNotDeleted.
func TestBothOrNeither(t *testing.T) {
	f := &fakeSQS{
		policies:   map[string]string{srcURL: `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"5"}`},
		failSend:   map[string]bool{"body-m2": true},
		failDelete: map[string]bool{"rh-m3": true},
	}
	m := newMover(t, f)
	errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{move("m1", srcARN, nil), move("m2", srcARN, nil), move("m3", srcARN, nil)})
	if len(errs) != 3 || errs[0] != nil {
		t.Fatalf("errs = %v, want m1 moved", errs)
	}
	var me *sqsdlq.MoveError
	if !errors.As(errs[1], &me) || me.Step != "send" || errors.Is(errs[1], batch.ErrNotDeleted) {
		t.Errorf("m2 (send fails): %v, want a MoveError at send, not ErrNotDeleted", errs[1])
	}
	if !errors.As(errs[2], &me) || me.Step != "delete" || !errors.Is(errs[2], batch.ErrNotDeleted) {
		t.Errorf("m3 (delete fails): %v, want a MoveError at delete wrapping ErrNotDeleted", errs[2])
	}
	sent := map[string]bool{}
	for _, s := range f.sends {
		if aws.ToString(s.QueueUrl) != dlqURL {
			t.Errorf("sent to %s, want the dead-letter queue %s", aws.ToString(s.QueueUrl), dlqURL)
		}
		sent[aws.ToString(s.MessageBody)] = true
	}
	if !sent["body-m1"] || sent["body-m2"] || !sent["body-m3"] {
		t.Errorf("sent %v, want m1 and m3", sent)
	}
	if len(f.deletes) != 1 || f.deletes[0] != "rh-m1" {
		t.Errorf("deleted %v, want only m1 (m2 not sent, m3's delete failed)", f.deletes)
	}
}

// TestRedrivePolicyReadOnce: the dead-letter queue is read once per source
// queue and kept; a queue without one gets no moves, and the read is tried
// again next time.
func TestRedrivePolicyReadOnce(t *testing.T) {
	f := &fakeSQS{policies: map[string]string{srcURL: `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":5}`}}
	m := newMover(t, f)
	for i := range 3 {
		var moves []batch.DeadLetterMove
		for j := range 12 {
			moves = append(moves, move(fmt.Sprintf("m%d-%d", i, j), srcARN, nil))
		}
		if errs := m.MoveToDeadLetter(t.Context(), moves); errs != nil {
			t.Fatal(errs)
		}
	}
	if f.gets != 1 {
		t.Errorf("GetQueueAttributes called %d times for 36 moves of one queue, want once", f.gets)
	}
	other := "arn:aws:sqs:eu-west-1:123456789012:no-dlq"
	for range 2 {
		errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{move("x", other, nil)})
		var me *sqsdlq.MoveError
		if errs == nil || !errors.As(errs[0], &me) || me.Step != "lookup" || !strings.Contains(errs[0].Error(), "no RedrivePolicy") {
			t.Errorf("move from a queue without a dead-letter queue: %v", errs)
		}
	}
	if f.gets != 3 {
		t.Errorf("GetQueueAttributes called %d times, want 1 + 2 (a queue without a dead-letter queue is asked again)", f.gets)
	}
	if len(f.deletes) != 36 {
		t.Errorf("%d deletes, want 36", len(f.deletes))
	}
}

// TestConfiguredQueue: WithDeadLetterQueue needs no GetQueueAttributes; a
// FIFO source's messages go to its FIFO dead-letter queue in their group,
// deduplicated by messageId.
func TestConfiguredQueue(t *testing.T) {
	f := &fakeSQS{}
	m := newMover(t, f, sqsdlq.WithDeadLetterQueue(fifoSrcARN, fifoDLQARN))
	if errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{move("f1", fifoSrcARN, nil)}); errs != nil {
		t.Fatal(errs)
	}
	if f.gets != 0 || len(f.sends) != 1 {
		t.Fatalf("%d reads, %d sends; want 0 and 1", f.gets, len(f.sends))
	}
	s := f.sends[0]
	if aws.ToString(s.MessageGroupId) != "g-f1" || aws.ToString(s.MessageDeduplicationId) != "f1" {
		t.Errorf("FIFO send: group %q, dedup id %q; want the message's group and its messageId", aws.ToString(s.MessageGroupId), aws.ToString(s.MessageDeduplicationId))
	}
	noGroup := move("f2", fifoSrcARN, nil)
	delete(noGroup.Message.Attributes, "MessageGroupId")
	if errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{noGroup}); errs == nil || len(f.deletes) != 1 {
		t.Errorf("a FIFO message without a group: %v, deletes %v; want not sent, not deleted", errs, f.deletes)
	}
	_, err := sqsdlq.New(f, sqsdlq.WithDeadLetterQueue(fifoSrcARN, dlqARN), sqsdlq.WithConcurrency(0), sqsdlq.WithQueueURL(nil))
	for _, want := range []string{"FIFO", "WithConcurrency(0)", "WithQueueURL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New = %v, want an error naming %q", err, want)
		}
	}
}

// TestAttributes: the message keeps its own attributes; the reason's fit in
// the rest of SQS's ten, in order, and never quote more than MaxReason
// bytes.
func TestAttributes(t *testing.T) {
	own := func(n int) map[string]events.SQSMessageAttribute {
		m := map[string]events.SQSMessageAttribute{}
		for i := range n {
			m[fmt.Sprintf("a%d", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(fmt.Sprint(i))}
		}
		return m
	}
	all := []string{sqsdlq.AttrReason, sqsdlq.AttrErrorType, sqsdlq.AttrMessageID, sqsdlq.AttrSourceQueue, sqsdlq.AttrReceiveCount}
	for _, n := range []int{0, 3, 7, 10} {
		t.Run(fmt.Sprint(n, " own"), func(t *testing.T) {
			f := &fakeSQS{}
			m := newMover(t, f, sqsdlq.WithDeadLetterQueue(srcARN, dlqARN))
			mv := move("m1", srcARN, own(n))
			mv.Reason = strings.Repeat("é", 2*sqsdlq.MaxReason)
			if errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{mv}); errs != nil {
				t.Fatal(errs)
			}
			got := f.sends[0].MessageAttributes
			if len(got) > 10 {
				t.Fatalf("%d attributes, SQS takes 10", len(got))
			}
			for name := range own(n) {
				if _, ok := got[name]; !ok {
					t.Errorf("the message's own attribute %s was dropped", name)
				}
			}
			want := all[:min(len(all), 10-n)]
			for i, name := range all {
				if _, ok := got[name]; ok != (i < len(want)) {
					t.Errorf("%s present %v, want %v", name, ok, i < len(want))
				}
			}
			if r, ok := got[sqsdlq.AttrReason]; ok {
				v := aws.ToString(r.StringValue)
				if len(v) > sqsdlq.MaxReason || !utf8.ValidString(v) || !strings.HasSuffix(v, "…") {
					t.Errorf("reason of %d bytes (valid UTF-8 %v), want at most %d, cut at a character and marked", len(v), utf8.ValidString(v), sqsdlq.MaxReason)
				}
			}
			if c, ok := got[sqsdlq.AttrReceiveCount]; ok && (aws.ToString(c.DataType) != "Number" || aws.ToString(c.StringValue) != "2") {
				t.Errorf("receive count attribute %+v", c)
			}
		})
	}
}

// TestMovedAgain: a message redriven from the dead-letter queue (SQS's
// redrive keeps its attributes) that fails for good again carries this
// move's reason, error type, message id, queue and receive count, not the
// first move's, and keeps its own attributes.
func TestMovedAgain(t *testing.T) {
	f := &fakeSQS{}
	m := newMover(t, f, sqsdlq.WithDeadLetterQueue(srcARN, dlqARN))
	str := func(v string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v)}
	}
	old := map[string]events.SQSMessageAttribute{
		sqsdlq.AttrReason:       str("idempotency: body of message m-old is not a valid orders.Order: amount_cents must be positive"),
		sqsdlq.AttrErrorType:    str("*idempotency.BodyError"),
		sqsdlq.AttrMessageID:    str("m-old"),
		sqsdlq.AttrSourceQueue:  str("arn:aws:sqs:eu-west-1:123456789012:old"),
		sqsdlq.AttrReceiveCount: {DataType: "Number", StringValue: aws.String("1")},
		"tenant":                str("t-1"),
	}
	mv := move("m-new", srcARN, old)
	mv.Reason = "idempotency: key quarantined: its operation may have run"
	mv.ErrorType = "*idempotency.QuarantinedError"
	if errs := m.MoveToDeadLetter(t.Context(), []batch.DeadLetterMove{mv}); errs != nil {
		t.Fatal(errs)
	}
	got := f.sends[0].MessageAttributes
	for name, want := range map[string]string{
		sqsdlq.AttrReason: mv.Reason, sqsdlq.AttrErrorType: mv.ErrorType, sqsdlq.AttrMessageID: "m-new",
		sqsdlq.AttrSourceQueue: srcARN, sqsdlq.AttrReceiveCount: mv.Message.Attributes["ApproximateReceiveCount"], "tenant": "t-1",
	} {
		if v := aws.ToString(got[name].StringValue); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
}
