package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
)

// queues is a source queue whose RedrivePolicy sends a message to the
// dead-letter queue after one receive, as the construct's queue does
// after MaxReceiveCount.
type queues struct {
	client      *sqs.Client
	source, dlq esm.Queue
}

func newQueues(t *testing.T) queues {
	t.Helper()
	client := esm.SQSClient(t, moto)
	dlq := esm.NewQueue(t, client, nil)
	arn, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(dlq.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	dlq.ARN = arn.Attributes[string(types.QueueAttributeNameQueueArn)]
	source := esm.NewQueue(t, client, map[string]string{
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlq.ARN),
		"VisibilityTimeout": "0", // a message received is visible again at once
	})
	return queues{client: client, source: source, dlq: dlq}
}

// failToDLQ sends bodies to the source queue and receives them without
// deleting them until SQS's redrive moves them to the dead-letter queue.
func (q queues) failToDLQ(t *testing.T, bodies ...string) {
	t.Helper()
	ctx := context.Background()
	for _, b := range bodies {
		if _, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.source.URL), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for q.count(t, q.dlq.URL) < len(bodies) {
		if time.Now().After(deadline) {
			t.Fatalf("the messages did not reach the dead-letter queue: %d of %d", q.count(t, q.dlq.URL), len(bodies))
		}
		if _, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.source.URL),
			MaxNumberOfMessages: 10}); err != nil {
			t.Fatal(err)
		}
	}
}

// count is the number of messages in url, visible or not.
func (q queues) count(t *testing.T, url string) int {
	t.Helper()
	out, err := q.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	b, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return a + b
}

// drain receives and deletes every message of url.
func (q queues) drain(t *testing.T, url string) []types.Message {
	t.Helper()
	var all []types.Message
	for {
		out, err := q.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return all
		}
		for _, m := range out.Messages {
			all = append(all, m)
			if _, err := q.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestRedrive(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	s := seed(t, store, "orders", quarantineDynamo(db, table))
	q := newQueues(t)
	var bodies []string
	for _, id := range []string{s.completed, s.stuck, s.live, s.quarantined, s.absent} {
		bodies = append(bodies, s.bodies[id])
	}
	bodies = append(bodies, "not json")
	q.failToDLQ(t, bodies...)
	// One moved by sqsdlq, with its reason beside the producer's attribute.
	direct := `{"idempotency_key":"order-direct","document":{"id":"d","version":1},"prompt_version":"v1"}`
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	if _, err := q.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq.URL), MessageBody: aws.String(direct),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"trace": str("t-1"), sqsdlq.AttrReason: str("permanent: no key"), sqsdlq.AttrErrorType: str("*idempotency.KeyError"),
		}}); err != nil {
		t.Fatal(err)
	}
	bodies = append(bodies, direct)
	args := []string{"redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--rate", "50/s", "--wait", "1s"}

	var dry redriveReport
	cli(t, env, append(args, "--dry-run", "--json")...).want(t, exitOK).decode(t, &dry)
	want := map[string]int{classReplay: 1, classRun: 3, classInProgress: 1, classQuarantined: 1, classBadKey: 1}
	if dry.Read != 7 || fmt.Sprint(dry.Classes) != fmt.Sprint(want) || dry.Redriven != 0 {
		t.Fatalf("dry run: %+v, want classes %v", dry, want)
	}
	if n := q.count(t, q.dlq.URL); n != 7 {
		t.Fatalf("after a dry run the dead-letter queue holds %d messages, want 7", n)
	}
	if n := q.count(t, q.source.URL); n != 0 {
		t.Fatalf("after a dry run the queue holds %d messages", n)
	}

	var r redriveReport
	cli(t, env, append(args, "--json")...).want(t, exitOK).decode(t, &r)
	if r.Read != 7 || r.Redriven != 7 || r.NotSent != 0 || r.SentNotDeleted != 0 {
		t.Fatalf("redrive: %+v", r)
	}
	if n := q.count(t, q.dlq.URL); n != 0 {
		t.Errorf("after redrive the dead-letter queue holds %d messages", n)
	}
	got := q.drain(t, q.source.URL)
	var gotBodies []string
	for _, m := range got {
		gotBodies = append(gotBodies, aws.ToString(m.Body))
		if aws.ToString(m.Body) == direct {
			if v := m.MessageAttributes["trace"]; aws.ToString(v.StringValue) != "t-1" {
				t.Errorf("the producer's attribute was not kept: %v", m.MessageAttributes)
			}
			for name := range m.MessageAttributes {
				if strings.HasPrefix(name, "sqsonce.") {
					t.Errorf("sqsdlq's attribute %s was sent back", name)
				}
			}
		}
	}
	slices.Sort(gotBodies)
	slices.Sort(bodies)
	if !slices.Equal(gotBodies, bodies) {
		t.Errorf("the queue got %q, want %q", gotBodies, bodies)
	}
}

