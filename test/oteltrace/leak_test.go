package oteltrace_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// sentinel stands for a customer's text in a message: no span may hold it.
const sentinel = "SENTINEL-patient-7f3a9c"

// TestNoMessageContentInSpans puts the sentinel in every part of a
// message the function sees (the key, the body, message attributes' names
// and values, broken trace headers) and makes every outcome happen: a
// claim, a replay, a key error, a body that does not decode, an operation
// whose error and panic quote the body. No span name, attribute, event,
// link or status holds it.
func TestNoMessageContentInSpans(t *testing.T) {
	f := newFixture(t, sdktrace.AlwaysSample(), func(_ context.Context, o order) (string, error) {
		switch {
		case strings.HasPrefix(o.Key, "fail"):
			return "", fmt.Errorf("cannot process %s: %w", o.Key, errors.New("provider said "+o.Key))
		case strings.HasPrefix(o.Key, "panic"):
			panic("cannot process " + o.Key)
		}
		return "result for " + o.Key, nil
	})
	msg := func(id, body string) events.SQSMessage {
		m := message(id, body)
		m.Attributes["AWSTraceHeader"] = "Root=" + sentinel + ";Parent=" + sentinel
		m.Attributes["MessageGroupId"] = sentinel
		m.MessageAttributes = map[string]events.SQSMessageAttribute{
			"traceparent": {DataType: "String", StringValue: str("00-" + sentinel + "-01")},
			"tracestate":  {DataType: "String", StringValue: str("k=" + sentinel)},
			sentinel:      {DataType: "String", StringValue: str(sentinel)},
		}
		return m
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		msg("m1", `{"key":"`+sentinel+`","note":"`+sentinel+`"}`),
		msg("m2", `{"key":"`+sentinel+`","note":"`+sentinel+`"}`),
		msg("m3", `{"nokey":"`+sentinel+`"}`),
		msg("m4", `{"key":`+sentinel+`}`),
		msg("m5", `{"key":["`+sentinel+`"]}`),
		msg("m6", `{"key":"fail-`+sentinel+`"}`),
		msg("m7", `{"key":"panic-`+sentinel+`"}`),
	}}
	ctx, cancel := lambdaContext()
	defer cancel()
	if _, err := f.h(ctx, ev); err != nil {
		t.Fatal(err)
	}
	spans := f.exp.GetSpans()
	if len(spans) < len(ev.Records)+2 {
		t.Fatalf("%d spans, want at least one per record: %v", len(spans), names(spans))
	}
	outcomes := map[string]bool{}
	for _, s := range spans {
		if o := attrString(s, "sqsonce.outcome"); o != "" {
			outcomes[o] = true
		}
		for _, where := range leaks(s) {
			t.Errorf("span %q quotes the message in %s", s.Name, where)
		}
	}
	for _, o := range []string{"claimed", "replayed", "failed", "released"} {
		if !outcomes[o] {
			t.Errorf("no span with outcome %s: the test did not reach it (%v)", o, outcomes)
		}
	}
}

// leaks lists where s holds the sentinel.
func leaks(s tracetest.SpanStub) []string {
	var out []string
	check := func(where, v string) {
		if strings.Contains(v, sentinel) || strings.Contains(v, strings.ToLower(sentinel)) {
			out = append(out, where+": "+v)
		}
	}
	check("name", s.Name)
	check("status", s.Status.Description)
	for _, a := range s.Attributes {
		check("attribute "+string(a.Key), string(a.Key)+"="+a.Value.String())
	}
	for _, e := range s.Events {
		check("event", e.Name)
		for _, a := range e.Attributes {
			check("event "+e.Name+" attribute", string(a.Key)+"="+a.Value.String())
		}
	}
	for _, l := range s.Links {
		check("link", l.SpanContext.TraceState().String())
		for _, a := range l.Attributes {
			check("link attribute", string(a.Key)+"="+a.Value.String())
		}
	}
	return out
}
