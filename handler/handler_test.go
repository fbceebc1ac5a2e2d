package handler_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

var docs = handler.Dir(filepath.Join("..", "samples", "documents"))

// app is the summarise handler wrapped the way cmd/summarise wraps it, with
// an in-memory store and the stub provider logging to calls.
type app struct {
	calls  *handler.Calls
	sink   *handler.MemorySink
	handle func(context.Context, events.SQSMessage) (handler.Summary, error)
}

func newApp(t *testing.T, provider handler.Provider) *app {
	t.Helper()
	a := &app{calls: &handler.Calls{}, sink: &handler.MemorySink{}}
	key := handler.Key()
	g, err := idempotency.New(idempotency.Config{
		Store:     memstore.New(),
		Namespace: "summarise",
		Validate:  handler.WorkKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(handler.Config{
		Documents: docs,
		Provider:  handler.LogRequests(provider, a.calls, nil),
		Sink:      a.sink,
		Model:     "default-model",
		KeyID: func(m events.SQSMessage) string {
			k, err := key(m)
			if err != nil {
				return ""
			}
			return g.ID(k)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a.handle = idempotency.Wrap(g, key, h.Handle)
	return a
}

const req4471 = `{"idempotency_key":"sum-4471-9","document":{"id":"4471","version":"9"},"model":"m1","prompt_version":"v1","parameters":{"temperature":0.7},"request_id":"r-1"}`

func TestHandleDuplicateDelivery(t *testing.T) {
	a := newApp(t, handler.Stub{})
	ctx := t.Context()
	first, err := a.handle(ctx, msg("m-1", req4471))
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.handle(ctx, msg("m-1", req4471))
	if err != nil {
		t.Fatal(err)
	}
	resend := strings.Replace(req4471, `"r-1"`, `"r-2"`, 1)
	third, err := a.handle(ctx, msg("m-2", resend))
	if err != nil {
		t.Fatal(err)
	}
	if n := a.calls.Len(); n != 1 {
		t.Fatalf("provider calls = %d, want 1", n)
	}
	if second != first || third != first {
		t.Errorf("replayed results differ:\n%+v\n%+v\n%+v", first, second, third)
	}
	if !strings.HasPrefix(first.Summary, "[stub summary] Quarterly maintenance report") {
		t.Errorf("summary = %q", first.Summary)
	}
	rec := a.calls.Records()[0]
	if rec.MessageID != "m-1" || !strings.HasPrefix(rec.KeyID, "summarise#") || rec.Provider != "stub" || rec.Model != "m1" || len(rec.RequestHash) != 64 {
		t.Errorf("request log line = %+v", rec)
	}
	if first.ID != rec.KeyID {
		t.Errorf("summary id %q, request log key id %q", first.ID, rec.KeyID)
	}
	if _, ok := a.sink.Get(rec.KeyID); !ok || a.sink.Len() != 1 {
		t.Errorf("sink holds %d summaries, want the one of %s", a.sink.Len(), rec.KeyID)
	}
}

func TestHandleConcurrentSameKey(t *testing.T) {
	a := newApp(t, handler.Stub{Delay: 20 * time.Millisecond})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = a.handle(t.Context(), msg("m", req4471))
		})
	}
	wg.Wait()
	if n := a.calls.Len(); n != 1 {
		t.Errorf("provider calls = %d, want 1", n)
	}
	for i, err := range errs {
		if err != nil && !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

func TestHandleFailures(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error
	}{
		{"producer key reused for other work",
			`{"idempotency_key":"sum-4471-9","document":{"id":"4472","version":"1"},"model":"m1","prompt_version":"v1"}`,
			idempotency.ErrPayloadMismatch},
		{"malformed body", `{"document": {`, nil},
		{"missing key", `{"model":"m1","prompt_version":"v1","request_id":"r-9"}`, idempotency.ErrNoKey},
		{"invalid with producer key", `{"idempotency_key":"k-2","document":{"id":"4471","version":"9"},"prompt_version":"v1","parameters":{"temperature":-1}}`,
			handler.ErrInvalidRequest},
		{"document not found", `{"document":{"id":"4471","version":"99"},"prompt_version":"v1"}`, handler.ErrDocumentNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newApp(t, handler.Stub{})
			if _, err := a.handle(t.Context(), msg("m-1", req4471)); err != nil {
				t.Fatal(err)
			}
			_, err := a.handle(t.Context(), msg("m-2", tt.body))
			if err == nil {
				t.Fatal("no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if n := a.calls.Len(); n != 1 {
				t.Errorf("provider calls = %d, want only the first message's", n)
			}
		})
	}
}

func TestHandleDefaultModel(t *testing.T) {
	a := newApp(t, handler.Stub{})
	s, err := a.handle(t.Context(), msg("m-1", `{"document":{"id":"4472","version":1},"prompt_version":"v2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Model != "default-model" || a.calls.Records()[0].Model != "default-model" {
		t.Errorf("model %q, logged %q; want the default", s.Model, a.calls.Records()[0].Model)
	}
	if s.DocumentID != "4472" || s.DocumentVersion != "1" || s.PromptVersion != "v2" || s.MessageID != "m-1" {
		t.Errorf("summary = %+v", s)
	}
}

// failing is a provider that always fails, counting its calls.
type failing struct{ n *int }

func (failing) Name() string { return "failing" }
func (f failing) Complete(context.Context, handler.Call) (handler.Completion, error) {
	*f.n++
	return handler.Completion{}, errors.New("model overloaded")
}

func TestHandleProviderFailureReleases(t *testing.T) {
	n := 0
	a := newApp(t, failing{&n})
	for range 2 {
		if _, err := a.handle(t.Context(), msg("m-1", req4471)); err == nil || !strings.Contains(err.Error(), "model overloaded") {
			t.Fatalf("error = %v, want the provider's", err)
		}
	}
	if n != 2 || a.calls.Len() != 2 {
		t.Errorf("calls = %d, logged %d; want 2 (a failed call is released and retried)", n, a.calls.Len())
	}
}

func TestNew(t *testing.T) {
	if _, err := handler.New(handler.Config{}); err == nil ||
		!strings.Contains(err.Error(), "Documents") || !strings.Contains(err.Error(), "Provider") {
		t.Errorf("New(Config{}) error = %v, want both fields named", err)
	}
}
