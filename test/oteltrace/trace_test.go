package oteltrace_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

const (
	queueARN = "arn:aws:sqs:eu-west-1:123456789012:orders"
	// The producers' contexts: one in X-Ray's header, one in W3C's.
	xrayProducer  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	xrayTraceID   = "5759e988bd862e3fe1be46a994272793"
	xraySpanID    = "53995c3f42cd8ad8"
	w3cProducer   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	w3cTraceID    = "0af7651916cd43dd8448eb211c80319c"
	w3cSpanID     = "b7ad6b7169203331"
	lambdaTraceID = "1-67891233-abcdef012345678912345678"
	lambdaHeader  = "Root=" + lambdaTraceID + ";Parent=463ac35c9f6413ad;Sampled=1"
)

type order struct {
	Key string `json:"key"`
}

// fixture is a traced function on memstore, its store and its spans.
type fixture struct {
	store *memstore.Store
	guard *idempotency.Guard
	exp   *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
	runs  atomic.Int32
	h     func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

func newFixture(t testing.TB, sampler sdktrace.Sampler, op func(context.Context, order) (string, error)) *fixture {
	t.Helper()
	f := &fixture{store: memstore.New(), exp: tracetest.NewInMemoryExporter()}
	f.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(f.exp), sdktrace.WithSampler(sampler))
	t.Cleanup(func() { _ = f.tp.Shutdown(context.Background()) })
	var err error
	f.guard, err = idempotency.New(oteltrace.Instrument(idempotency.Config{Store: f.store, Namespace: "orders"}, oteltrace.WithTracerProvider(f.tp)))
	if err != nil {
		t.Fatal(err)
	}
	h := idempotency.WrapJSON(f.guard, idempotency.BodyField("key"), func(ctx context.Context, o order, _ events.SQSMessage) (string, error) {
		f.runs.Add(1)
		return op(ctx, o)
	})
	f.h = oteltrace.SQS(h, batch.Options{}, oteltrace.WithTracerProvider(f.tp))
	return f
}

// claimElsewhere claims key as another, live worker would.
func (f *fixture) claimElsewhere(t *testing.T, m events.SQSMessage) {
	t.Helper()
	sel, err := idempotency.Select(idempotency.BodyField("key"), m)
	if err != nil {
		t.Fatal(err)
	}
	id, err := f.guard.ID(sel)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Hour), Owner: "elsewhere"}
	if _, loaded, err := f.store.Acquire(context.Background(), rec, now, driver.Takeover); err != nil || loaded {
		t.Fatalf("claim elsewhere: loaded %v, %v", loaded, err)
	}
}

func message(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSource: "aws:sqs", EventSourceARN: queueARN, Attributes: map[string]string{}}
}

func str(s string) *string { return &s }

// lambdaContext is an invocation's context as aws-lambda-go makes it.
func lambdaContext() (context.Context, context.CancelFunc) {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
		AwsRequestID:       "req-1",
		InvokedFunctionArn: "arn:aws:lambda:eu-west-1:123456789012:function:orders",
	})
	//lint:ignore SA1029 aws-lambda-go's own key
	ctx = context.WithValue(ctx, "x-amzn-trace-id", lambdaHeader)
	return context.WithTimeout(ctx, 3*time.Second)
}

// tree indexes the spans of one trace.
type tree struct {
	spans    tracetest.SpanStubs
	byID     map[trace.SpanID]tracetest.SpanStub
	children map[trace.SpanID][]tracetest.SpanStub
}

