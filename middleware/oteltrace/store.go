package oteltrace

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// store is a driver.Store whose calls each add an event to the span of
// the call's context (the record's): "sqsonce.store <op>", with its latency
// and result, never a record's data. A claim and each lease extension also
// write the lease's end on that span.
type store struct {
	s driver.Store
}

// extender traces an Extender's Extend.
type extender struct {
	t *store
	e driver.Extender
}

// wrapStore is s traced, with the optional interfaces s implements and no
// other, so that the guard and tools find in it what they find in s.
func wrapStore(s driver.Store) driver.Store {
	t := &store{s: s}
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

// call is one store call in progress: the span of the call's context,
// where its event goes, and when it started; zero when the span records
// nothing.
type call struct {
	span  trace.Span
	start time.Time
}

func begin(ctx context.Context) call {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return call{}
	}
	return call{span: span, start: time.Now()}
}

// done adds the call's event, "sqsonce.store <op>", with its latency, its
// error's class and attrs.
func (c call) done(op string, err error, attrs ...attribute.KeyValue) {
	if c.span == nil {
		return
	}
	attrs = append(attrs, attribute.Float64("sqsonce.store.ms", float64(time.Since(c.start).Microseconds())/1000))
	if err != nil {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorClass(err)))
	}
	c.span.AddEvent("sqsonce.store "+op, trace.WithAttributes(attrs...))
}

// panicked adds a panicking call's event; the panic goes on.
func (c call) panicked(op string) {
	if p := recover(); p != nil {
		c.done(op, &batch.PanicError{Value: p})
		panic(p)
	}
}

// Acquire implements driver.Store.
func (t *store) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (actual driver.Record, loaded bool, err error) {
	c := begin(ctx)
	if c.span == nil {
		return t.s.Acquire(ctx, rec, now, mode)
	}
	defer c.panicked("acquire")
	actual, loaded, err = t.s.Acquire(ctx, rec, now, mode)
	switch {
	case err != nil:
		c.done("acquire", err)
	case loaded:
		c.done("acquire", nil, attribute.String("sqsonce.found", string(actual.Status)))
	default:
		lease := leaseAttr(rec.LeaseEnd())
		c.span.SetAttributes(lease)
		c.done("acquire", nil, attribute.Bool("sqsonce.claimed", true), attribute.Bool("sqsonce.took_over", actual.ID != ""), lease)
	}
	return actual, loaded, err
}

// Complete implements driver.Store.
func (t *store) Complete(ctx context.Context, rec driver.Record) (stored []byte, err error) {
	c := begin(ctx)
	if c.span == nil {
		return t.s.Complete(ctx, rec)
	}
	defer c.panicked("complete")
	stored, err = t.s.Complete(ctx, rec)
	c.done("complete", err, attribute.Int("sqsonce.result_bytes", len(stored)))
	return stored, err
}

// Release implements driver.Store.
func (t *store) Release(ctx context.Context, id, owner string) (err error) {
	c := begin(ctx)
	if c.span == nil {
		return t.s.Release(ctx, id, owner)
	}
	defer c.panicked("release")
	err = t.s.Release(ctx, id, owner)
	c.done("release", err)
	return err
}

// Quarantine implements driver.Store.
func (t *store) Quarantine(ctx context.Context, found driver.Record, now time.Time) (got driver.Record, err error) {
	c := begin(ctx)
	if c.span == nil {
		return t.s.Quarantine(ctx, found, now)
	}
	defer c.panicked("quarantine")
	got, err = t.s.Quarantine(ctx, found, now)
	c.done("quarantine", err)
	return got, err
}

// Extend implements driver.Extender.
func (x *extender) Extend(ctx context.Context, rec driver.Record, now time.Time) (err error) {
	c := begin(ctx)
	if c.span == nil {
		return x.e.Extend(ctx, rec, now)
	}
	defer c.panicked("extend")
	lease := leaseAttr(rec.LeaseEnd())
	if err = x.e.Extend(ctx, rec, now); err == nil {
		c.span.SetAttributes(lease)
	}
	c.done("extend", err, lease)
	return err
}
