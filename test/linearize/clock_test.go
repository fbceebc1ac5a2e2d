package linearize

import (
	"context"
	"sync"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	model "github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize"
)

// clock is the time the clients pass to the store and the model judges
// operations at: the machine's, read through the monotonic clock so that
// it never goes back, truncated to the store's precision, and ahead of the
// machine's by offset.
//
// A clock may run faster than the machine's, by speed: an in-process
// store makes in a millisecond what a server makes in ten.
//
// A ticked clock moves only between operations: an operation holds the
// time from its start to its return, and the clock advances (every
// millisecond) when none is running. Every operation then runs at one
// time, which a store that sweeps expired records by a claim's now
// (memstore) needs: a claim on one record at t deletes another record
// expired by t, so an operation on that record running at the same moment
// must be judged at t too, not at an earlier time it read.
type clock struct {
	unit   time.Duration
	offset time.Duration
	speed  int       // clock seconds per second of the machine's
	base   time.Time // with its monotonic reading

	ticked bool
	// quantum, when set, is the grain of every sleep (see subject.bubble).
	quantum time.Duration
	mu      sync.RWMutex
	cur     time.Time
}

func newClock(unit, offset time.Duration, speed int, ticked bool) *clock {
	c := &clock{unit: unit, offset: offset, speed: max(speed, 1), base: time.Now(), ticked: ticked}
	c.cur = c.read()
	return c
}

// read is the machine's time, as the clock gives it.
func (c *clock) read() time.Time {
	return c.base.Add(time.Since(c.base)*time.Duration(c.speed) + c.offset).Round(0).Truncate(c.unit)
}

// sleep waits d of the clock's time.
func (c *clock) sleep(d time.Duration) {
	d /= time.Duration(c.speed)
	if c.quantum > 0 {
		d = d.Truncate(c.quantum)
	}
	time.Sleep(d)
}

// tick advances a ticked clock every millisecond until ctx ends.
func (c *clock) tick(ctx context.Context) {
	if !c.ticked {
		return
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.mu.Lock()
			c.cur = c.read()
			c.mu.Unlock()
		}
	}
}

// enter returns the time at an operation's start; a ticked clock holds it
// until exit.
func (c *clock) enter() time.Time {
	if !c.ticked {
		return c.read()
	}
	c.mu.RLock()
	return c.cur
}

// exit returns the time at an operation's return, and lets a ticked clock
// move on.
func (c *clock) exit() time.Time {
	if !c.ticked {
		return c.read()
	}
	now := c.cur
	c.mu.RUnlock()
	return now
}

// adapter turns the store's records and times into the model's: times in
// the clock's unit, an expiry kept in epoch seconds in whole seconds.
//
// Times count from epoch, a whole second before the run, so that the
// model's descriptions are short; the zero time stays 0 (none).
type adapter struct {
	unit    time.Duration
	seconds bool // the store keeps ExpiresAt in epoch seconds
	epoch   time.Time
}

func (a adapter) time(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	if a.unit == time.Millisecond {
		return t.UnixMilli() - a.epoch.UnixMilli()
	}
	return t.UnixMicro() - a.epoch.UnixMicro()
}

func (a adapter) expiry(t time.Time) int64 {
	if t.IsZero() || !a.seconds {
		return a.time(t)
	}
	return (t.Unix() - a.epoch.Unix()) * int64(time.Second/a.unit)
}

// grain is the model's expiry grain: a second for an expiry kept in
// seconds, else exact.
func (a adapter) grain() int64 {
	if a.seconds {
		return int64(time.Second / a.unit)
	}
	return 0
}

// record is r as the model has it; the zero Record (absent) for a record
// of no status.
func (a adapter) record(r driver.Record) model.Record {
	var st model.Status
	switch r.Status {
	case driver.StatusInProgress:
		st = model.InProgress
	case driver.StatusCompleted:
		st = model.Completed
	case "":
		return model.Record{}
	default:
		st = model.Status(99) // a status the model does not know: no state matches it
	}
	return model.Record{
		Status:      st,
		Owner:       r.Owner,
		Expires:     a.expiry(r.ExpiresAt),
		Lease:       a.time(r.LeaseUntil),
		StrictLease: a.time(r.StrictLease),
		Quarantined: a.time(r.Quarantined),
		Validation:  r.Validation,
		Data:        string(r.Data),
	}
}
