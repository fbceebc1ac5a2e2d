package handler_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// typedApp is the summarise handler wired as cmd/summarise wires it:
// idempotency.WrapJSON with handler.RequestKey and handler.RequestOptions,
// in memory, with the stub provider.
type typedApp struct {
	calls  *handler.Calls
	events []idempotency.Report
	handle func(context.Context, events.SQSMessage) (handler.Summary, error)
}

func newTypedApp(t *testing.T) *typedApp {
	t.Helper()
	a := &typedApp{calls: &handler.Calls{}}
	g, err := idempotency.New(idempotency.Config{
		Store: memstore.New(), Namespace: "summarise", Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) { a.events = append(a.events, ev) },
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(handler.Config{Documents: docs, Provider: handler.LogRequests(handler.Stub{}, a.calls, nil), Model: "default-model"})
	if err != nil {
		t.Fatal(err)
	}
	a.handle = idempotency.WrapJSON(g, handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...)
	return a
}

const typedReq = `{"idempotency_key":"sum-4471-9","document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7},"request_id":"r-1"}`

// TestBodyDuplicates: the broker's duplicate and the producer's re-send of
// one request make one provider call and get one summary.
func TestBodyDuplicates(t *testing.T) {
	a := newTypedApp(t)
	resend := strings.Replace(typedReq, `"r-1"`, `"r-2"`, 1)
	var sums []handler.Summary
	for _, m := range []events.SQSMessage{{MessageId: "m-1", Body: typedReq}, {MessageId: "m-1", Body: typedReq}, {MessageId: "m-2", Body: resend}} {
		s, err := a.handle(t.Context(), m)
		if err != nil {
			t.Fatalf("%s: %v", m.MessageId, err)
		}
		sums = append(sums, s)
	}
	if a.calls.Len() != 1 || sums[1] != sums[0] || sums[2] != sums[0] {
		t.Errorf("%d provider calls, summaries %+v; want one call and one summary", a.calls.Len(), sums)
	}
	if rec := a.calls.Records()[0]; rec.RecordID != sums[0].ID || !strings.HasPrefix(rec.RecordID, "summarise#") || rec.Model != "m1" {
		t.Errorf("request log %+v, summary id %q", rec, sums[0].ID)
	}
}

// TestBodyFailures: with the typed wiring, a body that is not a valid
// request, or has no key, fails before any claim (BodyError or KeyError, no
// run); a reused key fails against the stored record; a missing document
// fails inside HandleRequest, which the guard releases.
func TestBodyFailures(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    error
		bodyErr bool // a *BodyError (else a *KeyError, when before the claim)
		claimed bool
	}{
		{"not JSON", `{"document": {`, nil, true, false},
		{"not an object", `["4471"]`, nil, true, false},
		{"unknown parameter", `{"document":{"id":"4471","version":"9"},"prompt_version":"v1","parameters":{"temp":1}}`, nil, true, false},
		{"invalid with producer key", `{"idempotency_key":"k-2","document":{"id":"4471","version":"9"},"prompt_version":"v1","parameters":{"temperature":-1}}`,
			handler.ErrInvalidRequest, true, false},
		{"unknown prompt version", `{"document":{"id":"4471","version":"9"},"prompt_version":"v9"}`, handler.ErrInvalidRequest, true, false},
		{"producer key without a document", `{"idempotency_key":"k-3","prompt_version":"v1"}`, handler.ErrInvalidRequest, true, false},
		{"missing key", `{"model":"m1","prompt_version":"v1","request_id":"r-9"}`, idempotency.ErrNoKey, false, false},
		{"producer key reused for other work", `{"idempotency_key":"sum-4471-9","document":{"id":"4472","version":"1"},"model":"m1","prompt_version":"v1"}`,
			idempotency.ErrPayloadMismatch, false, true},
		{"document not found", `{"document":{"id":"4471","version":"99"},"prompt_version":"v1"}`, handler.ErrDocumentNotFound, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTypedApp(t)
			if _, err := a.handle(t.Context(), events.SQSMessage{MessageId: "m-1", Body: typedReq}); err != nil {
				t.Fatal(err)
			}
			for delivery := 1; delivery <= 2; delivery++ {
				_, err := a.handle(t.Context(), events.SQSMessage{MessageId: "m-2", Body: tt.body})
				if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
					t.Fatalf("delivery %d: error %v, want %v", delivery, err, tt.want)
				}
				var be *idempotency.BodyError
				var ke *idempotency.KeyError
				switch {
				case tt.bodyErr && (!errors.As(err, &be) || be.Type != "handler.Request"):
					t.Errorf("delivery %d: error %v, want a *BodyError for handler.Request", delivery, err)
				case !tt.bodyErr && !tt.claimed && !errors.As(err, &ke):
					t.Errorf("delivery %d: error %v, want a *KeyError", delivery, err)
				case tt.claimed && (errors.As(err, &be) || errors.As(err, &ke)):
					t.Errorf("delivery %d: error %v, want one from the claim or the run", delivery, err)
				}
				ev := a.events[len(a.events)-1]
				if ev.ID == "" == tt.claimed || ev.Ran != (tt.want == handler.ErrDocumentNotFound) {
					t.Errorf("delivery %d: outcome %+v: want a record id only when claimed, a run only for the missing document", delivery, ev)
				}
			}
			if n := a.calls.Len(); n != 1 {
				t.Errorf("provider calls = %d, want only the first message's", n)
			}
		})
	}
}

