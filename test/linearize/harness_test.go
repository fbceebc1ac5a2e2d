package linearize

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	model "github.com/sqsonce/sqsonce/middleware/idempotency/storetest/linearize"
)

// perRecord is how many operations a record id serves before a fresh id
// takes its place: porcupine's cost grows faster than a record's history.
const perRecord = 300

// think is the longest a client waits between two operations, in the
// clock's milliseconds: the clients together make a few hundred
// operations a second, so that a record lives through several claims,
// completions and expiries.
const think = 40

// endOfTime is the return of an operation the store may apply at any
// time after its call.
const endOfTime = 1<<63 - 1

// opTimeout bounds one operation, its client's retries included.
const opTimeout = 5 * time.Second

// subject is one store under test.
type subject struct {
	name string
	adapter
	offset time.Duration // the clock runs ahead of the machine's by it
	speed  int           // the clock's seconds per second of the machine's (0: 1)
	ticked bool          // the clock moves only between operations (see clock)
	conns  []conn        // one per client
	faults *tally

	// inject runs a fault injector until ctx ends: progress reports the
	// share of the run's operations begun so far.
	inject []func(ctx context.Context, progress func() float64)

	// settles: nothing of an operation lands after it returned (the
	// clients' layers wait for every attempt they sent to be answered),
	// so that a lost answer is recorded as unknown between the call and
	// the return; else the store may apply it at any time after the call.
	settles bool

	// leanReplaced: the record a claim replaced comes without its result
	// (redisstore says so); a COMPLETED one is then "not told".
	leanReplaced bool

	// sweeps: the store deletes an expired record by its own clock (a
	// Redis key's TTL), so an operation may find it gone once that clock
	// passed its expiry, though the operation passed an earlier now: each
	// operation's Swept is the clock at its return (or, for an unknown
	// answer the store may apply later, the end of time).
	sweeps bool

	// bubble: the run is in a testing/synctest bubble (an in-process
	// store), on its fake clock. Every sleep is then whole microseconds and
	// client i starts i+1 nanoseconds late, so that no two clients (nor the
	// clock's ticks) ever wake at the same instant: one client runs at a
	// time, in an order the seed alone decides, and the run's history is
	// the same each time for a seed.
	bubble bool

	// pause is how long a client waits after an operation that got no
	// answer, as a caller would before it tries a server that is down
	// again (a restart takes a second).
	pause time.Duration
}

// conn is one client's way to the store.
type conn struct {
	store   driver.Store
	inspect inspector // nil when the store has no Inspector
	// begin, when set, is called before each operation; sent, when the
	// store call returned and before the operation's return is read,
	// says how many times its write may have reached the store (0: it
	// surely never did; 2 or more: the client sent it again; nil: once),
	// and waits until none of them can land any more: a layer that may
	// still be forwarding an attempt the client gave up on must wait for
	// its answer there, or the history would have the operation return
	// before its write.
	begin func()
	sent  func() int
}

type inspector interface {
	Inspect(ctx context.Context, id string) (driver.StoredRecord, error)
}

// extender is the store's lease extension: a store that has it gets its
// claims extended by the workload (worker.extend).
type extender = driver.Extender

// tally counts events by name, safe for concurrent use.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func newTally() *tally { return &tally{n: map[string]int{}} }

func (t *tally) add(name string) {
	t.mu.Lock()
	t.n[name]++
	t.mu.Unlock()
}

func (t *tally) snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.n)
}

// String lists the counts by name, "none" when there are none.
func (t *tally) String() string { return list(t.snapshot()) }

func list(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// config is a run's size.
type config struct {
	seed    uint64
	ops     int
	records int
	timeout time.Duration
	out     string // where visualizations go
}

// defaults is the run the flags ask for; the seed, when 0, is new.
func defaults() config {
	seed := *flagSeed
	if seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])>>1 | 1
	}
	out := *flagOut
	if out == "" {
		out = os.TempDir()
	}
	return config{seed: seed, ops: *flagOps, records: *flagRecords, timeout: *flagTimeout, out: out}
}

// run is one workload on one subject.
type run struct {
	t     *testing.T
	s     subject
	cfg   config
	clock *clock
	start time.Time // the history's clock: nanoseconds since start

	issued  atomic.Int64   // operations begun
	slotOps []atomic.Int64 // operations per record slot
}

