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
// and values, the trace headers: valid ones, which make links, with the
// sentinel in their tracestate and in fields the links do not keep, and
// broken ones) and makes every outcome happen: a claim, a replay, a key
// error, a body that does not decode, an operation whose error and panic
// quote the body. No span name, attribute, event, link or status holds it.
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
	// Valid headers: an X-Ray header with the sentinel in a field of its
	// own, a traceparent of a later version with it in a field of its
	// own, and a tracestate that quotes it.
	valid := func(id, body string) events.SQSMessage {
		m := message(id, body)
		m.Attributes["AWSTraceHeader"] = xrayProducer + ";Lineage=" + sentinel
		m.Attributes["MessageGroupId"] = sentinel
		m.MessageAttributes = map[string]events.SQSMessageAttribute{
			"traceparent": {DataType: "String", StringValue: str("01" + w3cProducer[2:] + "-" + sentinel)},
			"tracestate":  {DataType: "String", StringValue: str("k=" + sentinel + ",ot=" + sentinel)},
			sentinel:      {DataType: "String", StringValue: str(sentinel)},
		}
		return m
	}
	// Broken headers, which make no link.
	broken := func(id, body string) events.SQSMessage {
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
	var ev events.SQSEvent
	for _, c := range []struct {
		prefix string
		msg    func(id, body string) events.SQSMessage
	}{{"valid-", valid}, {"broken-", broken}} {
		ev.Records = append(ev.Records,
			c.msg(c.prefix+"m1", `{"key":"`+sentinel+`","note":"`+sentinel+`"}`),
			c.msg(c.prefix+"m2", `{"key":"`+sentinel+`","note":"`+sentinel+`"}`),
			c.msg(c.prefix+"m3", `{"nokey":"`+sentinel+`"}`),
			c.msg(c.prefix+"m4", `{"key":`+sentinel+`}`),
			c.msg(c.prefix+"m5", `{"key":["`+sentinel+`"]}`),
			c.msg(c.prefix+"m6", `{"key":"fail-`+sentinel+`"}`),
			c.msg(c.prefix+"m7", `{"key":"panic-`+sentinel+`"}`),
		)
	}
	ctx, cancel := lambdaContext()
	defer cancel()
	if _, err := f.h(ctx, ev); err != nil {
		t.Fatal(err)
	}
	spans := f.exp.GetSpans()
	if len(spans) < len(ev.Records)+2 {
		t.Fatalf("%d spans, want at least one per record: %v", len(spans), names(spans))
	}
	// The valid headers made links (else the test proves nothing of them),
	// the broken ones none.
	tr := newTree(spans)
	for _, m := range ev.Records {
		got, want := len(tr.record(m.MessageId).Links), 0
		if strings.HasPrefix(m.MessageId, "valid-") {
			want = 2
		}
		if got != want {
			t.Errorf("%s: %d links, want %d", m.MessageId, got, want)
		}
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

// TestTracestateNotInSpans: a valid traceparent makes a link, and the
// tracestate that comes with it, a message attribute's value, is on no
// span: neither the record's link nor the batch's.
func TestTracestateNotInSpans(t *testing.T) {
	f := newFixture(t, sdktrace.AlwaysSample(), func(context.Context, order) (string, error) { return "ok", nil })
	m := message("m1", `{"key":"a"}`)
	m.MessageAttributes = map[string]events.SQSMessageAttribute{
		"traceparent": {DataType: "String", StringValue: str(w3cProducer)},
		"tracestate":  {DataType: "String", StringValue: str("k=" + sentinel)},
	}
	ctx, cancel := lambdaContext()
	defer cancel()
	if _, err := f.h(ctx, events.SQSEvent{Records: []events.SQSMessage{m}}); err != nil {
		t.Fatal(err)
	}
	var links int
	for _, s := range f.exp.GetSpans() {
		links += len(s.Links)
		for _, where := range leaks(s) {
			t.Errorf("span %q quotes the message in %s", s.Name, where)
		}
	}
	if links != 2 {
		t.Errorf("%d links, want 2 (the record's and the batch's)", links)
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
