package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/handler/metrics"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

var names = []string{metrics.ProviderCalls, metrics.DuplicatesSuppressed, metrics.InProgressRetried, metrics.TakenOver, metrics.Failed, metrics.DoubleRuns, metrics.Quarantined}

// checkEMF checks line against the Embedded Metric Format specification:
// an _aws object with an integer millisecond Timestamp and CloudWatchMetrics
// directives, each of whose dimension keys is a top-level string and each of
// whose metrics is a top-level number. It returns the top-level values.
func checkEMF(t *testing.T, line []byte) map[string]any {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", line)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	aws, ok := root["_aws"].(map[string]any)
	if !ok {
		t.Fatalf("no _aws object: %s", line)
	}
	ts, ok := aws["Timestamp"].(json.Number)
	if _, err := ts.Int64(); !ok || err != nil {
		t.Errorf("Timestamp %v is not an integer", aws["Timestamp"])
	}
	dirs, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(dirs) == 0 {
		t.Fatalf("no CloudWatchMetrics: %s", line)
	}
	for _, d := range dirs {
		dir := d.(map[string]any)
		if ns, _ := dir["Namespace"].(string); ns == "" {
			t.Errorf("directive without Namespace: %v", dir)
		}
		for _, set := range dir["Dimensions"].([]any) {
			for _, dim := range set.([]any) {
				if _, ok := root[dim.(string)].(string); !ok {
					t.Errorf("dimension %v is not a top-level string", dim)
				}
			}
		}
		for _, m := range dir["Metrics"].([]any) {
			def := m.(map[string]any)
			if _, ok := root[def["Name"].(string)].(json.Number); !ok {
				t.Errorf("metric %v has no top-level number", def["Name"])
			}
			if def["Unit"] != "Count" {
				t.Errorf("metric %v unit %v", def["Name"], def["Unit"])
			}
		}
	}
	return root
}

