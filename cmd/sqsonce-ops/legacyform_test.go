package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// TestResolveResultLikeLegacySeal: resolve, without --seal-key, of a
// string result in the syntax of the sealed form earlier builds wrote
// ("sqsonce:sealed:1:" and base64, or nothing: the withheld form) stores
// it as the guard stores such a result, its first character escaped, and
// the next delivery replays it. Before, it was stored as given, and every
// delivery failed with ErrUnsealed (for good, of the withheld form) though
// nothing was sealed.
func TestResolveResultLikeLegacySeal(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i, result := range []string{"sqsonce:sealed:1:QUJD", "sqsonce:sealed:1:"} {
		body := `{"idempotency_key":"order-` + string(rune('a'+i)) + `"}`
		id := idOf(t, g, body)
		now := time.Now()
		quarantineDynamo(db, table)(t, driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
			LeaseUntil: now.Add(time.Hour), Owner: "worker-1", Quarantined: now.Add(-time.Minute)})
		cli(t, env, "resolve", "--id", id, "--owner", "worker-1", "--result", `"`+result+`"`).want(t, exitOK)
		k, err := idempotency.Select(idempotency.BodyField("idempotency_key"), events.SQSMessage{MessageId: "m", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		v, err := idempotency.Do(context.Background(), g, k, func(context.Context) (string, error) { ran = true; return "again", nil })
		if err != nil || ran || v != result {
			t.Errorf("%q resolved, the next delivery: %q, ran %v, %v; want the result replayed", result, v, ran, err)
		}
	}
}
