package oteltrace

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of a link, by the header it came from: shared by every
// link, which the SDK only reads.
var (
	xrayLinkAttrs = []attribute.KeyValue{attribute.String("sqsonce.link", "AWSTraceHeader")}
	w3cLinkAttrs  = []attribute.KeyValue{attribute.String("sqsonce.link", "traceparent")}
)

// appendProducerLinks appends to links those to m's producers: the context
// in its AWSTraceHeader system attribute (X-Ray's format) and the one in
// its traceparent message attribute (W3C's), each when present and valid:
// trace id, span id and flags only. A tracestate message attribute is not
// read: it is a message attribute's value, which no span holds. It
// allocates nothing beyond links' growth.
func appendProducerLinks(links []trace.Link, m *events.SQSMessage) []trace.Link {
	var first trace.SpanContext
	if h := m.Attributes["AWSTraceHeader"]; h != "" {
		if sc, ok := parseXRay(h); ok {
			first = sc
			links = append(links, trace.Link{SpanContext: sc, Attributes: xrayLinkAttrs})
		}
	}
	if a, ok := m.MessageAttributes["traceparent"]; ok && a.StringValue != nil {
		if sc, ok := parseTraceparent(*a.StringValue); ok {
			if !first.IsValid() || sc.TraceID() != first.TraceID() || sc.SpanID() != first.SpanID() {
				links = append(links, trace.Link{SpanContext: sc, Attributes: w3cLinkAttrs})
			}
		}
	}
	return links
}

// parseXRay reads an X-Ray trace header ("Root=1-5759e988-bd862e3fe1be46a994272793;
// Parent=53995c3f42cd8ad8;Sampled=1", its fields in any order) as the
// contrib X-Ray propagator does, without allocating: ok only for a valid,
// remote span context.
func parseXRay(h string) (sc trace.SpanContext, ok bool) {
	var cfg trace.SpanContextConfig
	for h != "" {
		var part string
		if i := strings.IndexByte(h, ';'); i >= 0 {
			part, h = h[:i], h[i+1:]
		} else {
			part, h = strings.TrimSpace(h), ""
		}
		_, v, found := strings.Cut(part, "=")
		if !found {
			return sc, false
		}
		switch {
		case strings.HasPrefix(part, "Root"):
			// 1-<8 hex>-<24 hex>
			if len(v) != 35 || v[0] != '1' || v[1] != '-' || v[10] != '-' ||
				!decodeHex(cfg.TraceID[:4], v[2:10]) || !decodeHex(cfg.TraceID[4:], v[11:]) {
				return sc, false
			}
		case strings.HasPrefix(part, "Parent"):
			if len(v) != 16 || !decodeHex(cfg.SpanID[:], v) {
				return sc, false
			}
		case strings.HasPrefix(part, "Sampled"):
			if v == "1" {
				cfg.TraceFlags = trace.FlagsSampled
			} else {
				cfg.TraceFlags = 0
			}
		}
	}
	cfg.Remote = true
	sc = trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// parseTraceparent reads a W3C traceparent header
// ("00-<32 hex>-<16 hex>-<2 hex>") as the TraceContext propagator does,
// without allocating: ok only for a valid, remote span context.
func parseTraceparent(h string) (sc trace.SpanContext, ok bool) {
	var ver, flags [1]byte
	var cfg trace.SpanContextConfig
	if !cutHex(ver[:], &h) || ver[0] == 0xff || !cutHex(cfg.TraceID[:], &h) || !cutHex(cfg.SpanID[:], &h) || !cutHex(flags[:], &h) {
		return sc, false
	}
	if ver[0] == 0 && (h != "" || flags[0] > 3) {
		return sc, false // version 0 has no more fields and no other flags
	}
	cfg.TraceFlags = trace.TraceFlags(flags[0]) & (trace.FlagsSampled | trace.FlagsRandom)
	cfg.Remote = true
	sc = trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// cutHex decodes into dst the field of *h before its first "-", and leaves
// in *h what follows that "-".
func cutHex(dst []byte, h *string) bool {
	part, rest, _ := strings.Cut(*h, "-")
	*h = rest
	return decodeHex(dst, part)
}

// decodeHex decodes the lowercase hex s into dst, len(s) == 2*len(dst).
func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := hexVal(s[2*i])
		lo, ok2 := hexVal(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
