package main

// The operator's tool must not hurt with redrive: a FIFO group reordered,
// a queue moved into its dead-letter queue, a rate that was no limit, a
// dry run that moved messages on. The tests drive the command line only,
// on moto.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

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
