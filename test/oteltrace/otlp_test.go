package oteltrace_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp" // the exporter testdata/otelfunc is built with
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// receiver is an OTLP/HTTP trace receiver: it decodes every export.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []string // the service.name of each resource
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	var ex collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range ex.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				r.res = append(r.res, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *receiver) received() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

func pbAttr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key != key {
			continue
		}
		switch v := a.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_BoolValue:
			return strconv.FormatBool(v.BoolValue)
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(v.IntValue, 10)
		}
	}
	return ""
}

// TestOTLPUnderEmulator runs testdata/otelfunc under the Lambda emulator
// at Lambda's default 3 s timeout, exporting with otlptracehttp to a
// receiver started here, and decodes what one batch sent: a new key linked
// to its X-Ray producer, a duplicate linked to its W3C producer, a key in
// progress elsewhere and a poison message. The spans arrive before the
// invocation's answer: the handler flushed them.
func TestOTLPUnderEmulator(t *testing.T) {
	path, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "rie", err, rie.Install)
	}
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./testdata/otelfunc")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fn := rie.StartTest(t, rie.Config{RIE: path, Bootstrap: bootstrap, Timeout: 3 * time.Second, FunctionName: "orders-fn",
		Env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SERVICE_NAME": "orders-svc"}})

	fresh := message("m-new", `{"key":"k1"}`)
	fresh.Attributes["AWSTraceHeader"] = xrayProducer
	dup := message("m-dup", `{"key":"k1"}`)
	dup.MessageAttributes = map[string]events.SQSMessageAttribute{"traceparent": {DataType: "String", StringValue: str(w3cProducer)}}
	busy := message("m-busy", `{"key":"busy"}`)
	poison := message("m-poison", `{"nokey":1}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := fn.Invoke(ctx, events.SQSEvent{Records: []events.SQSMessage{fresh, dup, busy, poison}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 2 {
		t.Errorf("failures %v, want m-busy and m-poison", resp.BatchItemFailures)
	}

	spans := rcv.received()
	byID := map[string]*tracepb.Span{}
	recs := map[string]*tracepb.Span{}
	var inv, bat *tracepb.Span
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		switch {
		case s.Name == "orders-fn" && s.Kind == tracepb.Span_SPAN_KIND_SERVER:
			inv = s
		case s.Name == "orders process" && pbAttr(s, "messaging.message.id") != "":
			recs[pbAttr(s, "messaging.message.id")] = s
		case s.Name == "orders process":
			bat = s
		}
	}
	if inv == nil || bat == nil || len(recs) != 4 {
		t.Fatalf("received %d spans, not the invocation, the batch and 4 records: %v", len(spans), spanNames(spans))
	}
	if len(rcv.res) == 0 || rcv.res[0] != "orders-svc" {
		t.Errorf("resource service.name %v, want orders-svc", rcv.res)
	}
	if hex.EncodeToString(bat.ParentSpanId) != hex.EncodeToString(inv.SpanId) || len(bat.Links) != 2 {
		t.Errorf("the batch span: parent %x (invocation %x), %d links", bat.ParentSpanId, inv.SpanId, len(bat.Links))
	}
	for id, s := range recs {
		if hex.EncodeToString(s.ParentSpanId) != hex.EncodeToString(bat.SpanId) || s.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
			t.Errorf("record %s: parent %x kind %v, want a CONSUMER span under the batch", id, s.ParentSpanId, s.Kind)
		}
	}
	link := func(s *tracepb.Span) string {
		if len(s.Links) != 1 {
			return ""
		}
		return hex.EncodeToString(s.Links[0].TraceId) + "/" + hex.EncodeToString(s.Links[0].SpanId)
	}
	if got := link(recs["m-new"]); got != xrayTraceID+"/"+xraySpanID {
		t.Errorf("m-new's link %s, want the AWSTraceHeader's", got)
	}
	if got := link(recs["m-dup"]); got != w3cTraceID+"/"+w3cSpanID {
		t.Errorf("m-dup's link %s, want the traceparent's", got)
	}
	outcomes := map[string]int{}
	var ops int
	for _, s := range spans {
		if s.Name == "sqsonce.operation" {
			ops++
			if p := byID[hex.EncodeToString(s.ParentSpanId)]; p == nil || pbAttr(p, "sqsonce.outcome") != "claimed" {
				t.Errorf("the operation's span is not under the claimed record's")
			}
		}
	}
	for _, s := range recs {
		outcomes[pbAttr(s, "sqsonce.outcome")]++
	}
	if ops != 1 || outcomes["claimed"] != 1 || outcomes["replayed"] != 1 || outcomes["in_progress"] != 1 || outcomes["failed"] != 1 {
		t.Errorf("outcomes %v and %d operation spans, want claimed, replayed, in_progress, failed and one operation", outcomes, ops)
	}
	for id, want := range map[string]string{"m-busy": "*idempotency.InProgressError", "m-poison": "*idempotency.KeyError"} {
		s := recs[id]
		if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.Status.GetMessage() != want || pbAttr(s, "error.type") != want {
			t.Errorf("record %s: status %v, error.type %q, want an error of class %s", id, s.Status, pbAttr(s, "error.type"), want)
		}
	}
}

func spanNames(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