// TestRedriveUnreadable: a message whose record the configuration cannot
// read (here: another data format) stops the whole redrive before any send.
func TestRedriveUnreadable(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	s := seed(t, store, "orders", quarantineDynamo(db, table))
	q := newQueues(t)
	q.failToDLQ(t, s.bodies[s.completed], s.bodies[s.absent])
	env[envDataFormat] = "powertools-typescript" // the seeded result is JSON text
	r := cli(t, env, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s").want(t, exitRefused)
	if n := q.count(t, q.source.URL); n != 0 {
		t.Errorf("sent %d messages to the queue:\n%s", n, r.stdout)
	}
	if n := q.count(t, q.dlq.URL); n != 2 {
		t.Errorf("the dead-letter queue holds %d, want 2", n)
	}
}

func TestRedriveFIFO(t *testing.T) {
	env, _, _, _ := dynamoEnv(t, "orders")
	client, dlq, source := fifoQueues(t)
	ctx := context.Background()
	type msg struct{ group, body string }
	sent := []msg{{"g1", `{"idempotency_key":"a"}`}, {"g1", `{"idempotency_key":"b"}`}, {"g2", `{"idempotency_key":"c"}`}}
	for i, m := range sent {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(m.body),
			MessageGroupId: aws.String(m.group), MessageDeduplicationId: aws.String(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	cli(t, env, "redrive", "--dlq", dlq, "--queue", source, "--wait", "0s", "--rate", "5/s").want(t, exitOK)
	// Three sends at 5 a second: the last one 400 ms after the first.
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("3 messages at --rate 5/s took %v", d)
	}
	q := queues{client: client}
	var got []msg
	for _, m := range q.drain(t, source) {
		got = append(got, msg{m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], aws.ToString(m.Body)})
	}
	if fmt.Sprint(got) != fmt.Sprint(sent) {
		t.Errorf("the FIFO queue got %v, want %v (groups and order kept)", got, sent)
	}
	// A queue of the other kind is refused before anything is read.
	cli(t, env, "redrive", "--dlq", dlq, "--queue", "http://localhost/123/standard").want(t, exitRefused)
}

// faultySQS fails SendMessage and DeleteMessage at random: before the
// request (nothing happened) or after it (it was applied, the response
// is lost).
type faultySQS struct {
	sqsAPI
	mu     sync.Mutex
	rng    *rand.Rand
	faults map[string]int
}

var errInjected = errors.New("injected fault")

func (f *faultySQS) roll(op string) (before, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r := f.rng.Float64(); {
	case r < 0.2:
		f.faults[op+"/before"]++
		return true, false
	case r < 0.4:
		f.faults[op+"/after"]++
		return false, true
	}
	return false, false
}

func (f *faultySQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	before, after := f.roll("SendMessage")
	if before {
		return nil, errInjected
	}
	out, err := f.sqsAPI.SendMessage(ctx, in, optFns...)
	if after && err == nil {
		return nil, fmt.Errorf("%w: the response was lost", errInjected)
	}
	return out, err
}

func (f *faultySQS) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	before, after := f.roll("DeleteMessage")
	if before {
		return nil, errInjected
	}
	out, err := f.sqsAPI.DeleteMessage(ctx, in, optFns...)
	if after && err == nil {
		return nil, fmt.Errorf("%w: the response was lost", errInjected)
	}
	return out, err
}

// TestRedriveNeverLoses: under injected SendMessage and DeleteMessage
// faults, runs of redrive until the dead-letter queue is empty leave every
// message in the queue (some twice: the consumer replays those), none lost.
func TestRedriveNeverLoses(t *testing.T) {
	env, _, _, _ := dynamoEnv(t, "orders")
	q := newQueues(t)
	var bodies []string
	for i := range 40 {
		b := fmt.Sprintf(`{"idempotency_key":"k-%02d"}`, i)
		bodies = append(bodies, b)
		if _, err := q.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq.URL), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	f := &faultySQS{rng: rand.New(rand.NewPCG(7, 19)), faults: map[string]int{}}
	wrapSQS = func(c sqsAPI) sqsAPI { f.sqsAPI = c; return f }
	t.Cleanup(func() { wrapSQS = func(c sqsAPI) sqsAPI { return c } })
	runs := 0
	for ; q.count(t, q.dlq.URL) > 0; runs++ {
		if runs == 30 {
			t.Fatalf("the dead-letter queue still holds %d messages after %d runs", q.count(t, q.dlq.URL), runs)
		}
		if runs > 0 {
			time.Sleep(1100 * time.Millisecond) // messages whose delete failed are visible again
		}
		cli(t, env, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--rate", "200/s", "--max", "15",
			"--wait", "0s", "--visibility", "1s")
	}
	seen := map[string]int{}
	for _, m := range q.drain(t, q.source.URL) {
		seen[aws.ToString(m.Body)]++
	}
	extra := 0
	for _, b := range bodies {
		if seen[b] == 0 {
			t.Errorf("lost: %s", b)
		}
		extra += seen[b] - 1
	}
	t.Logf("%d runs; faults %v; %d of %d messages in the queue twice or more", runs, f.faults, extra, len(bodies))
	if f.faults["SendMessage/before"] == 0 || f.faults["SendMessage/after"] == 0 || f.faults["DeleteMessage/before"] == 0 {
		t.Errorf("too few faults injected: %v", f.faults)
	}
}

// TestOurAttributes: every attribute sqsdlq adds carries the prefix
// redrive leaves out.
func TestOurAttributes(t *testing.T) {
	for _, name := range []string{sqsdlq.AttrReason, sqsdlq.AttrErrorType, sqsdlq.AttrMessageID, sqsdlq.AttrSourceQueue, sqsdlq.AttrReceiveCount} {
		if !strings.HasPrefix(name, ourPrefix) {
			t.Errorf("sqsdlq's attribute %s does not start with %s: redrive would send it back", name, ourPrefix)
		}
	}
}
