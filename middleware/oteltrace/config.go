package oteltrace

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans this package makes.
const ScopeName = "github.com/sqsonce/sqsonce/middleware/oteltrace"

// Option configures SQS, Kinesis, DynamoDBStream, Wrap and Instrument.
type Option func(*config)

// WithTracerProvider makes the spans with tp instead of the global
// provider. When tp has a ForceFlush method (the SDK's provider does), each
// invocation flushes it before returning, until half the handler's
// reserve before the deadline (see Export in the package doc); without
// this option, the global provider, set before or after the handler is
// built.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

type config struct {
	tp     trace.TracerProvider
	tracer trace.Tracer
	// flush is tp when it can ForceFlush. late says tp is the global
	// provider's stand-in, made before main set the provider (which it
	// then delegates to): each invocation flushes the global provider as
	// it is then.
	flush flusher
	late  bool
	// name is the last span name spanName made, kept since a function
	// reads one queue or stream.
	name atomic.Pointer[sourceName]
}

type sourceName struct{ source, name string }

// spanName is the name of a span that processes messages of source
// ("<source> process"), made once per source in a row.
func (c *config) spanName(source string) string {
	if n := c.name.Load(); n != nil && n.source == source {
		return n.name
	}
	n := &sourceName{source, spanName(source)}
	c.name.Store(n)
	return n.name
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	global := c.tp == nil
	if global {
		c.tp = otel.GetTracerProvider()
	}
	c.tracer = c.tp.Tracer(ScopeName)
	if f, ok := c.tp.(flusher); ok {
		c.flush = f
	} else {
		c.late = global
	}
	return c
}

// flusher is a provider that can export the spans it holds now.
type flusher interface {
	ForceFlush(context.Context) error
}

// flusher returns the provider an invocation flushes as it ends, or nil.
func (c *config) flusher() flusher {
	if c.late {
		f, _ := otel.GetTracerProvider().(flusher)
		return f
	}
	return c.flush
}
