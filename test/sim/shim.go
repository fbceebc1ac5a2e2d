package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize"
	"github.com/sqsonce/sqsonce/test/history"
)

// shim is one process's network to the shared memstore: every request is a
// scheduler step, which may drop it (not applied), drop its answer
// (applied, the caller gets an error), or hold it for a while (past a
// lease, often). It records each request at the store, as the history's
// claim, complete, release and quarantine events, and as a linearize.Op.
type shim struct{ p *proc }

var _ driver.Store = (*shim)(nil)

// do sends one request: apply applies it to the store (under the context
// it is given) and records it; lost records a request that never arrived.
// It returns the error the caller sees instead of apply's answer, if any.
// A held request still arrives when its caller has given up on it (its
// context ended): the store applies it late, as a real one would, and the
// caller never learns its answer.
func (s *shim) do(ctx context.Context, op string, apply func(context.Context) error, lost func()) error {
	p, w := s.p, s.p.w
	d := deliveryOf(ctx)
	p.mu.Lock()
	var key string
	if op == "Extend" { // sent by the keep-alive's goroutine, beside the call's
		p.exts[d]++
		key = fmt.Sprintf("store/%s/x%02d", d, p.exts[d])
	} else {
		p.reqs[d]++
		key = fmt.Sprintf("store/%s/%02d", d, p.reqs[d])
	}
	p.mu.Unlock()
	var err error
	var hold time.Duration
	fault := func(f history.Fault, dur time.Duration) {
		w.record(history.Event{Proc: "harness", Ev: history.KindFault, Fault: f, Target: p.name, Op: op, Dur: int64(dur)})
		w.note("%s %s of %s", f, op, d)
	}
	unknown := func(f func()) {
		n := len(w.lin)
		f()
		if len(w.lin) > n {
			w.lin[n].Output = linearize.Output{Result: linearize.Unknown}
		}
	}
	if !w.step(p, key, func() {
		switch t := w.tape; {
		case t.Chance(4):
			fault(history.FaultDropRequest, 0)
			lost()
			err = errNet
		case t.Chance(4):
			unknown(func() { apply(ctx) })
			fault(history.FaultDropResponse, 0)
			err = errNet
		case t.Chance(map[bool]int{true: 15, false: 5}[op == "Complete" || op == "Release"]):
			hold = time.Duration(t.Range(1000, 15000)) * time.Millisecond
			fault(history.FaultDelay, hold)
		default:
			err = apply(ctx)
		}
	}) {
		return errDead
	}
	if hold == 0 {
		return err
	}
	arrive := make(chan error, 1)
	w.held.Add(1)
	w.spawn(func() {
		defer w.held.Add(-1)
		time.Sleep(hold)
		var e error
		if !w.inflight(p, key+"/arrive", func() {
			select {
			case <-ctx.Done():
				unknown(func() { apply(context.WithoutCancel(ctx)) })
				e = ctx.Err()
			default:
				e = apply(ctx)
			}
		}) {
			e = errNet
		}
		arrive <- e
	})
	select {
	case err = <-arrive:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *shim) claimEvent(ctx context.Context, rec driver.Record, now time.Time) history.Event {
	w, d := s.p.w, deliveryOf(ctx)
	e := history.Event{Proc: s.p.name, Ev: history.KindClaim, D: d, Reader: reader(s.p.strict), Owner: w.owner(rec.Owner),
		Lease: ms(rec.LeaseEnd()), Exp: ms(rec.ExpiresAt), Clock: now.UnixNano()}
	if m := w.dmsg[d]; m != nil {
		e.Key, e.Payload = w.hkey(m), m.payload
		if !w.cfg.Payload {
			e.Payload = ""
		}
		w.ids[e.Key] = rec.ID
	}
	return e
}

func (s *shim) fenceEvent(ctx context.Context, kind history.Kind, owner string) history.Event {
	w, d := s.p.w, deliveryOf(ctx)
	e := history.Event{Proc: s.p.name, Ev: kind, D: d, Owner: w.owner(owner), Clock: s.p.now().UnixNano()}
	if m := w.dmsg[d]; m != nil {
		e.Key = w.hkey(m)
	}
	return e
}

func (s *shim) lin(in linearize.Input, out linearize.Output) {
	w := s.p.w
	n := int64(len(w.lin))
	w.lin = append(w.lin, linearize.Op{Client: s.p.client, Call: 2 * n, Return: 2*n + 1, Input: in, Output: out})
}

// Acquire implements driver.Store.
func (s *shim) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	var actual driver.Record
	var loaded bool
	in := linearize.Input{ID: rec.ID, Kind: linearize.Claim, Now: ns(now), NoTakeover: mode == driver.NoTakeover, Rec: linRec(rec)}
	err := s.do(ctx, "Acquire", func(ctx context.Context) error {
		a, l, err := s.p.w.store.Acquire(ctx, rec, now, mode)
		e := s.claimEvent(ctx, rec, now)
		out := linearize.Output{Result: linearize.OK, Rec: linRec(a)}
		switch {
		case err != nil:
			e.Resp, e.Err = history.RespError, "store error"
		case !l && a.ID == "":
			e.Resp = history.RespClaimed
		case !l:
			e.Resp, e.Prev, e.Expired = history.RespTakenOver, s.p.w.owner(a.Owner), !a.ExpiresAt.After(now)
		default:
			out.Result = linearize.Refused
			e.Prev = s.p.w.owner(a.Owner)
			switch {
			case !a.Quarantined.IsZero():
				e.Resp = history.RespQuarantined
			case a.Validation != rec.Validation:
				e.Resp = history.RespMismatch
			case a.Status == driver.StatusCompleted:
				e.Resp, e.Result, e.Sealed = history.RespReplayed, s.p.w.resultOf(a.ID, a.Data), driver.IsSealed(a.Data)
			default:
				e.Resp = history.RespInProgress
			}
		}
		s.p.w.record(e)
		if err == nil {
			s.lin(in, out)
		}
		actual, loaded = a, l
		return err
	}, func() {
		e := s.claimEvent(ctx, rec, now)
		e.Resp, e.Err = history.RespError, "request lost"
		s.p.w.record(e)
	})
	if err != nil {
		return driver.Record{}, false, err
	}
	return actual, loaded, nil
}

