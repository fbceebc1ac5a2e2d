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
	libmetrics "github.com/sqsonce/sqsonce/middleware/metrics"
)

var names = append(libmetrics.Names(), metrics.ProviderCalls)

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

func TestNewDefaults(t *testing.T) {
	var buf bytes.Buffer
	rec, err := metrics.New(metrics.Config{Writer: &buf})
	if err != nil {
		t.Fatal(err)
	}
	rec.Observe(t.Context(), idempotency.Report{Outcome: idempotency.OutcomeTakenOver, Ran: true})
	root := checkEMF(t, buf.Bytes())
	for _, n := range names {
		if _, ok := root[n]; !ok {
			t.Errorf("%s missing from %s", n, buf.Bytes())
		}
	}
	if root["Service"] != metrics.DefaultService {
		t.Errorf("default Service = %v", root["Service"])
	}
	if _, err := metrics.New(metrics.Config{}); err == nil {
		t.Error("New without a Writer accepted")
	}
}

func ExampleRecorder() {
	rec, _ := metrics.New(metrics.Config{Writer: os.Stdout, Now: func() time.Time { return time.UnixMilli(1700000000000) }})
	h := rec.Batch(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		_, _ = rec.Provider(handler.Stub{}).Complete(ctx, handler.Call{Text: "a document"})
		rec.Observe(ctx, idempotency.Report{Outcome: idempotency.OutcomeReplayed, Source: "store"})
		return events.SQSEventResponse{}, nil
	})
	_, _ = h(context.Background(), events.SQSEvent{Records: make([]events.SQSMessage, 2)})
	// Output:
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"sqsonce","Dimensions":[["Service"]],"Metrics":[{"Name":"DuplicatesSuppressed","Unit":"Count"},{"Name":"InProgressRetried","Unit":"Count"},{"Name":"TakenOver","Unit":"Count"},{"Name":"Failed","Unit":"Count"},{"Name":"DoubleRuns","Unit":"Count"},{"Name":"Quarantined","Unit":"Count"},{"Name":"RecordsFailed","Unit":"Count"},{"Name":"RecordsNotStarted","Unit":"Count"},{"Name":"ProviderCalls","Unit":"Count"}]}]},"Service":"summarise","Records":2,"DuplicatesSuppressed":1,"InProgressRetried":0,"TakenOver":0,"Failed":0,"DoubleRuns":0,"Quarantined":0,"RecordsFailed":0,"RecordsNotStarted":0,"ProviderCalls":1}
}
