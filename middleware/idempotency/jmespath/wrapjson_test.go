package jmespath_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestSelectorInWrapJSON: in idempotency.WrapJSON an expression's Selector
// is evaluated on the message, as its doc says, whatever the request type:
// for a request type of any too, which a SelectorFunc of any takes. Before,
// it was evaluated there on the decoded body, so that
// powertools_json(body).k failed every message and an expression that
// read the body's members directly gave an id Powertools never computes.
// The key and the payload give Wrap's record id, in every format.
func TestSelectorInWrapJSON(t *testing.T) {
	key := jmespath.MustCompile("powertools_json(body).k").Selector()
	payload := jmespath.MustCompile("powertools_json(body).p").Selector()
	m := events.SQSMessage{MessageId: "m-1", Body: `{"k":"a","p":[1,2]}`}
	other := events.SQSMessage{MessageId: "m-2", Body: `{"k":"a","p":[2,1]}`}
	for _, f := range formats {
		sel, err := idempotency.Select(key, m)
		if err != nil {
			t.Fatal(err)
		}
		g0, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: f})
		if err != nil {
			t.Fatal(err)
		}
		want, err := g0.ID(sel)
		if err != nil {
			t.Fatal(err)
		}
		for name, h := range map[string]func(*idempotency.Guard) func(context.Context, events.SQSMessage) (string, error){
			"any": func(g *idempotency.Guard) func(context.Context, events.SQSMessage) (string, error) {
				return idempotency.WrapJSON(g, key, func(context.Context, any, events.SQSMessage) (string, error) { return "v", nil },
					idempotency.WithPayload(payload))
			},
			"map": func(g *idempotency.Guard) func(context.Context, events.SQSMessage) (string, error) {
				return idempotency.WrapJSON(g, key, func(context.Context, map[string]any, events.SQSMessage) (string, error) { return "v", nil },
					idempotency.WithPayload(payload))
			},
		} {
			var ids []string
			g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: f, Logger: slog.New(slog.DiscardHandler),
				OnOutcome: func(_ context.Context, r idempotency.Report) { ids = append(ids, r.ID) }})
			if err != nil {
				t.Fatal(err)
			}
			fn := h(g)
			if v, err := fn(t.Context(), m); err != nil || v != "v" {
				t.Errorf("%v, request type %s: %q, %v; want it run", f, name, v, err)
				continue
			}
			if len(ids) != 1 || ids[0] != want {
				t.Errorf("%v, request type %s: record ids %v, want Wrap's %s", f, name, ids, want)
			}
			// The payload is the message's: another one is a mismatch.
			if _, err := fn(t.Context(), other); err == nil {
				t.Errorf("%v, request type %s: another payload under the key was replayed, want a mismatch", f, name)
			}
		}
	}
}

// TestSelectorNilInput: a nil input of an interface type is the JSON null
// to the expression, not a panic.
func TestSelectorNilInput(t *testing.T) {
	_, err := idempotency.Select(jmespath.MustCompile("k").Selector(), any(nil))
	if err == nil {
		t.Fatal("a key of null: no error")
	}
	if _, ok := err.(*idempotency.KeyError); !ok {
		t.Errorf("%T %v, want a *KeyError", err, err)
	}
}
