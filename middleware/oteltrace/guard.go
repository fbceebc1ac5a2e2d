package oteltrace

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// Instrument returns cfg traced: each call's decision, and each store call
// with its latency, is written on the span of the call's context (the
// record's, under SQS, Kinesis, DynamoDBStream or Wrap), and each run of
// the operation gets a span under it, which the operation's context
// carries. The
// OnOutcome and OnRun already in cfg are still called. Give the result to
// idempotency.New.
func Instrument(cfg idempotency.Config, o ...Option) idempotency.Config {
	c := newConfig(o)
	if cfg.Store != nil {
		if _, done := cfg.Store.(interface{ traced() }); !done {
			cfg.Store = wrapStore(cfg.Store)
		}
	}
	next := cfg.OnOutcome
	cfg.OnOutcome = func(ctx context.Context, r idempotency.Report) {
		decision(ctx, r)
		if next != nil {
			next(ctx, r)
		}
	}
	nextRun := cfg.OnRun
	cfg.OnRun = func(ctx context.Context) (context.Context, func(error)) {
		var done func(error)
		if nextRun != nil {
			ctx, done = nextRun(ctx)
		}
		if !sampled(ctx) {
			return ctx, done
		}
		ctx, span := c.tracer.Start(ctx, "sqsonce.operation")
		return ctx, func(err error) {
			endSpan(span, err)
			if done != nil {
				done(err)
			}
		}
	}
	return cfg
}

// decision writes r on the span of ctx.
func decision(ctx context.Context, r idempotency.Report) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs,
		attribute.String("sqsonce.outcome", string(r.Outcome)),
		attribute.Bool("sqsonce.ran", r.Ran),
	)
	if r.ID != "" {
		attrs = append(attrs, attribute.String("sqsonce.record_id", r.ID))
	}
	if r.Source != "" {
		attrs = append(attrs, attribute.String("sqsonce.source", r.Source))
	}
	if r.Extensions > 0 {
		attrs = append(attrs, attribute.Int("sqsonce.extensions", r.Extensions))
	}
	if r.Err != nil {
		attrs = append(attrs, attribute.String("sqsonce.error", errorClass(r.Err)))
	}
	span.SetAttributes(attrs...)
}

// leaseAttr is a lease's end as an attribute, in UTC to the millisecond.
func leaseAttr(end time.Time) attribute.KeyValue {
	return attribute.String("sqsonce.lease_until", end.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}
