package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// writeFile writes text to a file of the test's and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// attrKeyRecord is an SQS record as Lambda delivers it in an event, its
// key in a message attribute.
const attrKeyRecord = `{
  "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
  "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
  "body": "{\"order_id\":\"o-1\"}",
  "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1545082649183",
    "SenderId": "AIDAIENQZJOLO23YVJ4VO", "ApproximateFirstReceiveTimestamp": "1545082649185"},
  "messageAttributes": {"idem": {"stringValue": "k-7", "stringListValues": [], "binaryListValues": [], "dataType": "String"}},
  "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
  "eventSource": "aws:sqs",
  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:orders",
  "awsRegion": "us-east-1"
}`

// TestInspectMessageAttributeKey: a function keyed by a message attribute
// (jmespath:messageAttributes.idem.stringValue) completed a message;
// inspect --message, given the record Lambda delivered (or its event),
// finds that record, and release --message names it too. --body cannot:
// the body does not hold the key.
func TestInspectMessageAttributeKey(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	env[envKey] = "jmespath:messageAttributes.idem.stringValue"
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	key := jmespath.MustCompile("messageAttributes.idem.stringValue").Selector()
	if _, err := idempotency.Wrap(g, key, func(context.Context, events.SQSMessage) (string, error) { return "ok", nil })(t.Context(),
		events.SQSMessage{MessageId: "m-1", Body: `{"order_id":"o-1"}`, MessageAttributes: map[string]events.SQSMessageAttribute{
			"idem": {StringValue: ptr("k-7"), DataType: "String"}}}); err != nil {
		t.Fatal(err)
	}
	k, err := idempotency.Select(key, events.SQSMessage{MessageAttributes: map[string]events.SQSMessageAttribute{"idem": {StringValue: ptr("k-7")}}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"record": attrKeyRecord,
		"event":  `{"Records":[` + attrKeyRecord + `]}`,
	} {
		if v := inspectJSON(t, env, exitOK, "--message", writeFile(t, "message.json", text)); v.ID != want || v.State != stateCompleted {
			t.Errorf("inspect --message (%s): %+v, want %s completed", name, v, want)
		}
	}
	old := stdin
	stdin = strings.NewReader(attrKeyRecord)
	t.Cleanup(func() { stdin = old })
	if v := inspectJSON(t, env, exitOK, "--message", "-"); v.ID != want || v.State != stateCompleted {
		t.Errorf("inspect --message -: %+v, want %s completed", v, want)
	}
	// release and resolve take --message too: the record is the one
	// found, COMPLETED, so there is nothing to release.
	r := cli(t, env, "release", "--message", writeFile(t, "message.json", attrKeyRecord), "--owner", "-").want(t, exitFailed)
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "not INPROGRESS") {
		t.Errorf("release --message: %q, want the record %s found and refused as COMPLETED", r.stderr, want)
	}
	r = cli(t, env, "resolve", "--message", writeFile(t, "message.json", attrKeyRecord), "--owner", "-", "--result", "1").want(t, exitFailed)
	if !strings.Contains(r.stderr, want) {
		t.Errorf("resolve --message: %q, want the record %s found", r.stderr, want)
	}
	// The body alone does not hold the key.
	r = cli(t, env, "inspect", "--json", "--body", writeFile(t, "body.json", `{"order_id":"o-1"}`))
	if r.code == exitOK && strings.Contains(r.stdout, want) {
		t.Errorf("inspect --body found %s: the body does not hold the key", want)
	}
}

