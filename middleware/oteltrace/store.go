package oteltrace

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// store is a driver.Store whose calls each get a span, a child of the
// call's (the record's): "sqsonce.store <op>", with the record id and the
// call's result, never a record's data. A claim and each lease extension
// also write the lease's end on the record's span, with an event.
type store struct {
	s     driver.Store
	c     *config
	class attribute.KeyValue // the store's Go type
}

// extender traces an Extender's Extend.
type extender struct {
	t *store
	e driver.Extender
}

// wrapStore is s traced, with the optional interfaces s implements and no
// other, so that the guard and tools find in it what they find in s.
func wrapStore(c *config, s driver.Store) driver.Store {
	t := &store{s: s, c: c, class: attribute.String("sqsonce.store", fmt.Sprintf("%T", s))}
	e, isE := s.(driver.Extender)
	a, isA := s.(driver.AttachValidator)
	i, isI := s.(driver.Inspector)
	x := &extender{t: t, e: e}
	switch {
	case isE && isA && isI:
		return struct {
			*store
			*extender
			driver.AttachValidator
			driver.Inspector
		}{t, x, a, i}
	case isE && isA:
		return struct {
			*store
			*extender
			driver.AttachValidator
		}{t, x, a}
	case isE && isI:
		return struct {
			*store
			*extender
			driver.Inspector
		}{t, x, i}
	case isA && isI:
		return struct {
			*store
			driver.AttachValidator
			driver.Inspector
		}{t, a, i}
	case isE:
		return struct {
			*store
			*extender
		}{t, x}
	case isA:
		return struct {
			*store
			driver.AttachValidator
		}{t, a}
	case isI:
		return struct {
			*store
			driver.Inspector
		}{t, i}
	}
	return t
}

func (*store) traced() {}

// Unwrap returns the store traced.
func (t *store) Unwrap() driver.Store { return t.s }

// start starts the span of one store call, unless its parent was not
// sampled (then span is nil).
func (t *store) start(ctx context.Context, op, id string) (context.Context, trace.Span) {
	if !sampled(ctx) {
		return ctx, nil
	}
	return t.c.tracer.Start(ctx, "sqsonce.store "+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.DBOperationName(op), t.class, attribute.String("sqsonce.record_id", id)))
}

// end ends span with err; a panic ends it too, and goes on.
func end(span trace.Span, err *error) {
	if span == nil {
		return
	}
	if p := recover(); p != nil {
		endSpan(span, &batch.PanicError{Value: p})
		panic(p)
	}
	endSpan(span, *err)
}

// Acquire implements driver.Store.
func (t *store) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (actual driver.Record, loaded bool, err error) {
	parent := trace.SpanFromContext(ctx)
	ctx, span := t.start(ctx, "acquire", rec.ID)
	if span == nil {
		return t.s.Acquire(ctx, rec, now, mode)
	}
	defer end(span, &err)
	actual, loaded, err = t.s.Acquire(ctx, rec, now, mode)
	if err != nil {
		return actual, loaded, err
	}
	span.SetAttributes(attribute.Bool("sqsonce.claimed", !loaded))
	if loaded {
		span.SetAttributes(attribute.String("sqsonce.found", string(actual.Status)))
		return actual, loaded, err
	}
	lease := leaseAttr(rec.LeaseEnd())
	parent.SetAttributes(lease)
	parent.AddEvent("sqsonce.claimed", trace.WithAttributes(lease, attribute.Bool("sqsonce.took_over", actual.ID != "")))
	return actual, loaded, err
}

// Complete implements driver.Store.
func (t *store) Complete(ctx context.Context, rec driver.Record) (stored []byte, err error) {
	ctx, span := t.start(ctx, "complete", rec.ID)
	if span == nil {
		return t.s.Complete(ctx, rec)
	}
	defer end(span, &err)
	span.SetAttributes(attribute.Int("sqsonce.result_bytes", len(rec.Data)), attribute.Int("sqsonce.attached", len(rec.Attached)))
	return t.s.Complete(ctx, rec)
}

// Release implements driver.Store.
func (t *store) Release(ctx context.Context, id, owner string) (err error) {
	ctx, span := t.start(ctx, "release", id)
	if span == nil {
		return t.s.Release(ctx, id, owner)
	}
	defer end(span, &err)
	return t.s.Release(ctx, id, owner)
}

// Quarantine implements driver.Store.
func (t *store) Quarantine(ctx context.Context, found driver.Record, now time.Time) (got driver.Record, err error) {
	parent := trace.SpanFromContext(ctx)
	ctx, span := t.start(ctx, "quarantine", found.ID)
	if span == nil {
		return t.s.Quarantine(ctx, found, now)
	}
	defer end(span, &err)
	got, err = t.s.Quarantine(ctx, found, now)
	if err == nil {
		parent.AddEvent("sqsonce.quarantined")
	}
	return got, err
}

// Extend implements driver.Extender.
func (x *extender) Extend(ctx context.Context, rec driver.Record, now time.Time) (err error) {
	parent := trace.SpanFromContext(ctx)
	ctx, span := x.t.start(ctx, "extend", rec.ID)
	if span == nil {
		return x.e.Extend(ctx, rec, now)
	}
	defer end(span, &err)
	lease := leaseAttr(rec.LeaseEnd())
	span.SetAttributes(lease)
	if err = x.e.Extend(ctx, rec, now); err == nil {
		parent.SetAttributes(lease)
		parent.AddEvent("sqsonce.lease_extended", trace.WithAttributes(lease))
	}
	return err
}
