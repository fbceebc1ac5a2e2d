package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The sentinels stand for a customer's text in a message. They are written
// with characters that every log format writes as they are, so that finding
// them in the raw output finds them in any line.
const (
	sentinel        = "SENTINEL customer text 7f3a9c"
	numericSentinel = "987654321098765432109876543" // as a number: a key beyond 2^53
	floatSentinel   = "1234567.1234567891234567"    // as a number: more digits than a double keeps
	floatNearest    = "1234567.1234567892"          // the double it would equal
)

// faultProvider fails or panics according to the document's text.
type faultProvider struct{}

func (faultProvider) Name() string { return "fault" }

func (faultProvider) Complete(_ context.Context, c handler.Call) (handler.Completion, error) {
	switch strings.TrimSpace(c.Text) {
	case "fail":
		return handler.Completion{}, errors.New("provider unavailable")
	case "panic":
		panic("provider bug on " + sentinel) // a panic value that quotes content
	}
	return handler.Completion{Text: "a summary", Model: c.Model}, nil
}

// capturingMover keeps the dead-letter moves, for their reason and type.
type capturingMover struct {
	mu    sync.Mutex
	moves []batch.DeadLetterMove
}

func (m *capturingMover) MoveToDeadLetter(_ context.Context, moves []batch.DeadLetterMove) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.moves = append(m.moves, moves...)
	return nil
}

// failingStore fails every claim, as a store that cannot be reached.
type failingStore struct{ *memstore.Store }

func (failingStore) Acquire(context.Context, driver.Record, time.Time, driver.ClaimMode) (driver.Record, bool, error) {
	return driver.Record{}, false, errors.New("connection refused")
}