func TestBatch(t *testing.T) {
	var buf bytes.Buffer
	now := time.UnixMilli(1_700_000_000_123)
	rec, err := metrics.New(metrics.Config{Writer: &buf, Service: "svc", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := []idempotency.Report{
		{Outcome: idempotency.OutcomeClaimed, Ran: true},
		{Outcome: idempotency.OutcomeReplayed, Source: "store"},
		{Outcome: idempotency.OutcomeReplayed, Source: "shared"},
		{Outcome: idempotency.OutcomeInProgress, Err: idempotency.ErrInProgress},
		{Outcome: idempotency.OutcomeTakenOver, Ran: true},
		{Outcome: idempotency.OutcomeReleased, Ran: true, Err: errors.New("model down")},
		{Outcome: idempotency.OutcomeMismatch, Err: idempotency.ErrPayloadMismatch},
		{Outcome: idempotency.OutcomeFailed, Err: idempotency.ErrNoKey},
		{Outcome: idempotency.OutcomeDoubleRun, Ran: true, Source: "store"},
		{Outcome: idempotency.OutcomeQuarantined, Err: &idempotency.QuarantinedError{ID: "n#1"}},
	}
	provider := rec.Provider(handler.Stub{})
	fn := rec.Batch(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, o := range outcomes {
			rec.Observe(ctx, o)
		}
		for range 3 {
			if _, err := provider.Complete(ctx, handler.Call{Text: "a document"}); err != nil {
				return events.SQSEventResponse{}, err
			}
		}
		return events.SQSEventResponse{}, nil
	})
	if _, err := fn(t.Context(), events.SQSEvent{Records: make([]events.SQSMessage, len(outcomes))}); err != nil {
		t.Fatal(err)
	}
	root := checkEMF(t, buf.Bytes())
	want := map[string]string{
		"ProviderCalls": "3", "DuplicatesSuppressed": "2", "InProgressRetried": "1", "TakenOver": "1", "Failed": "3", "DoubleRuns": "1", "Quarantined": "1", "Records": "10",
	}
	for k, v := range want {
		if got := fmt.Sprint(root[k]); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	if root["Service"] != "svc" || fmt.Sprint(root["_aws"].(map[string]any)["Timestamp"]) != "1700000000123" {
		t.Errorf("line = %s", buf.Bytes())
	}
	// A second batch starts from zero.
	buf.Reset()
	if _, err := fn(t.Context(), events.SQSEvent{}); err != nil {
		t.Fatal(err)
	}
	root = checkEMF(t, buf.Bytes())
	if fmt.Sprint(root["DuplicatesSuppressed"]) != "2" {
		t.Errorf("second batch: %s", buf.Bytes())
	}
}

// TestObserve checks the outcome-to-metric mapping of the package doc, one
// event per case: outcomes never move ProviderCalls, runs included.
func TestObserve(t *testing.T) {
	run := errors.New("model down")
	tests := []struct {
		name string
		ev   idempotency.Report
		want metrics.Counts
	}{
		{"claimed", idempotency.Report{Outcome: idempotency.OutcomeClaimed, Ran: true},
			metrics.Counts{}},
		{"taken over", idempotency.Report{Outcome: idempotency.OutcomeTakenOver, Ran: true},
			metrics.Counts{TakenOver: 1}},
		{"replayed from the store", idempotency.Report{Outcome: idempotency.OutcomeReplayed, Source: "store"},
			metrics.Counts{DuplicatesSuppressed: 1}},
		{"replayed from the cache", idempotency.Report{Outcome: idempotency.OutcomeReplayed, Source: "cache"},
			metrics.Counts{DuplicatesSuppressed: 1}},
		{"shared a run that succeeded", idempotency.Report{Outcome: idempotency.OutcomeReplayed, Source: "shared"},
			metrics.Counts{DuplicatesSuppressed: 1}},
		{"ran, lost the lease, the winner's result stands", idempotency.Report{Outcome: idempotency.OutcomeDoubleRun, Source: "store", Ran: true},
			metrics.Counts{DoubleRuns: 1}},
		{"in progress elsewhere", idempotency.Report{Outcome: idempotency.OutcomeInProgress, Err: idempotency.ErrInProgress},
			metrics.Counts{InProgressRetried: 1}},
		{"shared a run that found it in progress", idempotency.Report{Outcome: idempotency.OutcomeInProgress, Source: "shared", Err: idempotency.ErrInProgress},
			metrics.Counts{InProgressRetried: 1}},
		{"ran, lost the lease to a run still going", idempotency.Report{Outcome: idempotency.OutcomeDoubleRun, Ran: true, Err: idempotency.ErrInProgress},
			metrics.Counts{DoubleRuns: 1}},
		{"released", idempotency.Report{Outcome: idempotency.OutcomeReleased, Ran: true, Err: run},
			metrics.Counts{Failed: 1}},
		{"shared a run that failed", idempotency.Report{Outcome: idempotency.OutcomeFailed, Source: "shared", Err: run},
			metrics.Counts{Failed: 1}},
		{"no key", idempotency.Report{Outcome: idempotency.OutcomeFailed, Err: idempotency.ErrNoKey},
			metrics.Counts{Failed: 1}},
		{"completion failed after the run", idempotency.Report{Outcome: idempotency.OutcomeFailed, Ran: true, Err: errors.New("store down")},
			metrics.Counts{Failed: 1}},
		{"mismatch", idempotency.Report{Outcome: idempotency.OutcomeMismatch, Err: idempotency.ErrPayloadMismatch},
			metrics.Counts{Failed: 1}},
		{"quarantined (strict mode)", idempotency.Report{Outcome: idempotency.OutcomeQuarantined, Err: &idempotency.QuarantinedError{ID: "n#1"}},
			metrics.Counts{Quarantined: 1}},
		{"shared a run that quarantined", idempotency.Report{Outcome: idempotency.OutcomeQuarantined, Source: "shared", Err: idempotency.ErrQuarantined},
			metrics.Counts{Quarantined: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			rec, err := metrics.New(metrics.Config{Writer: &buf})
			if err != nil {
				t.Fatal(err)
			}
			fn := rec.Batch(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				rec.Observe(ctx, tt.ev)
				return events.SQSEventResponse{}, nil
			})
			if _, err := fn(t.Context(), events.SQSEvent{Records: make([]events.SQSMessage, 1)}); err != nil {
				t.Fatal(err)
			}
			root := checkEMF(t, buf.Bytes())
			for name, want := range map[string]int64{
				metrics.ProviderCalls: tt.want.ProviderCalls, metrics.DuplicatesSuppressed: tt.want.DuplicatesSuppressed,
				metrics.InProgressRetried: tt.want.InProgressRetried, metrics.TakenOver: tt.want.TakenOver, metrics.Failed: tt.want.Failed,
				metrics.DoubleRuns: tt.want.DoubleRuns, metrics.Quarantined: tt.want.Quarantined,
			} {
				if got := fmt.Sprint(root[name]); got != fmt.Sprint(want) {
					t.Errorf("%s = %s, want %d", name, got, want)
				}
			}
		})
	}
}

func TestObserveOutsideBatch(t *testing.T) {
	var buf bytes.Buffer
	rec, _ := metrics.New(metrics.Config{Writer: &buf})
	rec.Observe(t.Context(), idempotency.Report{Outcome: idempotency.OutcomeClaimed, Ran: true})
	if buf.Len() != 0 {
		t.Errorf("wrote %q outside a batch", buf.String())
	}
	if _, err := metrics.New(metrics.Config{}); err == nil {
		t.Error("New without a Writer accepted")
	}
}

func TestLineNames(t *testing.T) {
	rec, _ := metrics.New(metrics.Config{Writer: &bytes.Buffer{}})
	b, err := rec.Line(metrics.Counts{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	root := checkEMF(t, b)
	for _, n := range names {
		if fmt.Sprint(root[n]) != "0" {
			t.Errorf("%s = %v, want 0 (zeros are written)", n, root[n])
		}
	}
	if root["Service"] != "summarise" {
		t.Errorf("default Service = %v", root["Service"])
	}
}

func ExampleRecorder_Write() {
	rec, _ := metrics.New(metrics.Config{Writer: os.Stdout, Namespace: "sqsonce", Service: "summarise",
		Now: func() time.Time { return time.UnixMilli(1700000000000) }})
	_ = rec.Write(metrics.Counts{ProviderCalls: 1, DuplicatesSuppressed: 1}, 2)
	// Output:
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"sqsonce","Dimensions":[["Service"]],"Metrics":[{"Name":"ProviderCalls","Unit":"Count"},{"Name":"DuplicatesSuppressed","Unit":"Count"},{"Name":"InProgressRetried","Unit":"Count"},{"Name":"TakenOver","Unit":"Count"},{"Name":"Failed","Unit":"Count"},{"Name":"DoubleRuns","Unit":"Count"},{"Name":"Quarantined","Unit":"Count"}]}]},"Service":"summarise","Records":2,"ProviderCalls":1,"DuplicatesSuppressed":1,"InProgressRetried":0,"TakenOver":0,"Failed":0,"DoubleRuns":0,"Quarantined":0}
}
