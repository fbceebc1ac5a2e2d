package oteltrace

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/trace"
)

// hostileMessages are SQS records whose trace headers are up to 1 MiB of
// what a producer may put there: repeated separators, an endless field, a
// valid header followed by garbage, and a tracestate of many members.
func hostileMessages() map[string]*events.SQSMessage {
	const mib = 1 << 20
	str := func(s string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: &s}
	}
	valid := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	return map[string]*events.SQSMessage{
		"xray separators":         {Attributes: map[string]string{"AWSTraceHeader": strings.Repeat(";", mib)}},
		"xray one field":          {Attributes: map[string]string{"AWSTraceHeader": "Root=" + strings.Repeat("1", mib)}},
		"xray many fields":        {Attributes: map[string]string{"AWSTraceHeader": strings.Repeat("Root=1-5759e988-bd862e3fe1be46a994272793;", mib/41)}},
		"traceparent long":        {MessageAttributes: map[string]events.SQSMessageAttribute{"traceparent": str(strings.Repeat("0", mib))}},
		"traceparent dashes":      {MessageAttributes: map[string]events.SQSMessageAttribute{"traceparent": str(strings.Repeat("-", mib))}},
		"traceparent future tail": {MessageAttributes: map[string]events.SQSMessageAttribute{"traceparent": str("01" + valid[2:] + "-" + strings.Repeat("x", mib))}},
		"tracestate many members": {MessageAttributes: map[string]events.SQSMessageAttribute{
			"traceparent": str(valid), "tracestate": str(strings.Repeat("k=v,", mib/4)),
		}},
	}
}

// TestProducerLinksHostileCeiling: reading a record's producer links from
// headers of up to 1 MiB never panics, yields at most one link per header,
// and allocates a bounded number of times whatever the header's length
// (the parsers scan it once; a tracestate is not read). Time is in
// BenchmarkProducerLinksHostile.
func TestProducerLinksHostileCeiling(t *testing.T) {
	const maxAllocs = 8
	for name, m := range hostileMessages() {
		var links []trace.Link
		allocs := testing.AllocsPerRun(3, func() { links = appendProducerLinks(links[:0], m) })
		if len(links) > 2 {
			t.Errorf("%s: %d links, want at most one per header", name, len(links))
		}
		if allocs > maxAllocs {
			t.Errorf("%s: %.0f allocations per record, want at most %d", name, allocs, maxAllocs)
		}
	}
}

func BenchmarkProducerLinksHostile(b *testing.B) {
	for name, m := range hostileMessages() {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			var links []trace.Link
			for b.Loop() {
				links = appendProducerLinks(links[:0], m)
			}
		})
	}
}

// FuzzProducerLinks: no header a producer can send panics the reader, and
// a link it returns is a valid remote span context without a tracestate.
func FuzzProducerLinks(f *testing.F) {
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "k=v")
	f.Add(";;Root=;=", "ff-00-00-00", ",,=")
	f.Fuzz(func(t *testing.T, xray, parent, state string) {
		m := &events.SQSMessage{
			Attributes: map[string]string{"AWSTraceHeader": xray},
			MessageAttributes: map[string]events.SQSMessageAttribute{
				"traceparent": {DataType: "String", StringValue: &parent},
				"tracestate":  {DataType: "String", StringValue: &state},
			},
		}
		for _, l := range appendProducerLinks(nil, m) {
			if !l.SpanContext.IsValid() || !l.SpanContext.IsRemote() || l.SpanContext.TraceState().Len() != 0 {
				t.Errorf("link %v is not a valid remote span context without a tracestate", l.SpanContext)
			}
		}
	})
}
