package oteltrace_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestLinksMatchPropagators: oteltrace reads a record's AWSTraceHeader and
// traceparent without the propagators, and links its span to the span
// context the propagators read, valid or not, for well-formed and broken
// headers: the same trace id, span id and flags, without the tracestate (a
// message attribute's value, which no span holds), whatever the record's.
func TestLinksMatchPropagators(t *testing.T) {
	xrayHeaders := []string{
		xrayProducer,
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
		"Parent=53995c3f42cd8ad8;Sampled=1;Root=1-5759e988-bd862e3fe1be46a994272793",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=?",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a87bd80c:1|68fd508a:5",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1; ",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;",
		"Root=1-5759e988-bd862e3fe1be46a994272793",
		"Root=1-5759E988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
		"Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
		"Root=1-5759e988bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad;Sampled=1",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000;Sampled=1",
		"Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8;Sampled=1",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent;Sampled=1",
		"garbage",
		";;",
	}
	traceparents := []string{
		w3cProducer,
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09",
		"fe-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
		"0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}
	var ev events.SQSEvent
	want := map[string]trace.SpanContext{}
	for i, h := range xrayHeaders {
		m := message("x"+strconv.Itoa(i), `{"key":"x`+strconv.Itoa(i)+`"}`)
		m.Attributes["AWSTraceHeader"] = h
		ev.Records = append(ev.Records, m)
		want[m.MessageId] = trace.SpanContextFromContext(xray.Propagator{}.Extract(context.Background(), propagation.MapCarrier{"X-Amzn-Trace-Id": h}))
	}
	for i, h := range traceparents {
		for j, state := range []string{"", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", "not a state"} {
			id := "w" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
			m := message(id, `{"key":"`+id+`"}`)
			m.MessageAttributes = map[string]events.SQSMessageAttribute{"traceparent": {DataType: "String", StringValue: str(h)}}
			carrier := propagation.MapCarrier{"traceparent": h}
			if state != "" {
				m.MessageAttributes["tracestate"] = events.SQSMessageAttribute{DataType: "String", StringValue: str(state)}
				carrier["tracestate"] = state
			}
			ev.Records = append(ev.Records, m)
			want[id] = trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
		}
	}
	f := newFixture(t, sdktrace.AlwaysSample(), func(context.Context, order) (string, error) { return "ok", nil })
	if _, err := f.h(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	tr := newTree(f.exp.GetSpans())
	for _, m := range ev.Records {
		s := tr.record(m.MessageId)
		w := want[m.MessageId]
		switch {
		case !w.IsValid() && len(s.Links) != 0:
			t.Errorf("%s: links %v, want none: the propagator reads no context", m.MessageId, s.Links)
		case w.IsValid() && (len(s.Links) != 1 || !s.Links[0].SpanContext.Equal(w.WithTraceState(trace.TraceState{}))):
			t.Errorf("%s: links %v, want one to the propagator's %v, without its tracestate", m.MessageId, s.Links, w)
		}
	}
}
