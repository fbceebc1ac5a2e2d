package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// line decodes one EMF line and checks its shape: an _aws object with an
// integer Timestamp, one directive whose dimensions are top-level strings
// and whose metrics are top-level numbers of unit Count.
func line(t *testing.T, b []byte) map[string]any {
	t.Helper()
	if bytes.Count(b, []byte("\n")) != 1 || !bytes.HasSuffix(b, []byte("\n")) {
		t.Fatalf("not one line: %q", b)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	aws, _ := root["_aws"].(map[string]any)
	if _, err := fmt.Sscan(fmt.Sprint(aws["Timestamp"]), new(int64)); err != nil {
		t.Errorf("Timestamp %v", aws["Timestamp"])
	}
	dirs, _ := aws["CloudWatchMetrics"].([]any)
	if len(dirs) != 1 {
		t.Fatalf("directives %v", aws["CloudWatchMetrics"])
	}
	dir := dirs[0].(map[string]any)
	for _, set := range dir["Dimensions"].([]any) {
		for _, d := range set.([]any) {
			if _, ok := root[d.(string)].(string); !ok {
				t.Errorf("dimension %v is not a top-level string", d)
			}
		}
	}
	for _, m := range dir["Metrics"].([]any) {
		def := m.(map[string]any)
		if _, ok := root[def["Name"].(string)].(json.Number); !ok || def["Unit"] != metrics.Unit {
			t.Errorf("metric %v: value %v unit %v", def["Name"], root[def["Name"].(string)], def["Unit"])
		}
	}
	return root
}

// TestObserve holds the outcome-to-metric mapping of Observe's doc, one
// report per case.
func TestObserve(t *testing.T) {
	run := errors.New("model down")
	for _, tc := range []struct {
		ev   idempotency.Report
		want string // "" for none
	}{
		{idempotency.Report{Outcome: idempotency.OutcomeClaimed, Ran: true}, ""},
		{idempotency.Report{Outcome: idempotency.OutcomeTakenOver, Ran: true}, metrics.TakenOver},
		{idempotency.Report{Outcome: idempotency.OutcomeReplayed, Source: "store"}, metrics.DuplicatesSuppressed},
		{idempotency.Report{Outcome: idempotency.OutcomeReplayed, Source: "shared"}, metrics.DuplicatesSuppressed},
		{idempotency.Report{Outcome: idempotency.OutcomeReplayed, Ran: true}, ""},
		{idempotency.Report{Outcome: idempotency.OutcomeInProgress, Err: idempotency.ErrInProgress}, metrics.InProgressRetried},
		{idempotency.Report{Outcome: idempotency.OutcomeReleased, Ran: true, Err: run}, metrics.Failed},
		{idempotency.Report{Outcome: idempotency.OutcomeMismatch, Err: idempotency.ErrPayloadMismatch}, metrics.Failed},
		{idempotency.Report{Outcome: idempotency.OutcomeFailed, Err: idempotency.ErrNoKey}, metrics.Failed},
		{idempotency.Report{Outcome: idempotency.OutcomeDoubleRun, Ran: true}, metrics.DoubleRuns},
		{idempotency.Report{Outcome: idempotency.OutcomeQuarantined, Err: idempotency.ErrQuarantined}, metrics.Quarantined},
	} {
		var buf bytes.Buffer
		rec, err := metrics.New(metrics.Config{Writer: &buf, Service: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		h := rec.Batch(func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
			rec.Observe(ctx, tc.ev)
			return events.SQSEventResponse{}, nil
		})
		if _, err := h(t.Context(), events.SQSEvent{Records: make([]events.SQSMessage, 1)}); err != nil {
			t.Fatal(err)
		}
		root := line(t, buf.Bytes())
		for _, n := range metrics.Names() {
			want := "0"
			if n == tc.want {
				want = "1"
			}
			if got := fmt.Sprint(root[n]); got != want {
				t.Errorf("%s (ran %v): %s = %s, want %s", tc.ev.Outcome, tc.ev.Ran, n, got, want)
			}
		}
	}
}

// TestInstrument runs a batch through a handler instrumented in one line:
// the guard's outcomes and the records failed and not started land in one
// line per invocation, after the hooks already set, with the namespace,
// the Service dimension and the batch size.
func TestInstrument(t *testing.T) {
	var buf bytes.Buffer
	rec, err := metrics.New(metrics.Config{Writer: &buf, Service: "orders", Counters: []string{"Charges"},
		Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }})
	if err != nil {
		t.Fatal(err)
	}
	var prior int
	cfg := idempotency.Config{OnOutcome: func(context.Context, idempotency.Report) { prior++ }}
	opts := batch.Options{Concurrency: 1, Logger: nil}
	rec.Instrument(&cfg, &opts)
	h := rec.Batch(batch.SQS(func(ctx context.Context, m events.SQSMessage) (int, error) {
		switch m.Body {
		case "dup":
			cfg.OnOutcome(ctx, idempotency.Report{Outcome: idempotency.OutcomeReplayed, Source: "store"})
		case "fail":
			cfg.OnOutcome(ctx, idempotency.Report{Outcome: idempotency.OutcomeReleased, Ran: true})
			return 0, errors.New("charge declined")
		case "charge":
			rec.Add(ctx, "Charges", 2)
		}
		return 0, nil
	}, opts))
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(time.Hour))
	defer cancel()
	msgs := []events.SQSMessage{{MessageId: "1", Body: "dup"}, {MessageId: "2", Body: "fail"}, {MessageId: "3", Body: "charge"}}
	if _, err := h(ctx, events.SQSEvent{Records: msgs}); err != nil {
		t.Fatal(err)
	}
	root := line(t, buf.Bytes())
	want := map[string]string{
		"DuplicatesSuppressed": "1", "Failed": "1", "RecordsFailed": "1", "RecordsNotStarted": "0", "Charges": "2",
		"Records": "3", "Service": "orders", "TakenOver": "0",
	}
	for k, v := range want {
		if got := fmt.Sprint(root[k]); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	if ns := root["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Namespace"]; ns != metrics.DefaultNamespace {
		t.Errorf("namespace %v", ns)
	}
	if prior != 2 {
		t.Errorf("the OnOutcome set before Instrument ran %d times, want 2", prior)
	}

	// Records not started: a canceled context reaches no record.
	buf.Reset()
	done, stop := context.WithCancel(t.Context())
	stop()
	_, _ = h(done, events.SQSEvent{Records: msgs[:2]})
	root = line(t, buf.Bytes())
	if root["RecordsFailed"] != json.Number("2") || root["RecordsNotStarted"] != json.Number("2") || root["Failed"] != json.Number("0") {
		t.Errorf("canceled batch: %s", buf.Bytes())
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg  metrics.Config
		want string
	}{
		{metrics.Config{Service: "s"}, "Config.Writer is required"},
		{metrics.Config{Writer: &bytes.Buffer{}}, "Config.Service is required"},
		{metrics.Config{Writer: &bytes.Buffer{}, Service: "s", Counters: []string{metrics.Failed}}, `holds "Failed", a name taken already`},
		{metrics.Config{Writer: &bytes.Buffer{}, Service: "s", Counters: []string{"A", "A"}}, `holds "A"`},
		// Each line of an invocation has a request_id member already: a
		// counter of that name would make it twice.
		{metrics.Config{Writer: &bytes.Buffer{}, Service: "s", Counters: []string{"request_id"}}, `holds "request_id", a name taken already`},
		{metrics.Config{Writer: &bytes.Buffer{}, Service: "s", Counters: []string{"Records"}}, `holds "Records", a name taken already`},
		{metrics.Config{Writer: &bytes.Buffer{}, Service: "s", Counters: []string{""}}, "an empty name"},
	} {
		if _, err := metrics.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// A count outside a handler wrapped by Batch is a line of its own.
func TestObserveOutsideBatch(t *testing.T) {
	var buf bytes.Buffer
	rec, _ := metrics.New(metrics.Config{Writer: &buf, Service: "s"})
	rec.Observe(t.Context(), idempotency.Report{Outcome: idempotency.OutcomeTakenOver, Ran: true})
	if root := line(t, buf.Bytes()); root[metrics.TakenOver] != json.Number("1") {
		t.Errorf("line %s", buf.Bytes())
	}
}

func ExampleRecorder_Line() {
	rec, _ := metrics.New(metrics.Config{Writer: os.Stdout, Service: "orders", Now: func() time.Time { return time.UnixMilli(1700000000000) }})
	b, _ := rec.Line([]int64{1, 0, 0, 0, 0, 0, 0, 0}, 2)
	fmt.Print(string(b))
	// Output:
	// {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"sqsonce","Dimensions":[["Service"]],"Metrics":[{"Name":"DuplicatesSuppressed","Unit":"Count"},{"Name":"InProgressRetried","Unit":"Count"},{"Name":"TakenOver","Unit":"Count"},{"Name":"Failed","Unit":"Count"},{"Name":"DoubleRuns","Unit":"Count"},{"Name":"Quarantined","Unit":"Count"},{"Name":"RecordsFailed","Unit":"Count"},{"Name":"RecordsNotStarted","Unit":"Count"}]}]},"Service":"orders","Records":2,"DuplicatesSuppressed":1,"InProgressRetried":0,"TakenOver":0,"Failed":0,"DoubleRuns":0,"Quarantined":0,"RecordsFailed":0,"RecordsNotStarted":0}
}