// stats counts what the clients recorded.
type stats struct {
	ops     map[string]int // by kind and answer
	resent  int            // answered after the client sent it again: an earlier attempt added, unknown
	unknown int            // answer lost
	leftOut int            // never reached the store, or a read that got no answer
}

func (s *stats) add(o stats) {
	if s.ops == nil {
		s.ops = map[string]int{}
	}
	for k, v := range o.ops {
		s.ops[k] += v
	}
	s.resent += o.resent
	s.unknown += o.unknown
	s.leftOut += o.leftOut
}

// exercise runs the workload on s with cfg and checks its history; it
// returns porcupine's verdict, and fails t unless want is it.
func exercise(t *testing.T, s subject, cfg config, want porcupine.CheckResult) {
	t.Helper()
	r := &run{t: t, s: s, cfg: cfg, clock: newClock(s.unit, s.offset, s.speed, s.ticked), start: time.Now(),
		slotOps: make([]atomic.Int64, cfg.records)}
	if s.bubble {
		r.clock.quantum = time.Microsecond
	}
	r.s.epoch = r.clock.read().Truncate(time.Second).Add(-time.Second)
	t.Logf("%s: seed %d (replay: go test ./test/linearize -run '^%s$' -linearize.seed %d -linearize.ops %d)",
		s.name, cfg.seed, t.Name(), cfg.seed, cfg.ops)

	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Go(func() { r.clock.tick(ctx) })
	progress := func() float64 { return float64(r.issued.Load()) / float64(cfg.ops) }
	for _, inject := range s.inject {
		bg.Go(func() { inject(ctx, progress) })
	}
	workers := make([]*worker, len(s.conns))
	began := time.Now()
	var wg sync.WaitGroup
	for i, c := range s.conns {
		w := &worker{r: r, c: i, conn: c, rng: mrand.New(mrand.NewPCG(cfg.seed, uint64(i)))}
		w.st.ops = map[string]int{}
		workers[i] = w
		wg.Go(w.loop)
	}
	wg.Wait()
	took := time.Since(began)
	cancel()
	bg.Wait()

	var ops []model.Op
	var st stats
	for _, w := range workers {
		ops = append(ops, w.ops...)
		st.add(w.st)
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	t.Logf("%s: %d clients, %d records at a time (%d operations per record id): %d operations in %v",
		s.name, len(s.conns), cfg.records, perRecord, cfg.ops, took.Round(time.Millisecond))
	t.Logf("%s: answers: %s", s.name, list(st.ops))
	t.Logf("%s: faults: %s", s.name, s.faults)
	t.Logf("%s: lost answers %d (recorded unknown), sent again and answered %d (an earlier attempt added, unknown), left out %d (never reached the store, or a read unanswered)",
		s.name, st.unknown, st.resent, st.leftOut)

	got := r.check(ops)
	faults, injected := s.faults.snapshot(), 0
	for _, n := range faults {
		injected += n
	}
	t.Logf("linearize: %s: %d operations checked, %d clients, %d faults injected (%s), verdict %s (want %s)",
		s.name, len(ops), len(s.conns), injected, list(faults), got, want)
	if got != want {
		t.Errorf("%s: porcupine: %s, want %s", s.name, got, want)
	}
	if injected == 0 {
		t.Errorf("%s: no fault injected: the run checked the store without faults", s.name)
	}
}

// check runs porcupine on ops, reports it, and returns its verdict.
func (r *run) check(ops []model.Op) porcupine.CheckResult {
	t, grain := r.t, r.s.grain()
	parts := partition(ops)
	began := time.Now()
	res := porcupine.CheckOperationsTimeout(model.Model(grain), operations(ops), r.cfg.timeout)
	took := time.Since(began)
	longest := 0
	for _, p := range parts {
		longest = max(longest, len(p))
	}
	t.Logf("%s: porcupine: %d operations checked in %d partitions (the longest %d): %s in %v",
		r.s.name, len(ops), len(parts), longest, res, took.Round(time.Microsecond))
	switch res {
	case porcupine.Unknown:
		t.Logf("%s: porcupine gave no verdict within %v", r.s.name, r.cfg.timeout)
	case porcupine.Illegal:
		for _, p := range parts {
			if porcupine.CheckOperationsTimeout(model.Model(grain), operations(p), r.cfg.timeout) == porcupine.Illegal {
				r.explain(p)
				break
			}
		}
	}
	return res
}

// operations returns ops as porcupine's: an unknown answer returns when
// the operation did, or, when the store may still apply it, at the end of
// time (done sets Return so).
func operations(ops []model.Op) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		out[i] = porcupine.Operation{ClientId: op.Client, Input: op.Input, Call: op.Call, Output: op.Output, Return: op.Return}
	}
	return out
}

