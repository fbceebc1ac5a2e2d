package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// redriveDocumented is the IAM actions redrive needs on each queue, as
// docs/operating.md states them: section Configuration, the paragraph
// "Credentials come from the AWS SDK's chain", whose redrive clause
// redriveDocSentence quotes. Change the three together.
var redriveDocumented = map[string][]string{
	"dead-letter queue": {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
	"queue":             {"sqs:GetQueueAttributes", "sqs:SendMessage"},
}

// redriveDocSentence is that clause, as the page words it (its line breaks
// aside). Its KMS part (AWS's SSE-KMS rules: receiving needs kms:Decrypt,
// sending kms:GenerateDataKey and kms:Decrypt) moto cannot check.
const redriveDocSentence = "redrive needs `sqs:GetQueueAttributes` on both queues, `ReceiveMessage`, " +
	"`DeleteMessage`, `ChangeMessageVisibility` on the dead-letter queue, `SendMessage` on the queue, " +
	"and `kms:Decrypt`, `kms:GenerateDataKey` on their customer-managed key, if any."

// actionRecorder records the IAM action each SQS call needs, by the queue
// it names. It implements sqsAPI without embedding it, so that a call
// added to sqsAPI fails to compile here until it is recorded (and
// documented).
type actionRecorder struct {
	next       sqsAPI
	dlq, queue string
	mu         sync.Mutex
	calls      map[string]map[string]bool // queue role → action
	unknown    []string
}

func (r *actionRecorder) record(action string, url *string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var role string
	switch aws.ToString(url) {
	case r.dlq:
		role = "dead-letter queue"
	case r.queue:
		role = "queue"
	default:
		r.unknown = append(r.unknown, action+" on "+aws.ToString(url))
		return
	}
	if r.calls[role] == nil {
		r.calls[role] = map[string]bool{}
	}
	r.calls[role][action] = true
}

func (r *actionRecorder) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	r.record("sqs:ReceiveMessage", in.QueueUrl)
	return r.next.ReceiveMessage(ctx, in, optFns...)
}

func (r *actionRecorder) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	r.record("sqs:SendMessage", in.QueueUrl)
	return r.next.SendMessage(ctx, in, optFns...)
}

func (r *actionRecorder) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	r.record("sqs:DeleteMessage", in.QueueUrl)
	return r.next.DeleteMessage(ctx, in, optFns...)
}

// ChangeMessageVisibilityBatch is authorised as sqs:ChangeMessageVisibility:
// SQS's batch calls have no IAM actions of their own.
func (r *actionRecorder) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	r.record("sqs:ChangeMessageVisibility", in.QueueUrl)
	return r.next.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

func (r *actionRecorder) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	r.record("sqs:GetQueueAttributes", in.QueueUrl)
	return r.next.GetQueueAttributes(ctx, in, optFns...)
}

// TestRedrivePermissionsAsDocumented: a dry run and a redrive on moto call,
// on each queue, exactly the SQS actions docs/operating.md says redrive
// needs, and the page still says so.
func TestRedrivePermissionsAsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	if page := strings.Join(strings.Fields(string(b)), " "); !strings.Contains(page, redriveDocSentence) {
		t.Errorf("docs/operating.md no longer says %q: update redriveDocumented and redriveDocSentence with it", redriveDocSentence)
	}

	env, _, _, _ := dynamoEnv(t, "orders")
	q := newQueues(t)
	for i := range 3 {
		if _, err := q.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq.URL),
			MessageBody: aws.String(fmt.Sprintf(`{"idempotency_key":"perm-%d"}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &actionRecorder{dlq: q.dlq.URL, queue: q.source.URL, calls: map[string]map[string]bool{}}
	wrapSQS = func(c sqsAPI) sqsAPI { rec.next = c; return rec }
	t.Cleanup(func() { wrapSQS = func(c sqsAPI) sqsAPI { return c } })

	args := []string{"redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--rate", "50/s", "--wait", "0s"}
	cli(t, env, append(args, "--dry-run")...).want(t, exitOK)
	cli(t, env, args...).want(t, exitOK)
	if n := q.count(t, q.source.URL); n != 3 {
		t.Fatalf("the queue holds %d messages after the redrive, want 3", n)
	}

	if len(rec.unknown) > 0 {
		t.Errorf("redrive called SQS on a queue it was not given: %v", rec.unknown)
	}
	for _, role := range slices.Sorted(maps.Keys(redriveDocumented)) {
		got := slices.Sorted(maps.Keys(rec.calls[role]))
		if want := redriveDocumented[role]; !slices.Equal(got, want) {
			t.Errorf("on the %s redrive calls %v; docs/operating.md documents %v", role, got, want)
		}
	}
}
