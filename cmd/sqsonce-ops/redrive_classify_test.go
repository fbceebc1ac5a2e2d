package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/middleware/batch/sqsdlq"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// dryRunClasses runs redrive --dry-run and returns each message's class
// and record id by message id.
func dryRunClasses(t *testing.T, env map[string]string, q queues, extra ...string) map[string]redriveMessage {
	t.Helper()
	args := append([]string{"redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s", "--dry-run", "--json"}, extra...)
	var r redriveReport
	cli(t, env, args...).want(t, exitOK).decode(t, &r)
	out := map[string]redriveMessage{}
	for _, m := range r.Messages {
		out[m.MessageID] = m
	}
	return out
}

// sendToDLQ puts a message straight into the dead-letter queue, as sqsdlq
// moves one, and returns its message id.
func sendToDLQ(t *testing.T, q queues, body string, attrs map[string]types.MessageAttributeValue) string {
	t.Helper()
	out, err := q.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.dlq.URL),
		MessageBody: aws.String(body), MessageAttributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.MessageId)
}

// TestRedriveStrict: a claim whose lease lapsed is classed by what its
// redelivery does: taken over and run by a default function, quarantined
// ("key quarantined") when the claim is strict (the record says so,
// whatever the function) or the function is (--strict, $SQSONCE_STRICT).
// Each class is then checked against a real guard's redelivery.
func TestRedriveStrict(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	body := func(key string) string { return `{"idempotency_key":"` + key + `"}` }
	now := time.Now().Truncate(time.Millisecond)
	lapsedClaim := func(key string, strict bool) string {
		id := idOf(t, g, body(key))
		rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(24 * time.Hour),
			LeaseUntil: now.Add(-10 * time.Minute), Owner: "dead-worker-" + key}
		if strict {
			rec.StrictLease, rec.LeaseUntil = rec.LeaseUntil, rec.ExpiresAt // as a strict guard writes its claim
		}
		if _, loaded, err := store.Acquire(context.Background(), rec, now.Add(-time.Hour), driver.NoTakeover); err != nil || loaded {
			t.Fatalf("seed the claim of %s: loaded %v, %v", key, loaded, err)
		}
		if v := inspectJSON(t, env, exitOK, "--id", id); v.State != stateLeaseLapsed {
			t.Fatalf("the claim of %s: state %s, want %s", key, v.State, stateLeaseLapsed)
		}
		return id
	}
	// A strict claim; two default ones (one for a strict function's
	// redelivery, one for a default function's).
	strictClaim := lapsedClaim("k-strict-claim", true)
	defaultClaim := lapsedClaim("k-default-claim", false)
	control := lapsedClaim("k-control", false)
	q := newQueues(t)
	msgOf := map[string]string{}
	for _, k := range []string{"k-strict-claim", "k-default-claim", "k-control"} {
		msgOf[k] = sendToDLQ(t, q, body(k), nil)
	}

	strictEnv := func(v string) map[string]string {
		e := map[string]string{}
		for k, val := range env {
			e[k] = val
		}
		e[envStrict] = v
		return e
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		extra []string
		want  map[string]string // class by key
	}{
		{"default function", env, nil,
			map[string]string{"k-strict-claim": classQuarantined, "k-default-claim": classRun, "k-control": classRun}},
		{"SQSONCE_STRICT=true", strictEnv("true"), nil,
			map[string]string{"k-strict-claim": classQuarantined, "k-default-claim": classQuarantined, "k-control": classQuarantined}},
		{"--strict", env, []string{"--strict"},
			map[string]string{"k-strict-claim": classQuarantined, "k-default-claim": classQuarantined, "k-control": classQuarantined}},
		{"SQSONCE_STRICT=true --strict=false", strictEnv("true"), []string{"--strict=false"},
			map[string]string{"k-strict-claim": classQuarantined, "k-default-claim": classRun, "k-control": classRun}},
	} {
		got := dryRunClasses(t, tc.env, q, tc.extra...)
		for key, want := range tc.want {
			m := got[msgOf[key]]
			if m.Class != want {
				t.Errorf("%s: the lapsed claim of %s: class %q (%s), want %q", tc.name, key, m.Class, m.Problem, want)
			}
			if strings.Contains(m.Problem, key) {
				t.Errorf("%s: the problem quotes the message: %s", tc.name, m.Problem)
			}
		}
	}

	// The redeliveries, as the function's guard runs them.
	redeliver := func(strict bool, key string) (ran bool, err error) {
		fg, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Strict: strict, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		f := idempotency.Wrap(fg, handler.Key(), func(context.Context, events.SQSMessage) (string, error) { ran = true; return "done", nil })
		_, err = f(context.Background(), events.SQSMessage{MessageId: "redelivered", Body: body(key)})
		return ran, err
	}
	for _, tc := range []struct {
		name        string
		strict      bool
		key, id     string
		quarantined bool
	}{
		{"a strict claim, a default function", false, "k-strict-claim", strictClaim, true},
		{"a default claim, a strict function", true, "k-default-claim", defaultClaim, true},
		{"a default claim, a default function", false, "k-control", control, false},
	} {
		ran, err := redeliver(tc.strict, tc.key)
		if tc.quarantined && (ran || !errors.Is(err, idempotency.ErrQuarantined)) {
			t.Errorf("%s: the redelivery ran %v, %v; want %v, as redrive classed it", tc.name, ran, err, idempotency.ErrQuarantined)
		}
		if !tc.quarantined && (!ran || err != nil) {
			t.Errorf("%s: the redelivery ran %v, %v; want it run, as redrive classed it", tc.name, ran, err)
		}
	}
}

