package handler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

	mu     sync.Mutex
	events []idempotency.Report // the guard's outcomes, in order
}

// outcomes returns the guard's outcomes so far.
func (a *app) outcomes() []idempotency.Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.events)
}

// newApp builds the app around one guard, wired as idempotency.Wrap with
// handler.Key and, as the payload, handler.WorkKey or payload if given.
func newApp(t *testing.T, provider handler.Provider, payload ...func(events.SQSMessage) (idempotency.Selection, error)) *app {
	t.Helper()
	a := &app{calls: &handler.Calls{}, sink: &handler.MemorySink{}}
	key := handler.Key()
	cfg := idempotency.Config{
		Store:     memstore.New(),
		Namespace: "summarise",
		Logger:    slog.New(slog.DiscardHandler),
		OnOutcome: func(_ context.Context, ev idempotency.Report) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.events = append(a.events, ev)
		},
	}
	g, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(handler.Config{
		Documents: docs,
		Provider:  handler.LogRequests(provider, a.calls, nil),
		Sink:      a.sink,
		Model:     "default-model",
	})
	if err != nil {
		t.Fatal(err)
	}
	work := handler.WorkKey
	if len(payload) > 0 {
		work = payload[0]
	}
	a.handle = idempotency.Wrap(g, key, h.Handle, idempotency.WithPayload(idempotency.SelectorFunc(work)))
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
	if rec.MessageID != "m-1" || !strings.HasPrefix(rec.RecordID, "summarise#") || rec.Provider != "stub" || rec.Model != "m1" || len(rec.RequestHash) != 64 {
		t.Errorf("request log line = %+v", rec)
	}
	if first.ID != rec.RecordID {
		t.Errorf("summary id %q, request log record id %q", first.ID, rec.RecordID)
	}
	if _, ok := a.sink.Get(rec.RecordID); !ok || a.sink.Len() != 1 {
		t.Errorf("sink holds %d summaries, want the one of %s", a.sink.Len(), rec.RecordID)
	}
}

// gated is a provider whose calls wait until open is closed, then answer as
// the stub does.
type gated struct{ open <-chan struct{} }

func (gated) Name() string { return "gated" }
func (g gated) Complete(ctx context.Context, c handler.Call) (handler.Completion, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return handler.Completion{}, context.Cause(ctx)
	case <-time.After(10 * time.Second): // a guard against hanging, not a timing assertion
		return handler.Completion{}, errors.New("gated: not every call reached the guard within 10s")
	}
	return handler.Stub{}.Complete(ctx, c)
}

// TestHandleConcurrentSameKey delivers one message n times at once to one
// guard, as the records of one batch that share a key are delivered. The
// provider call is held until all n calls are inside the guard (past the
// key and payload validation), so they overlap the run for certain. Within
// one process the guard shares the run between them: every call succeeds
// with the same summary and there is one provider call. ErrInProgress
// would be wrong here: it is for a key held by another process (another
// guard, through the store), which this test does not have.
func TestHandleConcurrentSameKey(t *testing.T) {
	const n = 8
	var entered atomic.Int32
	open := make(chan struct{})
	a := newApp(t, gated{open}, func(m events.SQSMessage) (idempotency.Selection, error) {
		if entered.Add(1) == n {
			close(open)
		}
		return handler.WorkKey(m)
	})
	var wg sync.WaitGroup
	errs := make([]error, n)
	sums := make([]handler.Summary, n)
	for i := range n {
		wg.Go(func() {
			sums[i], errs[i] = a.handle(t.Context(), msg(fmt.Sprintf("m-%d", i), req4471))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v, want success (a run shared in process, never ErrInProgress)", i, err)
		}
	}
	if c := a.calls.Len(); c != 1 {
		t.Fatalf("provider calls = %d, want 1", c)
	}
	for i, s := range sums {
		if s != sums[0] {
			t.Errorf("call %d returned %+v, call 0 %+v: want one result for all", i, s, sums[0])
		}
	}
	// One call ran the work; each of the others shared its run (or, had
	// it reached the guard only after the run completed, replayed the
	// stored record): replayed, without running.
	ran, shared := 0, 0
	for _, ev := range a.outcomes() {
		switch {
		case ev.Ran && ev.Outcome == idempotency.OutcomeClaimed:
			ran++
		case !ev.Ran && ev.Outcome == idempotency.OutcomeReplayed && (ev.Source == "shared" || ev.Source == "store"):
			if ev.Source == "shared" {
				shared++
			}
		default:
			t.Errorf("outcome %+v, want claimed (ran) or replayed (not ran)", ev)
		}
	}
	if ran != 1 || len(a.outcomes()) != n {
		t.Errorf("%d outcomes, %d ran; want %d outcomes, one run", len(a.outcomes()), ran, n)
	}
	t.Logf("%d of %d calls shared the run in process", shared, n-1)
}

// TestHandleFailures checks where each failure happens with the shipped
// wiring (Validate: WorkKey): an invalid body or a missing key fails while
// the key is made, before any claim (outcome failed, a KeyError, no record);
// a reused key fails against the stored record (mismatch); a missing
// document fails inside Handle, after the claim, which the guard releases.
// Either way nothing is left in progress: the redelivery fails the same way,
// never with ErrInProgress.
func TestHandleFailures(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    error               // nil: any error
		keyErr  bool                // failed while the key was made: before any claim
		outcome idempotency.Outcome // of the failed delivery
	}{
		{"producer key reused for other work",
			`{"idempotency_key":"sum-4471-9","document":{"id":"4472","version":"1"},"model":"m1","prompt_version":"v1"}`,
			idempotency.ErrPayloadMismatch, false, idempotency.OutcomeMismatch},
		{"malformed body", `{"document": {`, nil, true, idempotency.OutcomeFailed}, // not JSON: the key function's own error
		{"missing key", `{"model":"m1","prompt_version":"v1","request_id":"r-9"}`, idempotency.ErrNoKey, true, idempotency.OutcomeFailed},
		{"invalid with producer key", `{"idempotency_key":"k-2","document":{"id":"4471","version":"9"},"prompt_version":"v1","parameters":{"temperature":-1}}`,
			handler.ErrInvalidRequest, true, idempotency.OutcomeFailed},
		{"document not found", `{"document":{"id":"4471","version":"99"},"prompt_version":"v1"}`,
			handler.ErrDocumentNotFound, false, idempotency.OutcomeReleased},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newApp(t, handler.Stub{})
			if _, err := a.handle(t.Context(), msg("m-1", req4471)); err != nil {
				t.Fatal(err)
			}
			for delivery := 1; delivery <= 2; delivery++ {
				_, err := a.handle(t.Context(), msg("m-2", tt.body))
				if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
					t.Fatalf("delivery %d: error %v, want %v", delivery, err, tt.want)
				}
				var ke *idempotency.KeyError
				if errors.As(err, &ke) != tt.keyErr {
					t.Errorf("delivery %d: error %v is a KeyError: %v, want %v", delivery, err, !tt.keyErr, tt.keyErr)
				}
				out := a.outcomes()
				if ev := out[len(out)-1]; ev.Outcome != tt.outcome || ev.Ran != (tt.outcome == idempotency.OutcomeReleased) {
					t.Errorf("delivery %d: outcome %s (ran %v), want %s", delivery, ev.Outcome, ev.Ran, tt.outcome)
				}
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
