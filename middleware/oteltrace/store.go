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
// other, so that the guard and tools find in it what they find in s. It is
// always a [driver.SealValidator], a check New makes once: s's own, or none;
// and a [driver.DataFitter]: s's own answer, or that it keeps every result,
// as the guard takes a store without one.
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

// The store calls' event names, made once.
const (
	evAcquire    = "sqsonce.store acquire"
	evComplete   = "sqsonce.store complete"
	evRelease    = "sqsonce.store release"
	evQuarantine = "sqsonce.store quarantine"
	evExtend     = "sqsonce.store extend"
)

// done adds the call's event, name, with its latency, its error's class
// and the result attrs (at most 3).
func (c call) done(name string, err error, attrs ...attribute.KeyValue) {
	if c.span == nil {
		return
	}
	all := make([]attribute.KeyValue, 0, 5)
	all = append(all, attrs...)
	all = append(all, attribute.Float64("sqsonce.store.ms", float64(time.Since(c.start).Microseconds())/1000))
	if err != nil {
		all = append(all, semconv.ErrorTypeKey.String(errorClass(err)))
	}
	c.span.AddEvent(name, trace.WithAttributes(all...))
}

// panicked adds a panicking call's event; the panic goes on.
func (c call) panicked(name string) {
	if p := recover(); p != nil {
		c.done(name, &batch.PanicError{Value: p})
		panic(p)
	}
}

// ValidateSealed implements [driver.SealValidator]: the traced store's
// refusal of sealed results, or nil when it has no such check, so that New
// refuses a Sealer on a traced store exactly when it refuses one on s.
func (t *store) ValidateSealed() error {
	if v, ok := t.s.(driver.SealValidator); ok {
		return v.ValidateSealed()
	}
	return nil
}

// FitsData implements [driver.DataFitter]: s's answer, or true (s keeps
// every result) when it has none, so that a guard seals a result for a
// traced store as it seals it for s (compressed only where s would not
// keep it whole otherwise). It adds no event: it calls nothing.
func (t *store) FitsData(rec driver.Record) bool {
	if f, ok := t.s.(driver.DataFitter); ok {
		return f.FitsData(rec)
	}
	return true
}

// Acquire implements driver.Store.
func (t *store) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (actual driver.Record, loaded bool, err error) {
	c := begin(ctx)
	if c.span == nil {
		return t.s.Acquire(ctx, rec, now, mode)
	}
	defer c.panicked(evAcquire)
	actual, loaded, err = t.s.Acquire(ctx, rec, now, mode)
	switch {
	case err != nil:
		c.done(evAcquire, err)
	case loaded:
		c.done(evAcquire, nil, attribute.String("sqsonce.found", string(actual.Status)))
	default:
		lease := leaseAttr(rec.LeaseEnd())
		c.span.SetAttributes(lease)
		c.done(evAcquire, nil, attribute.Bool("sqsonce.claimed", true), attribute.Bool("sqsonce.took_over", actual.ID != ""))
	}
	return actual, loaded, err
}

// Complete implements driver.Store.
func (t *store) Complete(ctx context.Context, rec driver.Record) (stored []byte, err error) {
	c := begin(ctx)
	if c.span == nil {
		return t.s.Complete(ctx, rec)
	}
	defer c.panicked(evComplete)
	stored, err = t.s.Complete(ctx, rec)
	c.done(evComplete, err, attribute.Int("sqsonce.result_bytes", len(stored)))
	return stored, err
}

// Release implements driver.Store.
func (t *store) Release(ctx context.Context, id, owner string) (err error) {
	c := begin(ctx)
	if c.span == nil {
		return t.s.Release(ctx, id, owner)
	}
	defer c.panicked(evRelease)
	err = t.s.Release(ctx, id, owner)
	c.done(evRelease, err)
	return err
}

// Quarantine implements driver.Store.
func (t *store) Quarantine(ctx context.Context, found driver.Record, now time.Time) (got driver.Record, err error) {
	c := begin(ctx)
	if c.span == nil {
		return t.s.Quarantine(ctx, found, now)
	}
	defer c.panicked(evQuarantine)
	got, err = t.s.Quarantine(ctx, found, now)
	c.done(evQuarantine, err)
	return got, err
}

// Extend implements driver.Extender.
func (x *extender) Extend(ctx context.Context, rec driver.Record, now time.Time) (err error) {
	c := begin(ctx)
	if c.span == nil {
		return x.e.Extend(ctx, rec, now)
	}
	defer c.panicked(evExtend)
	lease := leaseAttr(rec.LeaseEnd())
	if err = x.e.Extend(ctx, rec, now); err == nil {
		c.span.SetAttributes(lease)
	}
	c.done(evExtend, err, lease)
	return err
}
