package linearize

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// errLost is a request or an answer the flaky layer lost.
var errLost = errors.New("linearize: injected: the request or its answer was lost")

// flaky is one client's way to an in-process store, as an SDK over a
// network would be: each attempt's request may be lost (not applied) or
// its answer (applied); then it sends the request again, up to three
// attempts in all. It counts the attempts that reached the store.
type flaky struct {
	next interface {
		driver.Store
		inspector
	}
	rng    *rand.Rand
	faults *tally
	sent   int // attempts applied since the operation began
}

const (
	lostRequest = 0.03
	lostAnswer  = 0.05
	attempts    = 3
)

// do calls apply up to three times, as the faults it draws let it.
func (f *flaky) do(apply func()) error {
	for range attempts {
		switch x := f.rng.Float64(); {
		case x < lostRequest:
			f.faults.add("lost_request")
		case x < lostRequest+lostAnswer:
			apply()
			f.sent++
			f.faults.add("lost_answer")
		default:
			apply()
			f.sent++
			return nil
		}
	}
	return errLost
}

func (f *flaky) conn() conn {
	c := conn{store: f, inspect: f, begin: func() { f.sent = 0 }, sent: func() int { return f.sent }}
	if e, ok := f.next.(extender); ok {
		c.store = flakyExtender{f, e}
	}
	return c
}

// flakyExtender is a flaky layer to a store that extends leases.
type flakyExtender struct {
	*flaky
	next extender
}

func (f flakyExtender) Extend(ctx context.Context, rec driver.Record, now time.Time) (err error) {
	if lost := f.do(func() { err = f.next.Extend(ctx, rec, now) }); lost != nil {
		return lost
	}
	return err
}

func (f *flaky) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (actual driver.Record, loaded bool, err error) {
	if lost := f.do(func() { actual, loaded, err = f.next.Acquire(ctx, rec, now, mode) }); lost != nil {
		return driver.Record{}, false, lost
	}
	return actual, loaded, err
}

func (f *flaky) Complete(ctx context.Context, rec driver.Record) (stored []byte, err error) {
	if lost := f.do(func() { stored, err = f.next.Complete(ctx, rec) }); lost != nil {
		return nil, lost
	}
	return stored, err
}

func (f *flaky) Release(ctx context.Context, id, owner string) (err error) {
	if lost := f.do(func() { err = f.next.Release(ctx, id, owner) }); lost != nil {
		return lost
	}
	return err
}

func (f *flaky) Quarantine(ctx context.Context, found driver.Record, now time.Time) (got driver.Record, err error) {
	if lost := f.do(func() { got, err = f.next.Quarantine(ctx, found, now) }); lost != nil {
		return driver.Record{}, lost
	}
	return got, err
}

func (f *flaky) Inspect(ctx context.Context, id string) (got driver.StoredRecord, err error) {
	if lost := f.do(func() { got, err = f.next.Inspect(ctx, id) }); lost != nil {
		return driver.StoredRecord{}, lost
	}
	return got, err
}

// memSubject is memstore (or a store wrapped around one) behind a flaky
// layer per client.
func memSubject(name string, cfg config, next interface {
	driver.Store
	inspector
}) subject {
	s := subject{name: name, adapter: adapter{unit: time.Microsecond}, speed: 10, ticked: true, settles: true, faults: newTally()}
	for i := range *flagClients {
		f := &flaky{next: next, rng: rand.New(rand.NewPCG(cfg.seed, 1<<32|uint64(i))), faults: s.faults}
		s.conns = append(s.conns, f.conn())
	}
	return s
}

// TestMemstore: memstore's record operations, by concurrent clients whose
// requests and answers are lost and sent again, are linearizable.
func TestMemstore(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	exercise(t, memSubject("memstore", cfg, memstore.New()), cfg, porcupine.Ok)
}
