package handler_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/handler"
)

func TestFileLogConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		// Each writer opens the file itself, as separate processes do.
		l, err := handler.OpenFileLog(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		wg.Go(func() {
			for i := range each {
				rec := handler.CallRecord{
					RecordID:    fmt.Sprintf("ns#%d-%d", w, i),
					MessageID:   strings.Repeat("m", 200),
					Provider:    "stub",
					RequestHash: strings.Repeat("a", 64),
				}
				if err := l.Append(context.Background(), rec); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec handler.CallRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		seen[rec.RecordID] = true
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct lines, want %d", len(seen), writers*each)
	}
}

// recorder is a provider that records its calls.
type recorder struct{ calls []handler.Call }

func (*recorder) Name() string { return "rec" }
func (r *recorder) Complete(_ context.Context, c handler.Call) (handler.Completion, error) {
	r.calls = append(r.calls, c)
	return handler.Completion{Text: "ok"}, nil
}

type brokenLog struct{}

func (brokenLog) Append(context.Context, handler.CallRecord) error { return errors.New("disk full") }

func TestLogRequests(t *testing.T) {
	c := handler.Call{Model: "m", System: "s", Text: "t"}
	t.Run("one line per call", func(t *testing.T) {
		p := &recorder{}
		calls := &handler.Calls{}
		now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		lp := handler.LogRequests(p, calls, func() time.Time { return now })
		for range 3 {
			if _, err := lp.Complete(t.Context(), c); err != nil {
				t.Fatal(err)
			}
		}
		recs := calls.Records()
		if len(recs) != 3 || len(p.calls) != 3 {
			t.Fatalf("%d lines for %d calls, want 3 and 3", len(recs), len(p.calls))
		}
		want, _ := handler.RequestHash(c)
		if recs[0].Provider != "rec" || recs[0].Model != "m" || recs[0].RequestHash != want || !recs[0].Time.Equal(now) {
			t.Errorf("line = %+v", recs[0])
		}
		if lp.Name() != "rec" {
			t.Errorf("Name = %q", lp.Name())
		}
	})
	t.Run("no line, no call", func(t *testing.T) {
		p := &recorder{}
		_, err := handler.LogRequests(p, brokenLog{}, nil).Complete(t.Context(), c)
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("error = %v, want the log's", err)
		}
		if len(p.calls) != 0 {
			t.Errorf("%d calls made without a log line", len(p.calls))
		}
	})
	t.Run("tee and slog", func(t *testing.T) {
		var buf strings.Builder
		calls := &handler.Calls{}
		log := handler.Tee{calls, handler.SlogLog{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}}
		if _, err := handler.LogRequests(&recorder{}, log, nil).Complete(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(buf.String()), &line); err != nil {
			t.Fatalf("slog line %q: %v", buf.String(), err)
		}
		if line["msg"] != "provider call" || line["provider"] != "rec" || line["request_hash"] != calls.Records()[0].RequestHash {
			t.Errorf("slog line = %v", line)
		}
	})
}

func TestRequestHash(t *testing.T) {
	t07, t070 := 0.7, 0.70
	a, _ := handler.RequestHash(handler.Call{Model: "m", Text: "x", Parameters: handler.Parameters{Temperature: &t07}})
	b, _ := handler.RequestHash(handler.Call{Model: "m", Text: "x", Parameters: handler.Parameters{Temperature: &t070}})
	c, _ := handler.RequestHash(handler.Call{Model: "m", Text: "y"})
	if a != b || a == c || len(a) != 64 {
		t.Errorf("hashes %s %s %s", a, b, c)
	}
}

// TestFileLogOwnerOnly: the request log (record ids, message ids) is
// created readable by its owner only, whatever the umask lets through.
func TestFileLogOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	l, err := handler.OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("request log created with mode %o, want 600", got)
	}
}