// Complete implements driver.Store.
func (s *shim) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	var stored []byte
	in := linearize.Input{ID: rec.ID, Kind: linearize.Complete, Now: ns(s.p.now()), Rec: linRec(rec)}
	err := s.do(ctx, "Complete", func(ctx context.Context) error {
		b, err := s.p.w.store.Complete(ctx, rec)
		e := s.fenceEvent(ctx, history.KindComplete, rec.Owner)
		switch {
		case err == nil:
			e.Resp, e.Result = history.RespOK, s.p.w.resultOf(rec.ID, b)
			s.lin(in, linearize.Output{Result: linearize.OK, Rec: linearize.Record{Data: string(b)}})
		case errors.Is(err, driver.ErrLeaseLost):
			e.Resp = history.RespLeaseLost
			s.lin(in, linearize.Output{Result: linearize.Refused})
		default:
			e.Resp, e.Err = history.RespError, "store error"
		}
		s.p.w.record(e)
		stored = b
		return err
	}, func() {
		e := s.fenceEvent(ctx, history.KindComplete, rec.Owner)
		e.Resp, e.Err = history.RespError, "request lost"
		s.p.w.record(e)
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// Release implements driver.Store.
func (s *shim) Release(ctx context.Context, id, owner string) error {
	in := linearize.Input{ID: id, Kind: linearize.Release, Now: ns(s.p.now()), Rec: linearize.Record{Owner: owner}}
	err := s.do(ctx, "Release", func(ctx context.Context) error {
		err := s.p.w.store.Release(ctx, id, owner)
		e := s.fenceEvent(ctx, history.KindRelease, owner)
		switch {
		case err == nil:
			e.Resp = history.RespOK
			s.lin(in, linearize.Output{Result: linearize.OK})
		case errors.Is(err, driver.ErrLeaseLost):
			e.Resp = history.RespLeaseLost
			s.lin(in, linearize.Output{Result: linearize.Refused})
		default:
			e.Resp, e.Err = history.RespError, "store error"
		}
		s.p.w.record(e)
		return err
	}, func() {
		e := s.fenceEvent(ctx, history.KindRelease, owner)
		e.Resp, e.Err = history.RespError, "request lost"
		s.p.w.record(e)
	})
	return err
}

// Quarantine implements driver.Store.
func (s *shim) Quarantine(ctx context.Context, found driver.Record, now time.Time) (driver.Record, error) {
	var got driver.Record
	in := linearize.Input{ID: found.ID, Kind: linearize.Quarantine, Now: ns(now), Rec: linRec(found)}
	rec := func(resp history.Resp) {
		e := s.fenceEvent(ctx, history.KindQuarantine, found.Owner)
		e.Resp, e.Exp, e.Lease, e.Clock = resp, ms(found.ExpiresAt), ms(found.LeaseEnd()), now.UnixNano()
		if resp == history.RespError {
			e.Err = "store error"
		}
		s.p.w.record(e)
	}
	err := s.do(ctx, "Quarantine", func(ctx context.Context) error {
		r, err := s.p.w.store.Quarantine(ctx, found, now)
		switch {
		case err == nil:
			rec(history.RespOK)
			s.lin(in, linearize.Output{Result: linearize.OK, Rec: linRec(r)})
		case errors.Is(err, driver.ErrLeaseLost):
			e := s.fenceEvent(ctx, history.KindQuarantine, found.Owner)
			e.Resp, e.Exp, e.Lease, e.Clock = history.RespLeaseLost, ms(found.ExpiresAt), ms(found.LeaseEnd()), now.UnixNano()
			if r.Status == driver.StatusCompleted {
				e.Status, e.Result, e.Sealed = history.StatusCompleted, s.p.w.resultOf(found.ID, r.Data), driver.IsSealed(r.Data)
			}
			s.p.w.record(e)
			s.lin(in, linearize.Output{Result: linearize.Refused, Rec: linRec(r)})
		default:
			rec(history.RespError)
		}
		got = r
		return err
	}, func() { rec(history.RespError) })
	if errors.Is(err, errNet) {
		return driver.Record{}, err
	}
	return got, err
}

func linRec(r driver.Record) linearize.Record {
	if r.ID == "" {
		return linearize.Record{}
	}
	st := linearize.InProgress
	if r.Status == driver.StatusCompleted {
		st = linearize.Completed
	}
	return linearize.Record{Status: st, Owner: r.Owner, Expires: ns(r.ExpiresAt), Lease: ns(r.LeaseUntil),
		StrictLease: ns(r.StrictLease), Quarantined: ns(r.Quarantined), Validation: r.Validation, Data: string(r.Data)}
}

// extShim is a shim whose store extends leases (driver.Extender), for
// runs with keep-alive on.
type extShim struct{ shim }

var _ driver.Extender = (*extShim)(nil)

// Extend implements driver.Extender.
func (s *extShim) Extend(ctx context.Context, rec driver.Record, now time.Time) error {
	lease := rec.LeaseUntil
	if rec.Strict() {
		lease = rec.StrictLease
	}
	in := linearize.Input{ID: rec.ID, Kind: linearize.Extend, Now: ns(now), Rec: linearize.Record{Owner: rec.Owner, Lease: ns(lease)}}
	ev := func(resp history.Resp) {
		e := s.fenceEvent(ctx, history.KindExtend, rec.Owner)
		e.Resp, e.Lease, e.Clock = resp, ms(lease), now.UnixNano()
		if resp == history.RespError {
			e.Err = "store error"
		}
		s.p.w.record(e)
	}
	return s.do(ctx, "Extend", func(ctx context.Context) error {
		err := s.p.w.store.Extend(ctx, rec, now)
		switch {
		case err == nil:
			ev(history.RespOK)
			s.lin(in, linearize.Output{Result: linearize.OK})
		case errors.Is(err, driver.ErrLeaseLost):
			ev(history.RespLeaseLost)
			s.lin(in, linearize.Output{Result: linearize.Refused})
		default:
			ev(history.RespError)
		}
		return err
	}, func() { ev(history.RespError) })
}
