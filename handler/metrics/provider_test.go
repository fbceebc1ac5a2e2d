package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/handler/metrics"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// flaky is a provider that fails its first n requests.
type flaky struct{ fail *int }

func (flaky) Name() string { return "flaky" }
func (f flaky) Complete(ctx context.Context, c handler.Call) (handler.Completion, error) {
	if *f.fail > 0 {
		*f.fail--
		return handler.Completion{}, errors.New("model overloaded")
	}
	return handler.Stub{}.Complete(ctx, c)
}

// appCounts runs batches through the summarise handler wired as
// cmd/summarise wires it (request log, counted provider, guard, batch) and
// returns each batch's metric line.
func appCounts(t *testing.T, provider handler.Provider, batches ...[]events.SQSMessage) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	rec, err := metrics.New(metrics.Config{Writer: &buf})
	if err != nil {
		t.Fatal(err)
	}
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise",
		Logger: slog.New(slog.DiscardHandler), OnOutcome: rec.Observe})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(handler.Config{
		Documents: handler.Dir(filepath.Join("..", "..", "samples", "documents")),
		Provider:  handler.LogRequests(rec.Provider(provider), &handler.Calls{}, nil),
		Model:     "m",
	})
	if err != nil {
		t.Fatal(err)
	}
	fn := rec.Batch(batch.SQS(idempotency.WrapJSON(g, handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...), batch.Options{Logger: slog.New(slog.DiscardHandler), NoFullBatchError: true}))
	var lines []map[string]any
	for _, b := range batches {
		buf.Reset()
		if _, err := fn(t.Context(), events.SQSEvent{Records: b}); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, checkEMF(t, buf.Bytes()))
	}
	return lines
}

func msg(id, doc, version string) events.SQSMessage {
	return events.SQSMessage{MessageId: id,
		Body: fmt.Sprintf(`{"document":{"id":%q,"version":%q},"prompt_version":"v1"}`, doc, version)}
}

func wantCounts(t *testing.T, what string, line map[string]any, want map[string]int) {
	t.Helper()
	for name, n := range want {
		if got := fmt.Sprint(line[name]); got != fmt.Sprint(n) {
			t.Errorf("%s: %s = %s, want %d", what, name, got, n)
		}
	}
}

// TestProviderCallsCountRequests: ProviderCalls moves with requests to the
// provider, not with runs of the operation. A run that fails before its
// request (the document does not exist) counts none; a failed request
// counts, and so does the redelivery's request that follows its release.
func TestProviderCallsCountRequests(t *testing.T) {
	fail := 1
	lines := appCounts(t, flaky{&fail},
		[]events.SQSMessage{msg("m-1", "4471", "99"), msg("m-2", "4471", "9")}, // no such version; the first request fails
		[]events.SQSMessage{msg("m-1", "4471", "99"), msg("m-2", "4471", "9"), msg("m-3", "4471", "9")},
	)
	wantCounts(t, "first batch", lines[0], map[string]int{"ProviderCalls": 1, "Failed": 2, "Records": 2})
	wantCounts(t, "second batch", lines[1], map[string]int{"ProviderCalls": 1, "Failed": 1, "DuplicatesSuppressed": 1, "Records": 3})
}

func TestProviderOutsideBatch(t *testing.T) {
	var buf bytes.Buffer
	rec, _ := metrics.New(metrics.Config{Writer: &buf})
	p := rec.Provider(handler.Stub{})
	c, err := p.Complete(t.Context(), handler.Call{Text: "words"})
	if err != nil || c.Text == "" || p.Name() != "stub" {
		t.Errorf("Complete = %+v, %v; Name %q: want the stub's answer and name", c, err, p.Name())
	}
	if root := checkEMF(t, buf.Bytes()); fmt.Sprint(root[metrics.ProviderCalls]) != "1" {
		t.Errorf("outside a batch: %q, want a line of its own with ProviderCalls 1", buf.String())
	}
}
