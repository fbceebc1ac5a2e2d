package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/test/history"
)

// recordStore is the store a sqsonce worker's guard calls: dynamostore
// behind a recorder that writes each call and the store's answer to the
// worker's history, as the history's claim, complete, release and
// quarantine events. The delivery a call belongs to comes from its context
// (see [worker.record]).
//
// A worker's own kill (its deadline, or after an operation) waits for the
// calls in flight to be recorded (see [worker.kill]).
//
// It implements every optional interface of package driver that dynamostore
// does, so that the guard takes the path it takes on dynamostore alone; the
// assertions below fail the build when one is missing.
type recordStore struct {
	next interface {
		driver.Store
		driver.AttachValidator
		driver.Inspector
		driver.Extender
	}
	w *worker
}

var (
	_ driver.Store           = (*recordStore)(nil)
	_ driver.AttachValidator = (*recordStore)(nil)
	_ driver.Inspector       = (*recordStore)(nil)
	_ driver.Extender        = (*recordStore)(nil)
)

// ms is t in epoch milliseconds, as records store lease ends; 0 for zero.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// resultOf is the result digest of a stored result: the run id in it.
func resultOf(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return "undecodable"
	}
	return r.Run
}

// fenced is the answer to a fenced write that returned err.
func fenced(err error) history.Resp {
	var perm batch.PermanentError
	switch {
	case err == nil:
		return history.RespOK
	case errors.Is(err, driver.ErrLeaseLost):
		return history.RespLeaseLost
	case errors.As(err, &perm) && perm.Permanent():
		return history.RespRefused
	default:
		return history.RespError
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (s *recordStore) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	s.w.calls.RLock() // the call and its record, before the worker's own kill
	defer s.w.calls.RUnlock()
	d := deliveryOf(ctx)
	actual, loaded, err := s.next.Acquire(ctx, rec, now, mode)
	e := history.Event{
		Ev: history.KindClaim, D: d.d, Reader: s.w.cfg.Reader,
		Owner: rec.Owner, Lease: ms(rec.LeaseEnd()), Exp: ms(rec.ExpiresAt),
		Payload: d.payload, Clock: now.UnixNano(), Err: errText(err),
	}
	switch {
	case err != nil:
		e.Resp = history.RespError
	case !loaded && actual.ID == "":
		e.Resp = history.RespClaimed
	case !loaded:
		e.Resp, e.Prev = history.RespTakenOver, actual.Owner
		e.Expired = !actual.ExpiresAt.IsZero() && actual.ExpiresAt.Before(now)
	case rec.Validation != "" && actual.Validation != rec.Validation:
		e.Resp, e.Prev = history.RespMismatch, actual.Owner
	case actual.Status == driver.StatusCompleted:
		e.Resp, e.Prev, e.Result = history.RespReplayed, actual.Owner, resultOf(actual.Data)
	case !actual.Quarantined.IsZero():
		e.Resp, e.Prev = history.RespQuarantined, actual.Owner
	default:
		e.Resp, e.Prev = history.RespInProgress, actual.Owner
	}
	if e.Resp == history.RespClaimed || e.Resp == history.RespTakenOver {
		d.setOwner(rec.Owner)
	}
	_ = s.w.write(e)
	return actual, loaded, err
}

func (s *recordStore) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	s.w.calls.RLock() // the call and its record, before the worker's own kill
	defer s.w.calls.RUnlock()
	d := deliveryOf(ctx)
	clock := s.w.now()
	stored, err := s.next.Complete(ctx, rec)
	e := history.Event{Ev: history.KindComplete, D: d.d, Owner: rec.Owner, Exp: ms(rec.ExpiresAt),
		Clock: clock.UnixNano(), Resp: fenced(err), Err: errText(err)}
	if err == nil {
		e.Result = resultOf(stored)
		if stored == nil {
			e.Result = resultOf(rec.Data)
		}
	}
	_ = s.w.write(e)
	return stored, err
}

func (s *recordStore) Release(ctx context.Context, id, owner string) error {
	s.w.calls.RLock() // the call and its record, before the worker's own kill
	defer s.w.calls.RUnlock()
	d := deliveryOf(ctx)
	clock := s.w.now()
	err := s.next.Release(ctx, id, owner)
	e := history.Event{Ev: history.KindRelease, D: d.d, Owner: owner, Clock: clock.UnixNano(), Resp: fenced(err), Err: errText(err)}
	if e.Resp == history.RespError && s.releasedAfter(ctx, id) {
		e.Resp, e.Err = history.RespOK, "answer lost ("+e.Err+"); read back: released"
	}
	_ = s.w.write(e)
	return err
}

// releasedAfter reports whether the record id reads as released (no
// record) after a release whose answer was lost (a connection reset after
// the store applied it, say): only its owner's fenced release removes a
// claim before its expiry, so the release was applied. The guard is not
// told; the history records what the store did.
func (s *recordStore) releasedAfter(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, err := s.next.Inspect(ctx, id)
	return errors.Is(err, driver.ErrNotFound)
}

func (s *recordStore) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	s.w.calls.RLock() // the call and its record, before the worker's own kill
	defer s.w.calls.RUnlock()
	d := deliveryOf(ctx)
	rec, err := s.next.Quarantine(ctx, found, now)
	_ = s.w.write(history.Event{Ev: history.KindQuarantine, D: d.d, Owner: found.Owner,
		Lease: ms(found.LeaseEnd()), Exp: ms(found.ExpiresAt), Clock: now.UnixNano(), Resp: fenced(err), Err: errText(err)})
	return rec, err
}

// Extend records the extension of rec's lease to its new end.
func (s *recordStore) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	s.w.calls.RLock() // the call and its record, before the worker's own kill
	defer s.w.calls.RUnlock()
	d := deliveryOf(ctx)
	err := s.next.Extend(ctx, rec, now)
	_ = s.w.write(history.Event{Ev: history.KindExtend, D: d.d, Owner: rec.Owner,
		Lease: ms(rec.LeaseEnd()), Clock: now.UnixNano(), Resp: fenced(err), Err: errText(err)})
	return err
}

// ValidateAttached, Inspect, List, ReleaseInspected and CompleteInspected
// pass through: the workers attach no writes, and the guard never calls
// an Inspector.

func (s *recordStore) ValidateAttached(id string, writes []any) error {
	return s.next.ValidateAttached(id, writes)
}

func (s *recordStore) Inspect(ctx context.Context, id string) (driver.StoredRecord, error) {
	return s.next.Inspect(ctx, id)
}

func (s *recordStore) List(ctx context.Context, opts driver.ListOptions) iter.Seq2[driver.StoredRecord, error] {
	return s.next.List(ctx, opts)
}

func (s *recordStore) ReleaseInspected(ctx context.Context, found driver.Record) error {
	return s.next.ReleaseInspected(ctx, found)
}

func (s *recordStore) CompleteInspected(ctx context.Context, found, done driver.Record) error {
	return s.next.CompleteInspected(ctx, found, done)
}