func newTree(spans tracetest.SpanStubs) *tree {
	tr := &tree{spans: spans, byID: map[trace.SpanID]tracetest.SpanStub{}, children: map[trace.SpanID][]tracetest.SpanStub{}}
	for _, s := range spans {
		tr.byID[s.SpanContext.SpanID()] = s
		tr.children[s.Parent.SpanID()] = append(tr.children[s.Parent.SpanID()], s)
	}
	return tr
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func attrString(s tracetest.SpanStub, key string) string {
	v, _ := attr(s, key)
	return v.String()
}

func (tr *tree) named(prefix string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr.spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// record is the span of the record with message id id.
func (tr *tree) record(id string) tracetest.SpanStub {
	for _, s := range tr.spans {
		if attrString(s, "messaging.message.id") == id {
			return s
		}
	}
	return tracetest.SpanStub{}
}

// one is the one span named name.
func (tr *tree) one(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var out []tracetest.SpanStub
	for _, s := range tr.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d spans named %q, want 1: %v", len(out), name, names(tr.spans))
	}
	return out[0]
}

func (tr *tree) childNames(s tracetest.SpanStub) []string {
	var out []string
	for _, c := range tr.children[s.SpanContext.SpanID()] {
		out = append(out, c.Name)
	}
	return out
}

// TestBatchSpanTree runs one batch with a new key, a duplicate of it, a key
// in progress elsewhere and a poison message, and reads the trace: the
// invocation under Lambda's trace context, the batch, a span per record
// linked to its producer, the guard's decision on each, the store calls,
// and the operation only where it ran.
func TestBatchSpanTree(t *testing.T) {
	f := newFixture(t, sdktrace.ParentBased(sdktrace.AlwaysSample()), func(context.Context, order) (string, error) { return "done", nil })
	fresh := message("m-new", `{"key":"k1"}`)
	fresh.Attributes["AWSTraceHeader"] = xrayProducer
	dup := message("m-dup", `{"key":"k1"}`)
	dup.MessageAttributes = map[string]events.SQSMessageAttribute{"traceparent": {DataType: "String", StringValue: str(w3cProducer)}}
	busy := message("m-busy", `{"key":"busy"}`)
	poison := message("m-poison", `{"nokey":1}`)
	f.claimElsewhere(t, busy)

	ctx, cancel := lambdaContext()
	defer cancel()
	resp, err := f.h(ctx, events.SQSEvent{Records: []events.SQSMessage{fresh, dup, busy, poison}})
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, it := range resp.BatchItemFailures {
		failed[it.ItemIdentifier] = true
	}
	if len(failed) != 2 || !failed["m-busy"] || !failed["m-poison"] {
		t.Fatalf("failures %v, want m-busy and m-poison", resp.BatchItemFailures)
	}
	if n := f.runs.Load(); n != 1 {
		t.Fatalf("the operation ran %d times, want 1", n)
	}

	tr := newTree(f.exp.GetSpans())
	// The invocation: a SERVER span under Lambda's trace context.
	inv := tr.named("lambda")
	if len(inv) != 1 {
		t.Fatalf("%d invocation spans, want 1: %v", len(inv), names(tr.spans))
	}
	if got := inv[0].SpanContext.TraceID().String(); got != strings.ReplaceAll(lambdaTraceID[2:], "-", "") {
		t.Errorf("the invocation's trace %s, want Lambda's %s", got, lambdaTraceID)
	}
	if inv[0].Parent.SpanID().String() != "463ac35c9f6413ad" || !inv[0].Parent.IsRemote() {
		t.Errorf("the invocation's parent %v, want Lambda's segment 463ac35c9f6413ad", inv[0].Parent.SpanID())
	}
	if inv[0].SpanKind != trace.SpanKindServer || attrString(inv[0], "faas.invocation_id") != "req-1" || attrString(inv[0], "cloud.account.id") != "123456789012" {
		t.Errorf("invocation span: kind %v, attributes %v", inv[0].SpanKind, inv[0].Attributes)
	}
	// The batch: one CONSUMER span under it, linked to both producers.
	bat := tr.children[inv[0].SpanContext.SpanID()]
	if len(bat) != 1 || bat[0].Name != "orders process" || bat[0].SpanKind != trace.SpanKindConsumer {
		t.Fatalf("the invocation's children %v, want one \"orders process\"", names(bat))
	}
	if attrString(bat[0], "messaging.system") != "aws_sqs" || attrString(bat[0], "faas.trigger") != "pubsub" || attrString(bat[0], "messaging.batch.message_count") != "4" {
		t.Errorf("batch span attributes %v", bat[0].Attributes)
	}
	if got := linkIDs(bat[0]); got != xrayTraceID+"/"+xraySpanID+","+w3cTraceID+"/"+w3cSpanID {
		t.Errorf("batch links %s", got)
	}
	// One span per record, under the batch.
	recs := map[string]tracetest.SpanStub{}
	for _, s := range tr.children[bat[0].SpanContext.SpanID()] {
		recs[attrString(s, "messaging.message.id")] = s
		if s.Name != "orders process" || s.SpanKind != trace.SpanKindConsumer || attrString(s, "messaging.operation.type") != "process" ||
			attrString(s, "messaging.destination.name") != "orders" || attrString(s, "messaging.system") != "aws_sqs" {
			t.Errorf("record span %s: kind %v, attributes %v", s.Name, s.SpanKind, s.Attributes)
		}
		if s.SpanContext.TraceID() != inv[0].SpanContext.TraceID() {
			t.Errorf("record span in trace %s, not the invocation's", s.SpanContext.TraceID())
		}
	}
	if len(recs) != 4 {
		t.Fatalf("%d record spans, want 4", len(recs))
	}

	// Each record is linked to its own producer.
	if got := linkIDs(recs["m-new"]); got != xrayTraceID+"/"+xraySpanID {
		t.Errorf("m-new's links %s, want the AWSTraceHeader's", got)
	}
	if got := linkIDs(recs["m-dup"]); got != w3cTraceID+"/"+w3cSpanID {
		t.Errorf("m-dup's links %s, want the traceparent's", got)
	}
	// The two deliveries of k1 run concurrently: one claims and runs, with
	// its store calls and the operation below it; the other is replayed
	// (from the store, or shared with the run in this process), without
	// an operation.
	ran, replayed := recs["m-new"], recs["m-dup"]
	if attrString(ran, "sqsonce.outcome") != "claimed" {
		ran, replayed = replayed, ran
	}
	wantAttrs(t, "first of k1", ran, map[string]string{"sqsonce.outcome": "claimed", "sqsonce.ran": "true"})
	if id := attrString(ran, "sqsonce.record_id"); !strings.HasPrefix(id, "orders#") || strings.Contains(id, "k1") {
		t.Errorf("record id %q, want the namespace and a digest", id)
	}
	if _, ok := attr(ran, "sqsonce.lease_until"); !ok {
		t.Errorf("first of k1: no lease on its span: %v", ran.Attributes)
	}
	if got := eventNames(ran); got != "sqsonce.store acquire,sqsonce.store complete" {
		t.Errorf("first of k1's events %s", got)
	}
	if ev := event(ran, "sqsonce.store acquire"); eventAttr(ev, "sqsonce.claimed") != "true" || eventAttr(ev, "sqsonce.store.ms") == "" {
		t.Errorf("first of k1's claim: %v", ev.Attributes)
	}
	if got := strings.Join(tr.childNames(ran), ","); got != "sqsonce.operation" {
		t.Errorf("first of k1's children %s, want the operation", got)
	}
	if ran.Status.Code == codes.Error {
		t.Errorf("first of k1's status %v", ran.Status)
	}
	wantAttrs(t, "duplicate", replayed, map[string]string{"sqsonce.outcome": "replayed", "sqsonce.ran": "false",
		"sqsonce.record_id": attrString(ran, "sqsonce.record_id")})
	if src := attrString(replayed, "sqsonce.source"); src != "store" && src != "shared" {
		t.Errorf("duplicate's source %q, want store or shared", src)
	}
	if slicesContain(tr.childNames(replayed), "sqsonce.operation") {
		t.Errorf("the duplicate has an operation span: %v", tr.childNames(replayed))
	}

	// The key in progress elsewhere: failed with the class, no operation.
	s := recs["m-busy"]
	wantAttrs(t, "in progress", s, map[string]string{"sqsonce.outcome": "in_progress", "sqsonce.ran": "false",
		"error.type": "*idempotency.InProgressError"})
	if s.Status.Code != codes.Error || s.Status.Description != "*idempotency.InProgressError" {
		t.Errorf("in progress status %+v", s.Status)
	}
	if got := strings.Join(tr.childNames(s), ","); got != "" {
		t.Errorf("in progress children %s, want none", got)
	}
	if got := eventNames(s); got != "sqsonce.store acquire" {
		t.Errorf("in progress events %s, want the acquire only", got)
	}
	if got := eventAttr(event(s, "sqsonce.store acquire"), "sqsonce.found"); got != "INPROGRESS" {
		t.Errorf("in progress acquire found %q", got)
	}

	// The poison message: a key error, nothing claimed.
	s = recs["m-poison"]
	wantAttrs(t, "poison", s, map[string]string{"sqsonce.outcome": "failed", "error.type": "*idempotency.KeyError"})
	if s.Status.Code != codes.Error || len(tr.children[s.SpanContext.SpanID()]) != 0 {
		t.Errorf("poison: status %+v, children %v", s.Status, tr.childNames(s))
	}
}

// TestOperationContextCarriesSpan: a client's span started in the
// operation nests under the operation's span, in the record's trace.
func TestOperationContextCarriesSpan(t *testing.T) {
	var f *fixture
	f = newFixture(t, sdktrace.AlwaysSample(), func(ctx context.Context, _ order) (string, error) {
		_, span := f.tp.Tracer("client").Start(ctx, "bedrock.InvokeModel")
		span.End()
		return "ok", nil
	})
	ctx, cancel := lambdaContext()
	defer cancel()
	if _, err := f.h(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", `{"key":"a"}`)}}); err != nil {
		t.Fatal(err)
	}
	tr := newTree(f.exp.GetSpans())
	client := tr.named("bedrock.InvokeModel")
	if len(client) != 1 {
		t.Fatalf("client spans %v", names(tr.spans))
	}
	op := tr.byID[client[0].Parent.SpanID()]
	rec := tr.byID[op.Parent.SpanID()]
	if op.Name != "sqsonce.operation" || rec.Name != "orders process" {
		t.Errorf("the client's span is under %q under %q, want the operation under the record", op.Name, rec.Name)
	}
}

// TestFailedOperationClass: an operation whose error quotes its input
// fails its record's span and the operation's with the error's class only.
func TestFailedOperationClass(t *testing.T) {
	f := newFixture(t, sdktrace.AlwaysSample(), func(_ context.Context, o order) (string, error) {
		return "", errors.New("cannot charge " + o.Key)
	})
	ctx, cancel := lambdaContext()
	defer cancel()
	if _, err := f.h(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", `{"key":"secret-key-123456"}`)}}); !errors.As(err, new(*batch.FullBatchFailureError)) {
		t.Fatalf("a batch whose one record failed: %v, want a *batch.FullBatchFailureError", err)
	}
	tr := newTree(f.exp.GetSpans())
	rec := tr.record("m1")
	for _, s := range []tracetest.SpanStub{rec, tr.one(t, "sqsonce.operation")} {
		name := s.Name
		if s.Status.Code != codes.Error || s.Status.Description != "*errors.errorString" || attrString(s, "error.type") != "*errors.errorString" {
			t.Errorf("%s: status %+v, attributes %v", name, s.Status, s.Attributes)
		}
	}
	wantAttrs(t, "released", rec, map[string]string{"sqsonce.outcome": "released", "sqsonce.ran": "true"})
	if got := eventNames(rec); got != "sqsonce.store acquire,sqsonce.store release" {
		t.Errorf("released record's events %s", got)
	}
}

// TestUnsampled: an invocation X-Ray did not sample records no span, on
// the default sampler and on one that ignores the parent, and the guard
// still works.
func TestUnsampled(t *testing.T) {
	for _, sampler := range []sdktrace.Sampler{sdktrace.ParentBased(sdktrace.AlwaysSample()), sdktrace.AlwaysSample()} {
		f := newFixture(t, sampler, func(context.Context, order) (string, error) { return "ok", nil })
		//lint:ignore SA1029 aws-lambda-go's own key
		ctx := context.WithValue(context.Background(), "x-amzn-trace-id", "Root="+lambdaTraceID+";Parent=463ac35c9f6413ad;Sampled=0")
		resp, err := f.h(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", `{"key":"a"}`), message("m2", `{"key":"a"}`)}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s: %v %v", sampler.Description(), resp, err)
		}
		if n := len(f.exp.GetSpans()); n != 0 {
			t.Errorf("%s: %d spans of an unsampled invocation: %v", sampler.Description(), n, names(f.exp.GetSpans()))
		}
		if f.runs.Load() != 1 {
			t.Errorf("%s: ran %d times", sampler.Description(), f.runs.Load())
		}
	}
}

