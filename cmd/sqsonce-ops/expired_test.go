package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// TestResolveExpiredClaimRefused: an INPROGRESS claim past its expiry
// (DynamoDB's TTL deletes items late, so inspect still shows it) protects
// nothing: every store treats it as absent. resolve and release refuse it,
// exit 1, and write nothing, rather than report a resolve the next delivery
// ignores.
func TestResolveExpiredClaimRefused(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"idempotency_key":"order-17"}`
	id := idOf(t, g, body)
	now := time.Now()
	quarantineDynamo(db, table)(t, driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(-time.Minute),
		LeaseUntil: now.Add(-time.Hour), Owner: "worker-1", Quarantined: now.Add(-50 * time.Minute)})
	for _, args := range [][]string{
		{"resolve", "--id", id, "--owner", "worker-1", "--result", `"paid"`},
		{"release", "--id", id, "--owner", "worker-1"},
	} {
		r := cli(t, env, args...)
		if r.code != exitFailed || !strings.Contains(r.stderr, "expired") {
			t.Errorf("%s: exit %d, stderr %q: want exit %d naming the expiry", args[0], r.code, r.stderr, exitFailed)
		}
	}
	rec, err := store.Inspect(context.Background(), id)
	if err != nil || rec.Status != driver.StatusInProgress || rec.Owner != "worker-1" {
		t.Errorf("the record changed: %+v, %v", rec, err)
	}
	k, err := idempotency.Select(idempotency.BodyField("idempotency_key"), events.SQSMessage{MessageId: "m", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	if _, err := idempotency.Do(context.Background(), g, k, func(context.Context) (string, error) { ran = true; return "again", nil }); err != nil || !ran {
		t.Errorf("the next delivery: ran %v, %v; an expired claim is absent to the guard", ran, err)
	}
}
