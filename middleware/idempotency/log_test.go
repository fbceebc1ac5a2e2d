package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// logCapture is a JSON log written by several goroutines, read when they
// are done.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// lines returns the log's lines, decoded, and forgets them.
func (c *logCapture) lines(t *testing.T) []map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(c.buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	c.buf.Reset()
	return out
}

// levels counts lines by level.
func levels(lines []map[string]any) map[string]int {
	n := map[string]int{}
	for _, l := range lines {
		n[l["level"].(string)]++
	}
	return n
}

func recordsEvent(n int) events.SQSEvent {
	var ev events.SQSEvent
	for i := range n {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: fmt.Sprintf("m%d", i),
			Body:      fmt.Sprintf(`{"idempotency_key":"k%d"}`, i),
		})
	}
	return ev
}

// TestLogLinesPerOutcome runs 1,000 records and their replay through
// batch.SQS and the guard, sharing one logger as an application does, and
// counts the lines at each handler level against the documented levels
// (see Outcome): a claim at DEBUG, a replay at INFO, nothing from the
// batch for records that succeeded.
func TestLogLinesPerOutcome(t *testing.T) {
	for _, tt := range []struct {
		name        string
		level       slog.Level
		first, dupe map[string]int
	}{
		{"INFO handler (the default)", slog.LevelInfo, map[string]int{}, map[string]int{"INFO": 1000}},
		{"DEBUG handler", slog.LevelDebug, map[string]int{"DEBUG": 1000}, map[string]int{"INFO": 1000}},
		{"WARN handler", slog.LevelWarn, map[string]int{}, map[string]int{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs logCapture
			logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: tt.level}))
			g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "logs", Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			h := batch.SQS(idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), work), batch.Options{Logger: logger})
			ev := recordsEvent(1000)
			for pass, want := range []map[string]int{tt.first, tt.dupe} {
				resp, err := h(t.Context(), ev)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("pass %d: %v, %d failures", pass, err, len(resp.BatchItemFailures))
				}
				if got := levels(logs.lines(t)); !maps.Equal(got, want) {
					t.Errorf("pass %d: lines by level %v, want %v", pass, got, want)
				}
			}
		})
	}
}

// TestFailureLoggedOnce checks that each failing record gets exactly one
// line, the guard's, at its documented level, and none from the batch.
func TestFailureLoggedOnce(t *testing.T) {
	var logs logCapture
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "once", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	keyFn := idempotency.BodyField("k")
	busy, _ := idempotency.Select(keyFn, events.SQSMessage{Body: `{"k":"busy"}`})
	busyID, _ := g.ID(busy)
	store.Put(driver.Record{ID: busyID, Status: driver.StatusInProgress,
		ExpiresAt: time.Now().Add(time.Hour), LeaseUntil: time.Now().Add(time.Hour), Owner: "elsewhere"})
	fn := func(_ context.Context, m events.SQSMessage) (string, error) {
		switch {
		case strings.Contains(m.Body, "fail"):
			return "", errors.New("model unavailable")
		case strings.Contains(m.Body, "panic"):
			panic("bad document")
		}
		return "ok", nil
	}
	h := batch.SQS(idempotency.Wrap(g, keyFn, fn, idempotency.WithPayload(idempotency.BodySubset("doc"))), batch.Options{Logger: logger, NoFullBatchError: true})
	msgs := []struct{ id, body, level, outcome string }{
		{"fails", `{"k":"a","doc":"fail"}`, "ERROR", "released"},
		{"panics", `{"k":"b","doc":"panic"}`, "ERROR", "released"},
		{"no-key", `{"doc":"x"}`, "ERROR", "failed"},
		{"not-json", `not json`, "ERROR", "failed"},
		{"busy", `{"k":"busy","doc":"x"}`, "WARN", "in_progress"},
		{"first", `{"k":"c","doc":"x"}`, "DEBUG", "claimed"},
	}
	var ev events.SQSEvent
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.id, Body: m.body})
	}
	if _, err := h(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	// The key of "first", completed, reused with another payload.
	reused := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "reused", Body: `{"k":"c","doc":"other"}`}}}
	if _, err := h(t.Context(), reused); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, struct{ id, body, level, outcome string }{"reused", "", "ERROR", "mismatch"})

	byID := map[string][]map[string]any{}
	for _, l := range logs.lines(t) {
		id, _ := l["input_id"].(string)
		if id == "" {
			id, _ = l["messageId"].(string)
		}
		byID[id] = append(byID[id], l)
	}
	for _, m := range msgs {
		ls := byID[m.id]
		if len(ls) != 1 {
			t.Errorf("%s: %d lines, want exactly one: %v", m.id, len(ls), ls)
			continue
		}
		l := ls[0]
		if l["level"] != m.level || l["outcome"] != m.outcome || l["msg"] != "idempotency" {
			t.Errorf("%s: line %v, want the guard's %s line, outcome %s", m.id, l, m.level, m.outcome)
		}
	}
	if l := byID["panics"]; len(l) == 1 && !strings.Contains(fmt.Sprint(l[0]["stack"]), "panic") {
		t.Errorf("the panic's line has no stack: %v", l[0])
	}
}

// TestLogFilteredByHandler: the lines are filtered by the logger's
// handler, not by the guard: by level, and by attribute.
func TestLogFilteredByHandler(t *testing.T) {
	for _, tc := range []struct {
		name        string
		handler     func(*logCapture) slog.Handler
		first, dupe map[string]int
	}{
		{"level WARN", func(l *logCapture) slog.Handler {
			return slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn})
		},
			map[string]int{}, map[string]int{}},
		{"replayed dropped", func(l *logCapture) slog.Handler {
			return dropReplayed{slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})}
		}, map[string]int{"DEBUG": 10}, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logCapture
			logger := slog.New(tc.handler(&logs))
			g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "lv", Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			h := batch.SQS(idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), work), batch.Options{Logger: logger})
			ev := recordsEvent(10)
			for pass, want := range []map[string]int{tc.first, tc.dupe} {
				if _, err := h(t.Context(), ev); err != nil {
					t.Fatal(err)
				}
				if got := levels(logs.lines(t)); !maps.Equal(got, want) {
					t.Errorf("pass %d: lines by level %v, want %v", pass, got, want)
				}
			}
		})
	}
}