// TestStoreOptionalInterfaces: the traced store has the optional
// interfaces of the store it traces, and no other (SealValidator, a check
// at New, it always has: see TestSealRefusalTraced).
func TestStoreOptionalInterfaces(t *testing.T) {
	cfg := oteltrace.Instrument(idempotency.Config{Store: memstore.New()})
	if _, ok := cfg.Store.(driver.Extender); !ok {
		t.Error("memstore's Extender is lost")
	}
	if _, ok := cfg.Store.(driver.Inspector); !ok {
		t.Error("memstore's Inspector is lost")
	}
	if _, ok := cfg.Store.(driver.AttachValidator); ok {
		t.Error("a traced memstore validates attached writes, which memstore does not")
	}
	if again := oteltrace.Instrument(cfg); again.Store != cfg.Store {
		t.Error("instrumenting twice wraps the store twice")
	}
	var bare driver.Store = struct{ driver.Store }{memstore.New()}
	cfg = oteltrace.Instrument(idempotency.Config{Store: bare})
	if _, ok := cfg.Store.(driver.Extender); ok {
		t.Error("a store without Extend gained one")
	}
}

// TestSealRefusalTraced: a traced store refuses a Sealer when the store it
// traces does (dynamostore sharing a table with Powertools Python, whose
// readers would replay the sealed text), and accepts one when it does not.
func TestSealRefusalTraced(t *testing.T) {
	db := dynamodb.NewFromConfig(aws.Config{Region: "eu-west-1"}) // New makes no call
	for _, c := range []struct {
		format dynamostore.DataFormat
		guard  idempotency.Format
		refuse bool
	}{
		// The store's refusal (its data format), through the traced store;
		// the guard's own (a Powertools key format) is traced or not alike.
		{dynamostore.DataPowertoolsPython, idempotency.FormatNative, true},
		{dynamostore.DataJSON, idempotency.FormatNative, false},
		{dynamostore.DataJSON, idempotency.FormatPowertoolsPython, true},
	} {
		s, err := dynamostore.New(db, "records", dynamostore.WithDataFormat(c.format))
		if err != nil {
			t.Fatal(err)
		}
		cfg := idempotency.Config{Store: s, Namespace: "n", Format: c.guard, Sealer: nullSealer{}}
		_, plain := idempotency.New(cfg)
		_, traced := idempotency.New(oteltrace.Instrument(cfg))
		if (plain != nil) != c.refuse || (traced != nil) != c.refuse {
			t.Errorf("%v: New: %v; New(Instrument): %v; want refused: %v", c.format, plain, traced, c.refuse)
		}
	}
}