// TestStrictSetting: $SQSONCE_STRICT takes the values the function
// accepts (true, false); another is refused, naming the variable.
func TestStrictSetting(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "true": true} {
		inv, err := parse([]string{"list"}, func(k string) string {
			return map[string]string{envTable: "t", envNamespace: "n", envStrict: v}[k]
		}, nil)
		if err != nil || inv.g.strict != want {
			t.Errorf("$SQSONCE_STRICT=%q: %+v, %v; want strict %v", v, inv, err, want)
		}
	}
	_, err := parse([]string{"list"}, func(k string) string {
		return map[string]string{envTable: "t", envNamespace: "n", envStrict: "on"}[k]
	}, nil)
	if err == nil || !strings.Contains(err.Error(), "SQSONCE_STRICT") {
		t.Errorf(`$SQSONCE_STRICT="on": %v, want it refused`, err)
	}
}

// TestRedriveMessageAttributes: a key source that reads the message's
// attributes gets them as Lambda's event presents them to the function
// (string and binary values, data types), without the attributes sqsdlq
// added, which redrive does not send back: the record the function wrote
// is found and replays.
func TestRedriveMessageAttributes(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q := newQueues(t)
	bin := []byte{0x00, 0xff, 0x10, 'k'}
	for _, expr := range []string{
		"messageAttributes.idem.stringValue",
		"[messageAttributes.idem.dataType, messageAttributes.blob.binaryValue]",
		"[messageAttributes.idem.stringValue, length(messageAttributes)]", // the redelivery's attributes, and only those
	} {
		t.Run(expr, func(t *testing.T) {
			key := "order-" + strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' {
					return r
				}
				return -1
			}, expr)
			// The function's record, written from the message as Lambda
			// delivers it after the redrive.
			lambdaMsg := events.SQSMessage{MessageId: "m-1", Body: `{"note":"no key here"}`, MessageAttributes: map[string]events.SQSMessageAttribute{
				"idem": {StringValue: aws.String(key), DataType: "String"},
				"blob": {BinaryValue: bin, DataType: "Binary"},
			}}
			f := idempotency.Wrap(g, jmespath.MustCompile(expr).Selector(), func(context.Context, events.SQSMessage) (string, error) { return "done", nil })
			if _, err := f(context.Background(), lambdaMsg); err != nil {
				t.Fatal(err)
			}
			k, err := idempotency.Select(jmespath.MustCompile(expr).Selector(), lambdaMsg)
			if err != nil {
				t.Fatal(err)
			}
			want, err := g.ID(k)
			if err != nil {
				t.Fatal(err)
			}
			str := func(v string) types.MessageAttributeValue {
				return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
			}
			id := sendToDLQ(t, q, lambdaMsg.Body, map[string]types.MessageAttributeValue{
				"idem": str(key), "blob": {DataType: aws.String("Binary"), BinaryValue: bin},
				sqsdlq.AttrReason: str("permanent: a test"), sqsdlq.AttrErrorType: str("*errors.errorString"),
			})
			defer q.drain(t, q.dlq.URL)
			e := map[string]string{}
			for k, v := range env {
				e[k] = v
			}
			e[envKey] = "jmespath:" + expr
			m := dryRunClasses(t, e, q)[id]
			if m.Class != classReplay || m.RecordID != want {
				t.Errorf("key %s: class %q, record %s (%s); want %q, the function's record %s", expr, m.Class, m.RecordID, m.Problem, classReplay, want)
			}
		})
	}
}

