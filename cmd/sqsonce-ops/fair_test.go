package main

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// TestRedriveFairQueue: a function with message-group tenancy on a fair
// queue (a standard queue whose producer sets MessageGroupId) completed
// tenant-a's order o-1; a duplicate of it is dead-lettered. With the
// function's SQSONCE_TENANCY the tool computes the id the function
// would: inspect finds the record by the plain key and the group, redrive
// classes the duplicate as a replay and sends it back in its group, where
// the function computes that id again and replays instead of running.
func TestRedriveFairQueue(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	env[envTenancy] = envvars.TenancyMessageGroup
	env[envKey] = "body:order_id"
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Tenancy: idempotency.TenancyMessageGroup})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	fn := idempotency.Wrap(g, idempotency.BodyField("order_id"), func(ctx context.Context, m events.SQSMessage) (string, error) {
		runs++
		return "ch_1", nil
	})
	body := `{"order_id":"o-1"}`
	deliver := func(m events.SQSMessage) {
		t.Helper()
		if _, err := fn(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	deliver(events.SQSMessage{MessageId: "m-1", Body: body, Attributes: map[string]string{"MessageGroupId": "tenant-a"}})

	var rec struct {
		State string `json:"state"`
	}
	cli(t, env, "inspect", "--json", "--key", "o-1", "--group", "tenant-a").want(t, exitOK).decode(t, &rec)
	if rec.State != "completed" {
		t.Errorf("inspect --key o-1 --group tenant-a: %q, want completed", rec.State)
	}

	q := newQueues(t)
	if _, err := q.client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq.URL), MessageBody: aws.String(body),
		MessageGroupId: aws.String("tenant-a")}); err != nil {
		t.Fatal(err)
	}
	args := []string{"redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--rate", "50/s", "--wait", "1s", "--json"}
	var dry redriveReport
	cli(t, env, append(args, "--dry-run")...).want(t, exitOK).decode(t, &dry)
	if dry.Read != 1 || dry.Classes[classReplay] != 1 {
		t.Fatalf("dry run: %+v, want the one message classed %s", dry, classReplay)
	}
	var r redriveReport
	cli(t, env, args...).want(t, exitOK).decode(t, &r)
	if r.Redriven != 1 {
		t.Fatalf("redrive: %+v", r)
	}
	back := q.drain(t, q.source.URL)
	if len(back) != 1 || back[0].Attributes["MessageGroupId"] != "tenant-a" {
		t.Fatalf("the queue got %d message(s), group %v; want one in tenant-a", len(back), back)
	}
	deliver(events.SQSMessage{MessageId: aws.ToString(back[0].MessageId), Body: aws.ToString(back[0].Body), Attributes: back[0].Attributes})
	if runs != 1 {
		t.Errorf("the operation ran %d times, want 1: the redriven duplicate must replay", runs)
	}
}

// TestInspectPlainKey: --key takes a plain string as it is, as well as
// the JSON-quoted one.
func TestInspectPlainKey(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	env[envKey] = "body:order_id"
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.Wrap(g, idempotency.BodyField("order_id"), func(ctx context.Context, m events.SQSMessage) (string, error) {
		return "ok", nil
	})(t.Context(), events.SQSMessage{MessageId: "m-1", Body: `{"order_id":"r-2"}`}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"r-2", `"r-2"`} {
		var rec struct {
			State string `json:"state"`
		}
		cli(t, env, "inspect", "--json", "--key", key).want(t, exitOK).decode(t, &rec)
		if rec.State != "completed" {
			t.Errorf("inspect --key %s: %q, want completed", key, rec.State)
		}
	}
	if r := cli(t, env, "inspect", "--key", "r-2", "--group", "g"); r.code != exitRefused && r.code != exitFailed {
		t.Errorf("--group with invocation tenancy: exit %d, want a refusal", r.code)
	}
}
