package ptinterop_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	ptinterop "github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// TestWrapJSONShares: a function made by idempotency.WrapJSON (each body
// decoded into the request type) shares the table with Powertools
// TypeScript as Wrap does, with the key and the payload given as the docs
// say give Powertools' ids: the same JMESPath expressions, for a struct
// request type and one of any, or BodyField. Each side replays the
// other's completed record, and another payload under a key fails on the
// side that did not write it.
func TestWrapJSONShares(t *testing.T) {
	tb := newTable(t)
	pkey, ppayload := jmespath.MustCompile(keyJMESPath).Selector(), jmespath.MustCompile(validationPath).Selector()
	for _, c := range []struct {
		name         string
		key, payload idempotency.Selector
		anyRequest   bool
	}{
		{"JMESPath, struct request", pkey, ppayload, false},
		{"JMESPath, request of any", pkey, ppayload, true},
		{"BodyField", idempotency.BodyField("idempotency_key"), idempotency.BodyField("payload"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := idempotency.New(idempotency.Config{Store: tb.store, Namespace: keyPrefix, Format: idempotency.FormatPowertoolsTypeScript,
				Tenancy: idempotency.TenancyOff, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			ran := map[string]bool{}
			results := map[string]any{}
			result := func(m events.SQSMessage) (any, error) {
				ran[m.MessageId] = true
				var b body
				if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
					return nil, err
				}
				var v any
				return v, json.Unmarshal(b.Result, &v)
			}
			var op func(context.Context, events.SQSMessage) (any, error)
			if c.anyRequest {
				op = idempotency.WrapJSON(g, c.key, func(_ context.Context, _ any, m events.SQSMessage) (any, error) { return result(m) },
					idempotency.WithPayload(c.payload))
			} else {
				op = idempotency.WrapJSON(g, c.key, func(_ context.Context, _ body, m events.SQSMessage) (any, error) { return result(m) },
					idempotency.WithPayload(c.payload), idempotency.DisallowUnknownFields())
			}
			h := batch.SQS(func(ctx context.Context, m events.SQSMessage) (any, error) {
				v, err := op(ctx, m)
				results[m.MessageId] = v
				return v, err
			}, batch.Options{Logger: slog.New(slog.DiscardHandler), NoFullBatchError: true, Concurrency: 1})
			run := func(msgs ...events.SQSMessage) []string {
				resp, err := h(context.Background(), events.SQSEvent{Records: msgs})
				if err != nil {
					t.Fatal(err)
				}
				return failed(resp.BatchItemFailures)
			}
			payload := map[string]any{"document_id": "d-1", "version": "9"}
			other := map[string]any{"document_id": "d-1", "version": "10"}

			// sqsonce writes; Powertools replays, and fails another payload.
			k1 := "k-" + rand.Text()
			first := message(k1, payload, `{"summary":"one"}`)
			if f := run(first); len(f) != 0 || !ran[first.MessageId] {
				t.Fatalf("sqsonce: failures %v, ran %v", f, ran)
			}
			again, mismatched := message(k1, payload, `"not this"`), message(k1, other, `"not this"`)
			rep := powertools(t, tb, func(r *ptinterop.Request) { r.PayloadValidationJMESPath = validationPath }, again, mismatched)
			if len(rep.Ran) != 0 {
				t.Errorf("powertools ran %v for a key sqsonce completed", rep.Ran)
			}
			if rec := rep.Events[0].Records[0]; rec.Status != "success" || string(rec.Value) != `{"summary":"one"}` {
				t.Errorf("powertools replayed %+v, want {\"summary\":\"one\"}", rec)
			}
			if rec := rep.Events[0].Records[1]; rec.Status != "fail" {
				t.Errorf("powertools took another payload under the key: %+v", rec)
			}

			// Powertools writes; sqsonce replays, and fails another payload.
			k2 := "k-" + rand.Text()
			if rep := powertools(t, tb, func(r *ptinterop.Request) { r.PayloadValidationJMESPath = validationPath },
				message(k2, payload, `{"summary":"two"}`)); len(rep.Ran) != 1 {
				t.Fatalf("powertools: ran %v", rep.Ran)
			}
			again, mismatched = message(k2, payload, `"not this"`), message(k2, other, `"not this"`)
			f := run(again, mismatched)
			if ran[again.MessageId] || ran[mismatched.MessageId] {
				t.Errorf("sqsonce ran the operation for a key Powertools completed")
			}
			if !sameJSON(t, results[again.MessageId], `{"summary":"two"}`) {
				t.Errorf("sqsonce replayed %#v, want {\"summary\":\"two\"}", results[again.MessageId])
			}
			if len(f) != 1 || f[0] != mismatched.MessageId {
				t.Errorf("sqsonce failures %v, want the other payload's message %s only", f, mismatched.MessageId)
			}
		})
	}
}