// nullSealer is a Sealer for New's checks; it seals nothing.
type nullSealer struct{}

func (nullSealer) Seal(_ context.Context, _ string, b []byte) ([]byte, error) { return b, nil }
func (nullSealer) Open(_ context.Context, _ string, b []byte) ([]byte, error) { return b, nil }

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func linkIDs(s tracetest.SpanStub) string {
	var out []string
	for _, l := range s.Links {
		out = append(out, l.SpanContext.TraceID().String()+"/"+l.SpanContext.SpanID().String())
	}
	return strings.Join(out, ",")
}

func eventNames(s tracetest.SpanStub) string {
	var out []string
	for _, e := range s.Events {
		out = append(out, e.Name)
	}
	return strings.Join(out, ",")
}

func event(s tracetest.SpanStub, name string) sdktrace.Event {
	for _, e := range s.Events {
		if e.Name == name {
			return e
		}
	}
	return sdktrace.Event{}
}

func eventAttr(e sdktrace.Event, key string) string {
	for _, a := range e.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func wantAttrs(t *testing.T, what string, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := attr(s, k); !ok || got.String() != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got.String(), v)
		}
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestTraceHeaderFromTheInvocation: an invocation whose context carries
// aws-lambda-go's trace header key, empty (Lambda sent none), starts a trace
// of its own: it never joins the trace in _X_AMZN_TRACE_ID, which with
// several invocations in one process is not set per invocation and may be
// another's. A context without the key (a caller other than aws-lambda-go,
// one invocation at a time) reads the environment variable.
func TestTraceHeaderFromTheInvocation(t *testing.T) {
	const envTrace = "5759e988bd862e3fe1be46a994272793"
	t.Setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	for _, tc := range []struct {
		name     string
		header   *string // nil: no key in the context
		joinsEnv bool
	}{
		{"empty header", str(""), false},
		{"no header key", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, sdktrace.AlwaysSample(), func(context.Context, order) (string, error) { return "ok", nil })
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
			if tc.header != nil {
				//lint:ignore SA1029 aws-lambda-go's own key
				ctx = context.WithValue(ctx, "x-amzn-trace-id", *tc.header)
			}
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if _, err := f.h(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", `{"key":"k1"}`)}}); err != nil {
				t.Fatal(err)
			}
			spans := f.exp.GetSpans()
			if len(spans) == 0 {
				t.Fatal("no spans")
			}
			for _, s := range spans {
				if joined := s.SpanContext.TraceID().String() == envTrace; joined != tc.joinsEnv {
					t.Errorf("span %q in trace %s: joins _X_AMZN_TRACE_ID's trace = %v, want %v", s.Name, s.SpanContext.TraceID(), joined, tc.joinsEnv)
				}
			}
		})
	}
}