// partition splits ops by record id, in the order ids first appear.
func partition(ops []model.Op) [][]model.Op {
	index := map[string]int{}
	var parts [][]model.Op
	for _, op := range ops {
		i, ok := index[op.Input.ID]
		if !ok {
			i = len(parts)
			index[op.Input.ID] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// explain prints why the history of one record, part, is not
// linearizable, and writes porcupine's visualization of it.
func (r *run) explain(part []model.Op) {
	t, grain := r.t, r.s.grain()
	m := model.Model(grain)
	hist := operations(part)
	_, info := porcupine.CheckOperationsVerbose(m, hist, r.cfg.timeout)
	if f, err := os.CreateTemp(r.cfg.out, "linearize-"+r.s.name+"-*.html"); err != nil {
		t.Logf("visualization: %v", err)
	} else {
		err := porcupine.Visualize(m, info, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Logf("visualization: %v", err)
		} else {
			t.Logf("%s: porcupine's visualization: %s", r.s.name, f.Name())
		}
	}

	var best []int
	for _, lin := range info.PartialLinearizations()[0] {
		if len(lin) > len(best) {
			best = lin
		}
	}
	state := m.Init()
	for _, id := range best {
		_, state = m.Step(state, hist[id].Input, hist[id].Output)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "record %s is not linearizable: %d operations, the longest order the model accepts has %d", part[0].Input.ID, len(part), len(best))
	from := max(0, len(best)-8)
	if from > 0 {
		fmt.Fprintf(&b, "\n  ... %d before", from)
	}
	for _, id := range best[from:] {
		fmt.Fprintf(&b, "\n  %s", r.describe(m, hist[id]))
	}
	fmt.Fprintf(&b, "\nthen the record is %s, and none of these can come next:", m.DescribeState(state))
	done := map[int]bool{}
	for _, id := range best {
		done[id] = true
	}
	first := int64(endOfTime)
	for id, op := range hist {
		if !done[id] {
			first = min(first, op.Return)
		}
	}
	shown := 0
	for id, op := range hist {
		if !done[id] && op.Call <= first && shown < 12 {
			fmt.Fprintf(&b, "\n  %s", r.describe(m, op))
			shown++
		}
	}
	t.Log(b.String())
}

// describe is one operation of the history: its client, when it ran (ms
// since the run began) and what the model makes of it.
func (r *run) describe(m porcupine.Model, op porcupine.Operation) string {
	ret := "…"
	if op.Return != endOfTime {
		ret = fmt.Sprintf("%.3f", float64(op.Return)/1e6)
	}
	what := m.DescribeOperation(op.Input, op.Output)
	if in, out := op.Input.(model.Input), op.Output.(model.Output); in.Kind == model.Complete && out.Result == model.OK {
		// The model would print the stored result as a record.
		what = m.DescribeOperation(in, model.Output{Result: model.OK}) + fmt.Sprintf(", stored %q", out.Rec.Data)
	}
	return fmt.Sprintf("c%d [%.3f, %s ms] %s", op.ClientId, float64(op.Call)/1e6, ret, what)
}

// mono is the history's clock.
func (r *run) mono() int64 { return time.Since(r.start).Nanoseconds() }

// pick chooses a record for an operation: one of the slots, under the id
// its current generation has.
func (r *run) pick(rng *mrand.Rand) string {
	slot := rng.IntN(len(r.slotOps))
	n := r.slotOps[slot].Add(1)
	return fmt.Sprintf("k%d.%d", slot, (n-1)/perRecord)
}

// worker is one client.
type worker struct {
	r     *run
	c     int
	conn  conn
	rng   *mrand.Rand
	seq   int                  // claims made, for owner tokens
	sent  int                  // the last operation's writes that may have reached the store (conn.sent)
	ended int64                // the model's time at the last operation's return
	asked map[string]time.Time // by owner: the latest lease end an extension asked for
	held  []driver.Record      // this client's claims, as written, not yet completed or released
	ops   []model.Op
	st    stats
}

func (w *worker) loop() {
	if w.r.s.bubble {
		time.Sleep(time.Duration(w.c + 1)) // a phase of its own (see subject.bubble)
	}
	for w.r.issued.Add(1) <= int64(w.r.cfg.ops) {
		w.step()
	}
}

// step makes one operation: on a claim of its own, a completion or a
// release (sometimes of an older claim, likely taken over by now); else a
// read or a claim of a record.
func (w *worker) step() {
	w.r.clock.sleep(w.ms(0, think))
	x := w.rng.Float64()
	switch {
	case len(w.held) > 0 && x < 0.45:
		i := len(w.held) - 1
		if w.rng.Float64() < 0.25 {
			i = w.rng.IntN(len(w.held))
		}
		h := w.held[i]
		w.held = slices.Delete(w.held, i, i+1)
		if w.rng.Float64() < 0.65 {
			w.complete(h)
		} else {
			w.release(h)
		}
	case len(w.held) > 0 && x < 0.55 && w.extender() != nil:
		w.extend()
	case w.conn.inspect != nil && w.rng.Float64() < 0.15:
		w.read(w.r.pick(w.rng))
	default:
		w.claim(w.r.pick(w.rng))
	}
}

func (w *worker) ms(lo, hi int) time.Duration {
	return time.Duration(lo+w.rng.IntN(hi-lo+1)) * time.Millisecond
}

// begin starts an operation: its call in the history's clock, and now.
func (w *worker) begin() (int64, time.Time) {
	if w.conn.begin != nil {
		w.conn.begin()
	}
	call := w.r.mono()
	return call, w.r.clock.enter()
}

// end ends one: its return in the history's clock, and now.
func (w *worker) end() (int64, time.Time) {
	w.sent = 1
	if w.conn.sent != nil {
		w.sent = w.conn.sent()
	}
	now := w.r.clock.exit()
	w.ended = w.r.s.time(now)
	return w.r.mono(), now
}

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// claim claims id with a new owner token: a default claim (taking a
// lapsed lease over) or a strict one, a short lease (sometimes a long
// one), an expiry a few seconds later. A claim refused by a lapsed claim
// quarantines it, as a strict claim does.
func (w *worker) claim(id string) {
	strict := w.rng.Float64() < 0.35
	lease := w.ms(10, 100)
	if w.rng.Float64() < 0.1 {
		lease = w.ms(300, 1000)
	}
	// The record outlives the lease by more than the store's grain, as a
	// guard's does by hours: an expiry kept in seconds is not before the
	// lease's end.
	life := lease + w.ms(100, 1200)
	if w.r.s.seconds {
		life += time.Second
	}
	validation := fmt.Sprintf("v%d", w.rng.IntN(2))
	w.seq++
	owner := fmt.Sprintf("c%d.%d", w.c, w.seq)
	mode := driver.Takeover
	if strict {
		mode = driver.NoTakeover
	}

	call, now := w.begin()
	rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(life), LeaseUntil: now.Add(lease),
		Validation: validation, Owner: owner}
	if strict {
		rec.StrictLease, rec.LeaseUntil = rec.LeaseUntil, rec.ExpiresAt
	}
	ctx, cancel := opContext()
	actual, loaded, err := w.conn.store.Acquire(ctx, rec, now, mode)
	cancel()
	ret, _ := w.end()

	in := model.Input{ID: id, Kind: model.Claim, Now: w.r.s.time(now), NoTakeover: strict, Rec: w.r.s.record(rec)}
	switch {
	case err != nil:
		w.done(in, call, ret, model.Output{}, err)
	case !loaded:
		w.done(in, call, ret, model.Output{Result: model.OK, Rec: w.replaced(actual)}, nil)
		w.held = append(w.held, rec)
		if len(w.held) > 3 {
			w.held = w.held[1:] // abandoned: its lease lapses
		}
		if w.rng.Float64() < 0.5 {
			w.r.clock.sleep(time.Duration(w.rng.Int64N(int64(lease) * 3 / 2))) // the work, sometimes past the lease
		}
	default:
		w.done(in, call, ret, model.Output{Result: model.Refused, Rec: w.r.s.record(actual)}, nil)
		lapsed := actual.Status == driver.StatusInProgress && actual.Quarantined.IsZero() && actual.LeaseEnd().Before(now)
		if (lapsed && w.rng.Float64() < 0.8) || (actual.Status == driver.StatusInProgress && w.rng.Float64() < 0.05) {
			w.quarantine(actual)
		}
		w.backOff(actual, now)
	}
}

// backOff waits, most times, until about when rec, the record that
// refused a claim at now, may let one through (its lease's end, or its
// expiry), as a redelivery paced to the holder's lease would: claims
// gather where the record changes hands.
func (w *worker) backOff(rec driver.Record, now time.Time) {
	if w.rng.Float64() < 0.3 {
		return
	}
	at := rec.ExpiresAt // kept in seconds, it counts until the next one
	if w.r.s.seconds {
		at = at.Add(time.Second)
	}
	if rec.Status == driver.StatusInProgress && rec.Quarantined.IsZero() && rec.LeaseEnd().Before(at) {
		at = rec.LeaseEnd()
	}
	d := at.Sub(now) + w.ms(0, 20) - 5*time.Millisecond
	w.r.clock.sleep(min(max(d, 0), 400*time.Millisecond))
}

// replaced is the record a claim reports it replaced, as the model reads
// it.
func (w *worker) replaced(r driver.Record) model.Record {
	if w.r.s.leanReplaced && r.Status == driver.StatusCompleted && r.Data == nil {
		return model.Record{} // not told
	}
	return w.r.s.record(r)
}

// quarantine quarantines found, the record a claim found.
func (w *worker) quarantine(found driver.Record) {
	call, now := w.begin()
	ctx, cancel := opContext()
	got, err := w.conn.store.Quarantine(ctx, found, now)
	cancel()
	ret, _ := w.end()
	in := model.Input{ID: found.ID, Kind: model.Quarantine, Now: w.r.s.time(now), Rec: w.r.s.record(found)}
	switch {
	case err == nil:
		w.done(in, call, ret, model.Output{Result: model.OK, Rec: w.r.s.record(got)}, nil)
	case errors.Is(err, driver.ErrLeaseLost):
		w.done(in, call, ret, model.Output{Result: model.Refused, Rec: w.r.s.record(got)}, nil)
	default:
		w.done(in, call, ret, model.Output{}, err)
	}
}

// complete completes h, a claim of this client's, with a result of its
// own and a new expiry.
func (w *worker) complete(h driver.Record) {
	data := fmt.Sprintf("%q", h.Owner+"/r")
	call, now := w.begin()
	done := driver.Record{ID: h.ID, Status: driver.StatusCompleted, ExpiresAt: now.Add(w.ms(50, 1000)),
		Data: []byte(data), Validation: h.Validation, Owner: h.Owner}
	ctx, cancel := opContext()
	stored, err := w.conn.store.Complete(ctx, done)
	cancel()
	ret, now := w.end()
	in := model.Input{ID: h.ID, Kind: model.Complete, Now: w.r.s.time(now),
		Rec: model.Record{Owner: h.Owner, Data: data, Expires: w.r.s.expiry(done.ExpiresAt)}}
	switch {
	case err == nil:
		w.done(in, call, ret, model.Output{Result: model.OK, Rec: model.Record{Data: string(stored)}}, nil)
	case errors.Is(err, driver.ErrLeaseLost):
		w.done(in, call, ret, model.Output{Result: model.Refused}, nil)
	default:
		w.done(in, call, ret, model.Output{}, err)
	}
}

// release releases h, a claim of this client's.
func (w *worker) release(h driver.Record) {
	call, _ := w.begin()
	ctx, cancel := opContext()
	err := w.conn.store.Release(ctx, h.ID, h.Owner)
	cancel()
	ret, now := w.end()
	in := model.Input{ID: h.ID, Kind: model.Release, Now: w.r.s.time(now), Rec: model.Record{Owner: h.Owner}}
	switch {
	case err == nil:
		w.done(in, call, ret, model.Output{Result: model.OK}, nil)
	case errors.Is(err, driver.ErrLeaseLost):
		w.done(in, call, ret, model.Output{Result: model.Refused}, nil)
	default:
		w.done(in, call, ret, model.Output{}, err)
	}
}

// extender returns the store's lease extension, nil when it has none.
func (w *worker) extender() extender {
	e, _ := w.conn.store.(extender)
	return e
}

// extend moves the lease of the client's latest claim a little later,
// while it is live by the now it passes, and never earlier than any end
// it asked for before: the model refuses an extension of a lapsed lease
// and never moves a lease earlier, while issue 28's draft extends a
// lapsed lease not taken over and sets the lease as given, so the
// workload asks only what both readings agree on. Live means by the
// lease last confirmed (an extension that got no answer may not have been
// applied); never earlier, than any asked for (it may have been).
func (w *worker) extend() {
	h := &w.held[len(w.held)-1]
	call, now := w.begin()
	if !h.LeaseEnd().After(now) {
		w.end() // nothing sent
		return
	}
	until := now.Add(w.ms(10, 100))
	if asked := w.asked[h.Owner]; until.Before(asked) {
		until = asked
	}
	if until.Before(h.LeaseEnd()) {
		until = h.LeaseEnd()
	}
	rec := *h
	if rec.Strict() {
		rec.StrictLease = until
	} else {
		rec.LeaseUntil = until
	}
	ctx, cancel := opContext()
	err := w.extender().Extend(ctx, rec, now)
	cancel()
	ret, _ := w.end()
	if w.asked == nil {
		w.asked = map[string]time.Time{}
	}
	w.asked[h.Owner] = until
	if err == nil {
		*h = rec
	}
	in := model.Input{ID: h.ID, Kind: model.Extend, Now: w.r.s.time(now), Rec: model.Record{Owner: h.Owner, Lease: w.r.s.time(until)}}
	switch {
	case err == nil:
		w.done(in, call, ret, model.Output{Result: model.OK}, nil)
	case errors.Is(err, driver.ErrLeaseLost):
		w.done(in, call, ret, model.Output{Result: model.Refused}, nil)
	default:
		w.done(in, call, ret, model.Output{}, err)
	}
}

// read reads id with the store's Inspector.
func (w *worker) read(id string) {
	call, _ := w.begin()
	ctx, cancel := opContext()
	got, err := w.conn.inspect.Inspect(ctx, id)
	cancel()
	ret, now := w.end() // a read changes nothing: how often it was sent does not matter
	in := model.Input{ID: id, Kind: model.Read, Now: w.r.s.time(now)}
	if w.r.s.sweeps {
		in.Swept = w.ended
	}
	var out model.Output
	switch {
	case err == nil:
		out = model.Output{Result: model.OK, Rec: w.r.s.record(got.Record)}
	case errors.Is(err, driver.ErrNotFound):
		out = model.Output{Result: model.NotFound}
	default:
		w.r.clock.sleep(w.r.s.pause)
		w.st.ops["read: no answer"]++
		w.st.leftOut++
		return
	}
	w.st.ops["read: "+out.Result.String()]++
	w.ops = append(w.ops, model.Op{Client: w.c, Call: call, Return: ret, Input: in, Output: out})
}

// done records an operation that changed the store or may have: with its
// answer out, or, when err says the answer was lost, as unknown, or not
// at all when it never reached the store.
func (w *worker) done(in model.Input, call, ret int64, out model.Output, err error) {
	sent := w.sent
	if w.r.s.sweeps {
		in.Swept = w.ended
		if err != nil && !w.r.s.settles {
			in.Swept = endOfTime
		}
	}
	op := model.Op{Client: w.c, Call: call, Return: ret, Input: in, Output: out}
	if err != nil {
		w.r.clock.sleep(w.r.s.pause)
	}
	switch {
	case err != nil && sent == 0:
		w.st.ops[in.Kind.String()+": never sent"]++
		w.st.leftOut++
	case err != nil:
		op.Output = model.Output{Result: model.Unknown}
		if !w.r.s.settles {
			op.Return = endOfTime
		}
		w.st.ops[in.Kind.String()+": unknown"]++
		w.st.unknown++
		w.ops = append(w.ops, op)
	case sent > 1:
		// The earlier attempts were made, and landed if at all, before
		// this one was answered: every client here sends again only
		// after an attempt failed (the DynamoDB proxy forwards a
		// client's requests one at a time, go-redis waits at least 8 ms
		// before it sends again on a new connection, pgx never does).
		// Each is an operation of unknown answer.
		w.st.ops[in.Kind.String()+": "+out.Result.String()]++
		w.st.resent++
		for range sent - 2 {
			w.ops = append(w.ops, model.Resent(op)[0])
		}
		w.ops = append(w.ops, model.Resent(op)...)
	default:
		w.st.ops[in.Kind.String()+": "+out.Result.String()]++
		w.ops = append(w.ops, op)
	}
}