// TestBodyKeysMatchWrap: the typed wiring's key and payload hash, in every
// format, to those of Key and WorkKey on the raw body, so that the two
// wirings find each other's records.
func TestBodyKeysMatchWrap(t *testing.T) {
	for _, body := range []string{
		typedReq,
		`{"document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7,"max_tokens":200}}`,
		`{"parameters":{"max_tokens":200,"temperature":7e-1},"prompt_version":"v1","model":"m1","document":{"version":9,"id":4471}}`,
		`{"idempotency_key":"","document":{"id":"4471","version":"9"},"prompt_version":"v2","parameters":{"stop_sequences":["END","<&>"]}}`,
		`{"idempotency_key":null,"document":{"id":"a_b-c.d","version":"0"},"prompt_version":"v1","parameters":{"top_p":1}}`,
		`{"idempotency_key":"caf\u00e9 <&> \"quoted\" \\ \ud83d\ude00","document":{"id":"1","version":"2"},"prompt_version":"v1"}`,
		`{"idempotency_key":"  spaces  ","document":{"id":"1","version":"2"},"prompt_version":"v1","request_id":"r","sent_at":"2026-11-29T10:00:00Z"}`,
	} {
		m := events.SQSMessage{MessageId: "m", Body: body}
		r, err := handler.ParseRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		wantKey, err := idempotency.Select(handler.Key(), m)
		if err != nil {
			t.Fatal(err)
		}
		wantPayload, err := handler.WorkKey(m)
		if err != nil {
			t.Fatal(err)
		}
		gotPayload, err := handler.WorkPayload(r)
		if err != nil {
			t.Fatalf("%s: WorkPayload: %v", body, err)
		}
		for _, f := range []idempotency.Format{idempotency.FormatNative, idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript} {
			if got, want := typedID(t, f, m), "summarise#"+hash(t, f, wantKey); got != want {
				t.Errorf("%s: format %v: RequestKey's record id %s, Key's %s (%s)", body, f, got, want, wantKey.Value)
			}
			if got, want := hash(t, f, gotPayload), hash(t, f, wantPayload); got != want {
				t.Errorf("%s: format %v:\nWorkPayload %s (%s)\nWorkKey     %s (%s)", body, f, gotPayload.Value, got, wantPayload.Value, want)
			}
		}
	}
}

// typedID is the record id the typed wiring claims for m, in format f.
func typedID(t *testing.T, f idempotency.Format, m events.SQSMessage) string {
	t.Helper()
	var id string
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise", Format: f,
		Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) { id = r.ID }})
	if err != nil {
		t.Fatal(err)
	}
	h := idempotency.WrapJSON(g, handler.RequestKey(), func(context.Context, handler.Request, events.SQSMessage) (int, error) { return 1, nil },
		handler.RequestOptions()...)
	if _, err := h(t.Context(), m); err != nil {
		t.Fatalf("format %v: %v", f, err)
	}
	return id
}

func hash(t *testing.T, f idempotency.Format, k idempotency.Selection) string {
	t.Helper()
	h, err := f.Hash(k)
	if err != nil {
		t.Fatalf("format %v: hash %s: %v", f, k.Value, err)
	}
	return h
}
