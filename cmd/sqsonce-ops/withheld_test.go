package main

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestRedriveClassesWithheld: a dead-letter message whose record completed
// with its result withheld (it could not be sealed) is not counted as one
// that will replay: its redelivery fails again, and the operation does not
// run.
func TestRedriveClassesWithheld(t *testing.T) {
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{envTable: "t", envNamespace: "orders"}
	inv, err := parse([]string{"inspect", "--id", "x"}, func(k string) string { return env[k] }, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	o := &ops{g: inv.g, store: store, inspect: store, guard: g}
	body := func(k string) string {
		return `{"idempotency_key":"` + k + `","document":{"id":"d","version":1},"prompt_version":"v1"}`
	}
	ctx := context.Background()
	now := time.Now()
	for _, tc := range []struct {
		key, data, want string
	}{
		{"order-withheld", driver.WithheldData, classWithheld},
		{"order-done", `{"summary":"done"}`, classReplay},
	} {
		m := &dlqMessage{msg: types.Message{MessageId: aws.String("m-" + tc.key), Body: aws.String(body(tc.key))}}
		id, err := messageID(o, handler.Key(), events.SQSMessage{Body: body(tc.key)})
		if err != nil {
			t.Fatal(err)
		}
		claim := driver.Record{ID: id, Status: driver.StatusInProgress, Owner: "o", ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute)}
		if _, _, err := store.Acquire(ctx, claim, now.Add(-time.Hour), driver.Takeover); err != nil {
			t.Fatal(err)
		}
		done := claim
		done.Status, done.Data = driver.StatusCompleted, []byte(tc.data)
		if _, err := store.Complete(ctx, done); err != nil {
			t.Fatal(err)
		}
		(&redriveCmd{}).classify(ctx, o, handler.Key(), m)
		if m.Class != tc.want || m.RecordID != id {
			t.Errorf("%s: class %q, record %s; want %q, %s", tc.key, m.Class, m.RecordID, tc.want, id)
		}
	}
}
