package main

// The operator's tool must not hurt with redrive: a FIFO group reordered,
// a queue moved into its dead-letter queue, a rate that was no limit, a
// dry run that moved messages on. The tests drive the command line only,
// on moto.

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
)

// policy is a RedrivePolicy to the queue arn.
func policy(arn string, maxReceives int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, arn, maxReceives)
}

// fifoQueues are a FIFO dead-letter queue and its source queue.
func fifoQueues(t *testing.T) (client *sqs.Client, dlq, source string) {
	t.Helper()
	client = esm.SQSClient(t, moto)
	ctx := context.Background()
	create := func(name string, attrs map[string]string) (string, string) {
		attrs["FifoQueue"] = "true"
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + ".fifo"), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
		a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.QueueUrl), a.Attributes[string(types.QueueAttributeNameQueueArn)]
	}
	name := "ops-fifo-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dlq, dlqARN := create(name+"-dlq", map[string]string{})
	source, _ = create(name, map[string]string{"RedrivePolicy": policy(dlqARN, 3)})
	return client, dlq, source
}

// fifoMsg is a FIFO message: its group and body.
type fifoMsg struct{ group, body string }

func sendFIFO(t *testing.T, client *sqs.Client, url string, msgs ...fifoMsg) {
	t.Helper()
	for _, m := range msgs {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(m.body),
			MessageGroupId: aws.String(m.group), MessageDeduplicationId: aws.String(rand.Text())}); err != nil {
			t.Fatal(err)
		}
	}
}

func drainFIFO(t *testing.T, client *sqs.Client, url string) []fifoMsg {
	t.Helper()
	var got []fifoMsg
	for _, m := range (queues{client: client}).drain(t, url) {
		got = append(got, fifoMsg{m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], aws.ToString(m.Body)})
	}
	return got
}

// failSend fails the first SendMessage of one body, as a throttle would.
type failSend struct {
	sqsAPI
	body   string
	failed bool
}

func (f *failSend) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if aws.ToString(in.MessageBody) == f.body && !f.failed {
		f.failed = true
		return nil, fmt.Errorf("%w: ThrottlingException", errInjected)
	}
	return f.sqsAPI.SendMessage(ctx, in, optFns...)
}

// TestRedriveFIFOGroupStops: the dead-letter queue holds a then b in group
// g1, c in g2; the send of a fails. b stays behind a in the dead-letter
// queue (sending it would put it before a), c goes, the run says which
// group stopped and how many it left; the next run sends a then b.
func TestRedriveFIFOGroupStops(t *testing.T) {
	env, _, _, _ := dynamoEnv(t, "orders")
	client, dlq, source := fifoQueues(t)
	a, b, c := fifoMsg{"g1", `{"idempotency_key":"a"}`}, fifoMsg{"g1", `{"idempotency_key":"b"}`}, fifoMsg{"g2", `{"idempotency_key":"c"}`}
	sendFIFO(t, client, dlq, a, b, c)
	f := &failSend{body: a.body}
	wrapSQS = func(c sqsAPI) sqsAPI { f.sqsAPI = c; return f }
	t.Cleanup(func() { wrapSQS = func(c sqsAPI) sqsAPI { return c } })

	args := []string{"redrive", "--dlq", dlq, "--queue", source, "--wait", "0s", "--rate", "50/s"}
	r := cli(t, env, append(args, "--json")...).want(t, exitFailed)
	var out struct {
		Redriven      int `json:"redriven"`
		NotSent       int `json:"not_sent"`
		Held          int `json:"held"`
		StoppedGroups []struct {
			Group string `json:"group"`
			Left  int    `json:"left"`
		} `json:"stopped_groups"`
	}
	r.decode(t, &out)
	if got := drainFIFO(t, client, source); fmt.Sprint(got) != fmt.Sprint([]fifoMsg{c}) {
		t.Errorf("after the failed send of a, the queue got %v, want only %v: b must wait behind a", got, c)
	}
	if n := (queues{client: client}).count(t, dlq); n != 2 {
		t.Errorf("the dead-letter queue holds %d messages, want a and b", n)
	}
	if out.Redriven != 1 || out.NotSent != 1 || out.Held != 1 || len(out.StoppedGroups) != 1 ||
		out.StoppedGroups[0].Group != "g1" || out.StoppedGroups[0].Left != 2 {
		t.Errorf("the report: %+v, want g1 stopped with 2 left\n%s", out, r.stdout)
	}
	text := cli(t, env, args...).want(t, exitOK).stdout
	if got := drainFIFO(t, client, source); fmt.Sprint(got) != fmt.Sprint([]fifoMsg{a, b}) {
		t.Errorf("the next run sent %v, want %v in that order\n%s", got, []fifoMsg{a, b}, text)
	}

	// The text says so too.
	sendFIFO(t, client, dlq, a, b)
	f.failed = false
	text = cli(t, env, args...).want(t, exitFailed).stdout
	if !strings.Contains(text, "FIFO group g1 stopped") || !strings.Contains(text, "2 message(s) left") {
		t.Errorf("the text does not say which group stopped:\n%s", text)
	}
}

