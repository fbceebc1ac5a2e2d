package esm

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
)

// The SQS side of moto_server lives here, not in motoserver, so that the
// library's root module (whose tests use motoserver's DynamoDB) does not
// require the SQS client.

// SQSClient returns an SQS client for moto_server s (moto serves SQS on the same
// endpoint as DynamoDB). optFns adjust the client's options.
func SQSClient(t testing.TB, s *motoserver.Server, optFns ...func(*sqs.Options)) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(s.Config(t), optFns...)
}

// Queue is a queue created by [NewQueue].
type Queue struct {
	Name string
	URL  string // as the server names it
	ARN  string // its QueueArn attribute
}

// NewQueue creates a standard queue named after the test, unique to this
// call, with the given attributes (for example "VisibilityTimeout": "30"),
// and deletes it when the test ends.
func NewQueue(t testing.TB, client *sqs.Client, attributes map[string]string) Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := motoserver.TableName(t) // the same characters are valid, up to 80 of them
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attributes})
	if err != nil {
		t.Fatalf("esm: create queue %s: %v", name, err)
	}
	q := Queue{Name: name, URL: aws.ToString(created.QueueUrl)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q.URL)}); err != nil {
			t.Errorf("esm: delete queue %s: %v", name, err)
		}
	})
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.URL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("esm: queue %s attributes: %v", name, err)
	}
	q.ARN = attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	return q
}
