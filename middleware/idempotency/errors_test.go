package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestErrorMessagesReadOnce checks the exact text of the common errors: the
// package prefix begins each message once, however many of the package's
// errors it wraps.
func TestErrorMessagesReadOnce(t *testing.T) {
	failingStore := &faultStore{Store: memstore.New(), acquireErr: errors.New("connection refused")}
	guard := func(store driver.Store) *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "ns", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ok := func(context.Context, events.SQSMessage) (string, error) { return "done", nil }
	msg := func(body string) events.SQSMessage { return events.SQSMessage{MessageId: "x2", Body: body} }
	keyField := idempotency.BodyField("idempotency_key")
	firstOf := idempotency.FirstOf(keyField, idempotency.BodySubset("document_id"))
	g := guard(memstore.New())
	id := mustID(t, g, idempotency.Raw([]byte(`"k"`)))

	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"missing body field", func() error {
			_, err := idempotency.Wrap(g, keyField, ok)(t.Context(), msg(`{}`))
			return err
		}, `idempotency: key from body field "idempotency_key" of input x2: no idempotency key`},
		{"no key from any source", func() error {
			_, err := idempotency.Wrap(g, firstOf, ok)(t.Context(), msg(`{}`))
			return err
		}, `idempotency: key from any of 2 key sources of input x2: no idempotency key ` +
			`(body field "idempotency_key": missing; body subset document_id: field "document_id" is missing)`},
		{"key function returning ErrNoKey", func() error {
			_, err := idempotency.Wrap(g, idempotency.SelectorFunc(func(events.SQSMessage) (idempotency.Selection, error) {
				return idempotency.Selection{}, idempotency.ErrNoKey
			}), ok)(t.Context(), msg(`{}`))
			return err
		}, `idempotency: key from events.SQSMessage of input x2: no idempotency key`},
		{"validation payload refused", func() error {
			validate := func(events.SQSMessage) (idempotency.Selection, error) {
				return idempotency.Selection{}, errors.New("handler: invalid request")
			}
			_, err := idempotency.Wrap(g, keyField, ok, idempotency.WithPayload(idempotency.SelectorFunc(validate)))(t.Context(), msg(`{"idempotency_key":"k"}`))
			return err
		}, `idempotency: key from events.SQSMessage of input x2: payload for validation: handler: invalid request`},
		{"Do without a key", func() error {
			_, err := idempotency.Do(t.Context(), g, idempotency.Selection{}, func(context.Context) (int, error) { return 1, nil })
			return err
		}, `idempotency: key from Do: no idempotency key`},
		{"store error on claim", func() error {
			_, err := idempotency.Do(t.Context(), guard(failingStore), idempotency.Raw([]byte(`"k"`)), func(context.Context) (int, error) { return 1, nil })
			return err
		}, `idempotency: store acquire ` + id + `: connection refused`},
		{"panic with an error of the package", func() error {
			_, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"p"`)), func(context.Context) (int, error) { panic(idempotency.ErrNotClaimed) })
			return err
		}, fmt.Sprintf("batch: panic: a %T (%s)", idempotency.ErrNotClaimed, redact.Digest(idempotency.ErrNotClaimed.Error()))},
		{"store error wrapping a sentinel", func() error {
			return &idempotency.StoreError{Op: "complete", ID: "ns#1", Err: driver.ErrLeaseLost}
		}, `idempotency: store complete ns#1: lease lost`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err == nil || err.Error() != tt.want {
				t.Errorf("error\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
}
