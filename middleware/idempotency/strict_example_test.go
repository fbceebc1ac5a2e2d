package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// Strict mode for payments, beside the default for the rest, on one guard:
// a payment whose worker died mid-call is quarantined, never charged twice.
func ExampleStrict() {
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	key := idempotency.BodyField("idempotency_key")
	charge := idempotency.Wrap(g, key,
		func(ctx context.Context, m events.SQSMessage) (string, error) {
			fmt.Println("charging the card")
			return "charged", nil
		}, idempotency.Strict())

	// A worker claimed order 7 an hour ago and died mid-charge.
	msg := events.SQSMessage{MessageId: "m1", Body: `{"idempotency_key":"order-7"}`}
	k, _ := idempotency.Select(key, msg)
	id, _ := g.ID(k)
	now := time.Now()
	_, _, _ = store.Acquire(context.Background(), driver.Record{ID: id, Status: driver.StatusInProgress,
		ExpiresAt: now.Add(24 * time.Hour), LeaseUntil: now.Add(-time.Hour), Owner: "dead-worker"}, now.Add(-time.Hour), driver.Takeover)

	_, err = charge(context.Background(), msg)
	var qe *idempotency.QuarantinedError
	fmt.Println(errors.As(err, &qe), errors.Is(err, idempotency.ErrQuarantined))
	rec, _ := store.Get(id)
	fmt.Println(rec.Status, !rec.Quarantined.IsZero())
	// Output:
	// true true
	// INPROGRESS true
}
