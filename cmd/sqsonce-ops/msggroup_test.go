package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// TestMessageWithoutGroupRefusesGroup: under message-group tenancy a
// message Lambda delivers without a MessageGroupId has the unscoped id.
// --message of such a message with --group named another record (the
// key's in that group) and release acted on it; it is refused, as a
// --group other than the message's own is.
func TestMessageWithoutGroupRefusesGroup(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	env[envTenancy] = envvars.TenancyMessageGroup
	env[envKey] = "body:order_id"
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Tenancy: idempotency.TenancyMessageGroup})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"order_id":"o-1"}`
	if _, err := idempotency.Wrap(g, idempotency.BodyField("order_id"), func(context.Context, events.SQSMessage) (string, error) { return "ok", nil })(t.Context(),
		events.SQSMessage{MessageId: "m-1", Body: body, Attributes: map[string]string{"MessageGroupId": "tenant-a"}}); err != nil {
		t.Fatal(err)
	}
	msg := writeFile(t, "message.json", `{"messageId":"m-2","body":"{\"order_id\":\"o-1\"}","attributes":{"ApproximateReceiveCount":"1"},"messageAttributes":{},"eventSource":"aws:sqs"}`)
	k, _ := idempotency.Select(idempotency.BodyField("order_id"), events.SQSMessage{Body: body})
	unscoped, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	if v := inspectJSON(t, env, exitOK, "--message", msg); v.ID != unscoped || v.State != stateAbsent {
		t.Errorf("inspect --message (no group): %+v, want %s absent", v, unscoped)
	}
	for _, cmd := range [][]string{
		{"inspect", "--message", msg, "--group", "tenant-a"},
		{"release", "--message", msg, "--group", "tenant-a", "--owner", "-", "--dry-run"},
	} {
		if r := cli(t, env, cmd...).want(t, exitRefused); !strings.Contains(r.stderr, "--group") {
			t.Errorf("%v: %q, want a refusal naming --group", cmd, r.stderr)
		}
	}
}