// TestRedriveChecksQueues: --dlq must be the dead-letter queue that
// --queue's RedrivePolicy names. Swapped, nothing moves (the live queue's
// messages stayed where they were); another queue is refused too; --force
// with a reason goes on and prints the reason.
func TestRedriveChecksQueues(t *testing.T) {
	env, _, _, _ := dynamoEnv(t, "orders")
	q := newQueues(t)
	ctx := context.Background()
	send := func(url string, n int) {
		for i := range n {
			if _, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
				MessageBody: aws.String(fmt.Sprintf(`{"idempotency_key":"k-%d"}`, i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(q.source.URL, 5)
	send(q.dlq.URL, 2)
	r := cli(t, env, "redrive", "--dlq", q.source.URL, "--queue", q.dlq.URL, "--wait", "0s").want(t, exitRefused)
	if !strings.Contains(r.stderr, "RedrivePolicy") {
		t.Errorf("swapped queues: %s", r.stderr)
	}
	if s, d := q.count(t, q.source.URL), q.count(t, q.dlq.URL); s != 5 || d != 2 {
		t.Errorf("after the refused swap: queue %d, dead-letter queue %d; want 5 and 2", s, d)
	}
	other := esm.NewQueue(t, q.client, nil)
	send(other.URL, 1)
	r = cli(t, env, "redrive", "--dlq", other.URL, "--queue", q.source.URL, "--wait", "0s").want(t, exitRefused)
	if !strings.Contains(r.stderr, q.dlq.ARN) || q.count(t, other.URL) != 1 {
		t.Errorf("another queue as --dlq: %s", r.stderr)
	}
	cli(t, env, "redrive", "--dlq", other.URL, "--queue", q.source.URL, "--force", " ").want(t, exitRefused)
	reason := "moving the copy made by hand from the old dead-letter queue"
	r = cli(t, env, "redrive", "--dlq", other.URL, "--queue", q.source.URL, "--wait", "0s", "--force", reason, "--json").want(t, exitOK)
	var out map[string]any
	r.decode(t, &out)
	if !strings.Contains(r.stderr, reason) || out["forced"] != reason || q.count(t, q.source.URL) != 6 || q.count(t, other.URL) != 0 {
		t.Errorf("--force: stderr %q, report %v", r.stderr, out)
	}
}

// TestRedriveRateRefused: a rate that is no number, no rate, or no limit
// is refused before anything is read.
func TestRedriveRateRefused(t *testing.T) {
	env, _, _, _ := dynamoEnv(t, "orders")
	q := newQueues(t)
	for i := range 3 {
		if _, err := q.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq.URL),
			MessageBody: aws.String(fmt.Sprintf(`{"idempotency_key":"k-%d"}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	for _, rate := range []string{"NaN/s", "nan", "Inf/s", "+Inf/m", "-1/s", "0/s", "0x0p0", "1e-10/s", "1e400/s", "1e300/s", "5000/s", "0.00001/s"} {
		r := cli(t, env, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "0s", "--rate", rate)
		if r.code != exitRefused || !strings.Contains(r.stderr, "--rate") {
			t.Errorf("--rate %s: exit %d, stderr %q; want exit %d naming --rate", rate, r.code, r.stderr, exitRefused)
		}
	}
	// A run longer than a message can stay invisible.
	r := cli(t, env, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "0s", "--rate", "1/m", "--max", "1000")
	if r.code != exitRefused || !strings.Contains(r.stderr, "--max") {
		t.Errorf("1000 messages at 1/m: exit %d, stderr %q", r.code, r.stderr)
	}
	if d, s := q.count(t, q.dlq.URL), q.count(t, q.source.URL); d != 3 || s != 0 {
		t.Errorf("after the refusals: dead-letter queue %d, queue %d; want 3 and 0", d, s)
	}
}

// TestRedriveDryRunCounts: SQS shows no message without receiving it, and
// a dead-letter queue with a RedrivePolicy of its own moves a message on
// after maxReceiveCount receives: a dry run there is refused and receives
// nothing, unless --force says why, and then the run says what it cost.
func TestRedriveDryRunCounts(t *testing.T) {
	env, _, _, _ := dynamoEnv(t, "orders")
	client := esm.SQSClient(t, moto)
	last := esm.NewQueue(t, client, nil)
	dlq := esm.NewQueue(t, client, map[string]string{"RedrivePolicy": policy(last.ARN, 3)})
	source := esm.NewQueue(t, client, map[string]string{"RedrivePolicy": policy(dlq.ARN, 1)})
	ctx := context.Background()
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq.URL), MessageBody: aws.String(`{"idempotency_key":"k"}`)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := cli(t, env, "redrive", "--dlq", dlq.URL, "--queue", source.URL, "--dry-run", "--wait", "0s").want(t, exitRefused)
		if !strings.Contains(r.stderr, "RedrivePolicy of its own") {
			t.Fatalf("dry run: %s", r.stderr)
		}
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), VisibilityTimeout: 0, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || out.Messages[0].Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)] != "1" {
		t.Fatalf("after three refused dry runs the message is %v, want received once (by this check)", out.Messages)
	}
	if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(dlq.URL),
		ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	r := cli(t, env, "redrive", "--dlq", dlq.URL, "--queue", source.URL, "--dry-run", "--wait", "1s",
		"--force", "its policy allows 3 receives, this is the second").want(t, exitOK)
	if !strings.Contains(r.stderr, "this is the second") || !strings.Contains(r.stdout, "received once") {
		t.Errorf("a forced dry run:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
}