// TestRedriveRedelivery: redrive classes a message by the record id of its
// redelivery, the message as Lambda will deliver it from --queue. A key on
// what SQS keeps (the body, the source queue's ARN and region, the MD5s of
// the body and of the attributes redrive sends) finds the function's record
// and replays, as does one on the receive count (the redelivery's first
// receive, as the function's was); a key on what each delivery gets anew
// (the message id, the time it was sent) is classed run. Each class is checked against the real
// redelivery on moto, delivered as Lambda delivers it.
func TestRedriveRedelivery(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q := newQueues(t)
	ctx := context.Background()
	arn, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.source.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	sourceARN := arn.Attributes[string(types.QueueAttributeNameQueueArn)]
	// deliver receives the one message of the source queue and deletes it:
	// the record Lambda delivers.
	deliver := func(t *testing.T) events.SQSMessage {
		t.Helper()
		out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.source.URL), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: esm.SystemAttributes})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) != 1 {
			t.Fatalf("%d messages in the source queue, want 1", len(out.Messages))
		}
		if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.source.URL), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
		return esm.Event(sourceARN, out.Messages).Records[0]
	}
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	for i, c := range []struct{ expr, want string }{
		{"[powertools_json(body).k, eventSourceARN, awsRegion, eventSource, md5OfBody, md5OfMessageAttributes, messageAttributes.idem.stringValue, messageAttributes.blob.binaryValue, messageAttributes.blob.dataType]", classReplay},
		// The redelivery's first receive, as the first delivery's.
		{"[powertools_json(body).k, attributes.ApproximateReceiveCount]", classReplay},
		{"[powertools_json(body).k, messageId]", classRun},
		{"[powertools_json(body).k, attributes.SentTimestamp]", classRun},
	} {
		t.Run(c.expr, func(t *testing.T) {
			body := fmt.Sprintf(`{"k":"order-%d"}`, i)
			attrs := map[string]types.MessageAttributeValue{"idem": str(fmt.Sprint("a-", i)), "blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 0xff, byte(i)}}}
			ran := 0
			f := idempotency.Wrap(g, jmespath.MustCompile(c.expr).Selector(), func(context.Context, events.SQSMessage) (string, error) { ran++; return "done", nil })
			// The first delivery, which the function completes; then the
			// message in the dead-letter queue as sqsdlq moves it.
			if _, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.source.URL), MessageBody: aws.String(body), MessageAttributes: attrs}); err != nil {
				t.Fatal(err)
			}
			if _, err := f(ctx, deliver(t)); err != nil || ran != 1 {
				t.Fatalf("first delivery: ran %d times, %v", ran, err)
			}
			moved := map[string]types.MessageAttributeValue{sqsdlq.AttrReason: str("permanent: a test"), sqsdlq.AttrMessageID: str("m-1")}
			for k, v := range attrs {
				moved[k] = v
			}
			id := sendToDLQ(t, q, body, moved)
			e := map[string]string{}
			for k, v := range env {
				e[k] = v
			}
			e[envKey] = "jmespath:" + c.expr
			m := dryRunClasses(t, e, q)[id]
			if m.Class != c.want {
				t.Errorf("key %s: class %q (%s), want %q", c.expr, m.Class, m.Problem, c.want)
			}
			cli(t, e, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s").want(t, exitOK)
			if _, err := f(ctx, deliver(t)); err != nil {
				t.Fatal(err)
			}
			if wantRan := map[string]int{classReplay: 1, classRun: 2}[c.want]; ran != wantRan {
				t.Errorf("key %s classed %q: the redelivery ran the operation %d times in all, want %d", c.expr, m.Class, ran, wantRan)
			}
		})
	}
}