// TestNoMessageContentInLogs sends the sentinel in every field of a message
// through every failure path of the app (bad JSON, missing key, invalid
// request, provider error, store error, panic) and through success and
// replay, and scans all log output for it: the app's logger (the guard's,
// the batch's and the request log's lines), the default logger and the
// metrics. Every failure must still be reported, and logged.
func TestNoMessageContentInLogs(t *testing.T) {
	var logs, deflt, metricsOut syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&deflt, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	out := outputs{
		Logger:  slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics: &metricsOut,
	}
	docs := t.TempDir()
	for _, id := range []string{"ok", "fail", "panic"} {
		if err := os.MkdirAll(filepath.Join(docs, id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(docs, id, "1.txt"), []byte(id+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mover := new(capturingMover)
	build := func(store driver.Store) *app {
		c, err := loadConfig(localEnv(map[string]string{envDocumentsDir: docs}), "", "")
		if err != nil {
			t.Fatal(err)
		}
		c.testProvider, c.testStore, c.testMover = faultProvider{}, store, mover
		a, err := build(t.Context(), c, out)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.close() })
		return a
	}

	s := sentinel
	// valid is a request that passes validation with the sentinel in every
	// field that takes free text; the key is unique to the path.
	valid := func(path, doc string) string {
		return obj(map[string]any{
			"idempotency_key": s + " " + path,
			"document":        map[string]any{"id": doc, "version": "1", "bucket": s, "key": s, "version_id": s},
			"prompt_version":  "v1",
			"parameters":      map[string]any{"stop_sequences": []string{s}},
			"request_id":      s, "trace_id": s, "unknown_field": s,
		})
	}
	everywhere := map[string]any{
		"idempotency_key": s + " invalid",
		"document":        map[string]any{"id": s, "version": s, "bucket": s, "key": s, "version_id": s},
		"model":           s, "prompt_version": s,
		"parameters": map[string]any{"stop_sequences": []string{s}},
		"request_id": s, "trace_id": s,
	}
	noKey := map[string]any{
		"document": map[string]any{"bucket": s, "key": s}, "model": s, "prompt_version": s,
		"request_id": s, "trace_id": s, "sent_at": s,
	}
	failing := map[string]string{ // message id: body
		"not-json":         s,
		"bad-json":         `{"idempotency_key":"` + s + `","document":{"id":"` + s,
		"missing-key":      obj(noKey),
		"invalid-request":  obj(everywhere),
		"bad-sent-at":      strings.Replace(valid("sent-at", "ok"), `"request_id"`, `"sent_at":"`+s+`","request_id"`, 1),
		"id-object":        strings.Replace(valid("id-object", "ok"), `"id":"ok"`, `"id":{"x":"`+s+`"}`, 1),
		"unknown-param":    strings.Replace(valid("unknown-param", "ok"), `"stop_sequences"`, `"`+s+`":1,"stop_sequences"`, 1),
		"huge-id":          strings.Replace(valid("huge-id", "ok"), `"id":"ok"`, `"id":"`+strings.Repeat(s, 4000)+`"`, 1),
		"number-key":       `{"idempotency_key":` + numericSentinel + `,"document":{"id":"ok","version":"1"},"prompt_version":"v1"}`,
		"float-key":        `{"idempotency_key":` + floatSentinel + `,"document":{"id":"ok","version":"1"},"prompt_version":"v1"}`,
		"provider-error":   valid("provider-error", "fail"),
		"provider-panics":  valid("provider-panics", "panic"),
		"wrong-type-param": strings.Replace(valid("wrong-type-param", "ok"), `"stop_sequences":["`+s+`"]`, `"stop_sequences":"`+s+`"`, 1),
	}
	var ev events.SQSEvent
	ids := slices.Sorted(maps.Keys(failing))
	for _, id := range ids {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, Body: failing[id]})
	}
	ev.Records = append(ev.Records, events.SQSMessage{MessageId: "succeeds", Body: valid("succeeds", "ok")})
	for _, r := range ev.Records {
		if !strings.Contains(r.Body, s) && !strings.Contains(r.Body, numericSentinel) && !strings.Contains(r.Body, floatSentinel) {
			t.Fatalf("record %s carries no sentinel: %s", r.MessageId, r.Body)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // above the app's 90s margin
	defer cancel()
	a := build(nil)
	movedBefore := 0
	for pass := range 2 { // the second pass replays the success
		resp, err := a.handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		// A permanent failure goes to the dead-letter queue (the mover),
		// every other one is reported failed.
		mover.mu.Lock()
		got := failed(resp)
		for _, mv := range mover.moves[movedBefore:] {
			got = append(got, mv.Message.MessageId)
		}
		movedBefore = len(mover.moves)
		mover.mu.Unlock()
		if !slices.Equal(slices.Sorted(slices.Values(got)), ids) {
			t.Errorf("pass %d: failed or moved %v, want every failure path %v", pass, got, ids)
		}
	}
	storeFails := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "store-error", Body: valid("store-error", "ok")}}}
	// Its only record fails: the batch returns a *batch.FullBatchFailureError.
	if resp, err := build(failingStore{memstore.New()}).handle(ctx, storeFails); !errors.As(err, new(*batch.FullBatchFailureError)) || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("store error: %v, %v; want the record failed, and so the batch", resp, err)
	}

	// The dead-letter message's sqsonce.reason and sqsonce.error-type
	// attributes: what SQS keeps with the message.
	var attrs strings.Builder
	for _, mv := range mover.moves {
		fmt.Fprintf(&attrs, "%s %s %s\n", mv.Message.MessageId, mv.Reason, mv.ErrorType)
	}
	if len(mover.moves) < 4 {
		t.Errorf("%d messages moved to the dead-letter queue, want every permanent failure:\n%s", len(mover.moves), attrs.String())
	}
	all := logs.String() + deflt.String() + metricsOut.String() + attrs.String()
	for id := range failing {
		if !strings.Contains(logs.String(), `"input_id":"`+id+`"`) {
			t.Errorf("the failure of %s was not logged", id)
		}
	}
	if !strings.Contains(logs.String(), `"input_id":"store-error"`) || !strings.Contains(logs.String(), `"outcome":"replayed"`) {
		t.Error("the store error or the replay was not logged")
	}
	if !strings.Contains(logs.String(), "batch: panic: a string (sha256:") {
		t.Error("the panic was not logged by its type")
	}
	for _, leak := range []string{sentinel, numericSentinel, floatSentinel, floatNearest, "provider bug"} {
		if i := strings.Index(all, leak); i >= 0 {
			t.Errorf("message content %q in the logs:\n%s", leak, excerpt(all, i))
		}
	}
	if t.Failed() {
		t.Logf("logs:\n%s", all)
	}
	var bodies int
	for _, r := range ev.Records {
		bodies += len(r.Body)
	}
	if len(all) > bodies/2 {
		t.Errorf("%d bytes of logs for %d bytes of bodies (two passes): values must be reduced, not copied", len(all), bodies)
	}
}

// obj is v as JSON.
func obj(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// excerpt is the log line around s[i].
func excerpt(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		end = len(s) - i
	}
	line := s[start : i+end]
	if len(line) > 2000 {
		line = line[:2000] + fmt.Sprintf("… (%d bytes)", len(line))
	}
	return line
}
