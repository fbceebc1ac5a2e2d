package main

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
)

// sourceArnSQS adds DeadLetterQueueSourceArn to the messages received
// whose body is in from, as SQS does to the messages its RedrivePolicy
// moves (moto sets none).
type sourceArnSQS struct {
	sqsAPI
	from map[string]string // body → source queue ARN
}

func (f sourceArnSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := f.sqsAPI.ReceiveMessage(ctx, in, opts...)
	if out != nil {
		for i, m := range out.Messages {
			if arn := f.from[aws.ToString(m.Body)]; arn != "" {
				if m.Attributes == nil {
					out.Messages[i].Attributes = map[string]string{}
				}
				out.Messages[i].Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] = arn
			}
		}
	}
	return out, err
}

// TestRedriveSharedDeadLetterQueue: one dead-letter queue serves two
// queues. redrive --queue A moved B's messages (moved by SQS, with
// DeadLetterQueueSourceArn, or by sqsdlq, with sqsonce.source-queue) into
// A, to a function they are not for. Now they stay in the dead-letter
// queue, counted as from another queue; --force still sends them (a DLQ of
// an old stack moved by hand).
func TestRedriveSharedDeadLetterQueue(t *testing.T) {
	env, _, _, _ := dynamoEnv(t, "orders")
	env[envKey] = "body:order_id"
	q := newQueues(t)
	other := esm.NewQueue(t, q.client, nil)
	otherARN, err := q.client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(other.URL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	arn := otherARN.Attributes[string(types.QueueAttributeNameQueueArn)]
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	send := func(body string, attrs map[string]types.MessageAttributeValue) {
		t.Helper()
		if _, err := q.client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq.URL), MessageBody: aws.String(body),
			MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	ours, bySQS, bySqsdlq := `{"order_id":"a-1"}`, `{"order_id":"b-1"}`, `{"order_id":"b-2"}`
	send(ours, nil)
	send(bySQS, nil)
	send(bySqsdlq, map[string]types.MessageAttributeValue{sqsdlq.AttrReason: str("permanent: a test"), sqsdlq.AttrSourceQueue: str(arn)})
	wrapSQS = func(c sqsAPI) sqsAPI { return sourceArnSQS{sqsAPI: c, from: map[string]string{bySQS: arn}} }
	t.Cleanup(func() { wrapSQS = func(c sqsAPI) sqsAPI { return c } })

	args := []string{"redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--rate", "50/s", "--wait", "1s", "--json"}
	var r redriveReport
	cli(t, env, args...).want(t, exitOK).decode(t, &r)
	if r.Read != 3 || r.Redriven != 1 || r.Classes[classOtherQueue] != 2 {
		t.Errorf("redrive: %+v, want 3 read, 1 redriven, 2 from another queue", r)
	}
	back := q.drain(t, q.source.URL)
	if len(back) != 1 || aws.ToString(back[0].Body) != ours {
		t.Fatalf("the queue got %d message(s), want only its own", len(back))
	}
	if n := q.count(t, q.dlq.URL); n != 2 {
		t.Fatalf("the dead-letter queue holds %d message(s), want the other queue's 2", n)
	}
	// --force sends them: the operator says why.
	cli(t, env, append(args, "--force", "moved by hand")...).want(t, exitOK).decode(t, &r)
	if r.Redriven != 2 {
		t.Errorf("redrive --force: %+v, want the 2 sent", r)
	}
}