// TestInspectMessageGroup: under message-group tenancy (a fair queue) the
// record id is scoped to the message's MessageGroupId: --message finds
// the record by the group in its attributes, --body (no group) does not.
func TestInspectMessageGroup(t *testing.T) {
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
	k, _ := idempotency.Select(idempotency.BodyField("order_id"), events.SQSMessage{Body: body})
	want, err := g.ScopedID("", "tenant-a", k)
	if err != nil {
		t.Fatal(err)
	}
	msg := writeFile(t, "message.json", `{"messageId":"m-1","body":"{\"order_id\":\"o-1\"}","attributes":{"MessageGroupId":"tenant-a","ApproximateReceiveCount":"1"},"messageAttributes":{},"eventSource":"aws:sqs"}`)
	if v := inspectJSON(t, env, exitOK, "--message", msg); v.ID != want || v.State != stateCompleted {
		t.Errorf("inspect --message (group tenant-a): %+v, want %s completed", v, want)
	}
	if v := inspectJSON(t, env, exitOK, "--message", msg, "--group", "tenant-a"); v.ID != want {
		t.Errorf("inspect --message --group (the same group): %+v, want %s", v, want)
	}
	if v := inspectJSON(t, env, exitOK, "--body", writeFile(t, "body.json", body)); v.ID == want || v.State != stateAbsent {
		t.Errorf("inspect --body: %+v, want another id, absent: the body has no group", v)
	}
	if r := cli(t, env, "inspect", "--message", msg, "--group", "tenant-b").want(t, exitRefused); !strings.Contains(r.stderr, "--group") || strings.Contains(r.stderr, "tenant-a") {
		t.Errorf("--group other than the message's: %q, want a refusal naming --group, not the message's group", r.stderr)
	}
}

// TestMessageRefusals: --message with --body, and a file that is not an
// SQS record, are refused without quoting the file.
func TestMessageRefusals(t *testing.T) {
	env, _, _, _ := dynamoEnv(t, "orders")
	msg := writeFile(t, "message.json", attrKeyRecord)
	for _, args := range [][]string{
		{"inspect", "--body", msg, "--message", msg},
		{"release", "--body", msg, "--message", msg, "--owner", "-"},
		{"resolve", "--body", msg, "--message", msg, "--owner", "-", "--result", "1"},
	} {
		if r := cli(t, env, args...).want(t, exitRefused); !strings.Contains(r.stderr, "--body and --message") {
			t.Errorf("%v: %q, want a refusal of --body with --message", args, r.stderr)
		}
	}
	for _, args := range [][]string{{"inspect", "--message", msg, "--key", "1"}, {"inspect", "--message", msg, "--id", "orders#x"}} {
		cli(t, env, args...).want(t, exitRefused)
	}
	const secret = "SECRET-4417"
	big := `{"body":"` + strings.Repeat("a", maxBody+1) + `"}`
	for name, tc := range map[string]struct{ text, want string }{
		"not JSON":             {secret + ` {"body":"x"}`, "not JSON"},
		"truncated":            {`{"body":"` + secret, "not JSON"},
		"a body, not a record": {`{"order_id":"` + secret + `"}`, "no body"},
		"a wrong type":         {`{"body":"` + secret + `","messageId":44170001}`, "messageId"},
		"bad attributes":       {`{"body":"` + secret + `","attributes":["` + secret + `"]}`, "attributes"},
		"bad base64":           {`{"body":"x","messageAttributes":{"a":{"binaryValue":"` + secret + `!","dataType":"Binary"}}}`, "--message"},
		"two records":          {`{"Records":[` + attrKeyRecord + `,` + attrKeyRecord + `]}`, "2 records"},
		"no records":           {`{"Records":[]}`, "0 records"},
		"a JSON string":        {`"` + secret + `"`, "--message"},
		"a body too long":      {big, "longer than"},
		"a file too long":      {strings.Repeat(" ", maxMessageFile+1), "longer than"},
	} {
		r := cli(t, env, "inspect", "--message", writeFile(t, "message.json", tc.text)).want(t, exitRefused)
		if !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "SECRET") || strings.Contains(r.stderr, "4417") || strings.Contains(r.stderr, "aaaa") {
			t.Errorf("%s: %q, want %q and nothing of the file", name, r.stderr, tc.want)
		}
	}
}
