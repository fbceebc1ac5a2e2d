package history

import (
	"fmt"
	"slices"
	"time"
)

// Property is one checked part of the promise.
type Property string

// The properties, in the order a [Verdict] lists them.
const (
	AtMostOnce        Property = "at_most_once"
	StrictOnce        Property = "strict_once"
	OneResult         Property = "one_result"
	AckSawStored      Property = "ack_saw_stored"
	AckCompleted      Property = "ack_completed"
	PayloadValidated  Property = "payload_validated"
	QuarantineHolds   Property = "quarantine_holds"
	FailureNotAcked   Property = "failure_not_acked"
	DoubleRunReported Property = "double_run_reported"
	ExpiryHeld        Property = "expiry_held"
	SealedHeld        Property = "sealed_held"
)

// Properties lists every property with what it requires, in order.
var Properties = []struct {
	Property Property
	Doc      string
}{
	{AtMostOnce, "no second completed run of a key within one record, but for an explained double run"},
	{StrictOnce, "no second start of a key's operation under or after a strict claim, unless the first run was released"},
	{OneResult, "one completion of a record succeeds, and every read of the record shows that run's result"},
	{AckSawStored, "every acknowledged delivery returned its key's stored result"},
	{AckCompleted, "a delivery is acknowledged only when it saw its key's record COMPLETED"},
	{PayloadValidated, "an acknowledged delivery carried the payload whose run's result is stored"},
	{QuarantineHolds, "no run of a quarantined key after the quarantine, until the record is released"},
	{FailureNotAcked, "a call that failed (in progress, quarantined, mismatch, released, error) is never acknowledged"},
	{DoubleRunReported, "a run whose result is not stored is reported so (double_run, or a failed call), and only such a run"},
	{ExpiryHeld, "no claim takes a record as expired while its owner's run still relies on it, unless their clocks disagree by SkewMargin or more"},
	{SealedHeld, "a call without the Sealer that finds a sealed result fails, neither replaying it nor running; one with the Sealer opens it"},
}

// Cause is a documented reason for a run whose result is not the stored
// one: the promise's exceptions (package
// github.com/sqsonce/sqsonce/middleware/idempotency, "The promise").
type Cause string

// The causes that explain a double run of a key under default-mode claims.
// None explains one under a strict claim.
const (
	// CauseKilled: the run's worker was killed after the operation started
	// and before any completion of the run was answered (exception 1: a
	// worker dies).
	CauseKilled Cause = "killed"
	// CauseCompletionFailed: every completion attempt of the run failed
	// with a store error (exception 2: it still fails when the attempts
	// and the deadline run out).
	CauseCompletionFailed Cause = "completion_failed"
	// CauseCompletionRefused: the store refused the completion for good
	// (exception 2: an attached write's condition failed).
	CauseCompletionRefused Cause = "completion_refused"
	// CauseLeaseOutlived: the run's completion found its lease taken over,
	// after the run outlived its invocation's deadline (the delivery's
	// Deadline; without one, the lease it was granted: its lease end less
	// the skew margin, by its own clock); exception 1, a worker outlives
	// its lease. With leases extended (Header.LeaseExtension) only when a
	// fault hit its process during the run: a live owner that reaches the
	// store keeps its lease.
	CauseLeaseOutlived Cause = "lease_outlived"
	// CauseClockSkew: the run's claim was taken over by a worker whose
	// clock disagreed with the run's by at least the skew margin: the
	// promise's clock condition did not hold.
	CauseClockSkew Cause = "clock_skew"
)

// Causes lists the causes in the order a [Verdict] counts them.
var Causes = []Cause{CauseKilled, CauseCompletionFailed, CauseCompletionRefused, CauseLeaseOutlived, CauseClockSkew}

// Violation is one broken property: what broke, and the events that show
// it, in history order.
type Violation struct {
	Key    string
	Msg    string
	Events []Event
	// Breaker is the position of the act that broke the promise (one of
	// Events): the write that should have been refused, or that removed
	// what should have refused it; for a promise about one delivery's
	// report or acknowledgement with no such write, that outcome or
	// acknowledgement. 0 when the checker names none.
	Breaker int
}

// Result is one property's verdict: how many cases it checked and the
// violations found.
type Result struct {
	Property   Property
	Doc        string
	Checked    int
	Violations []Violation
}

// Verdict is what [Check] found in a history.
type Verdict struct {
	Header                                         Header
	Procs, Truncated, Events, Keys, Deliveries     int
	Runs, CompletedRuns, Acks, Faults, Quarantines int
	// Explained counts the runs whose result is not the stored one, by the
	// cause that explains each.
	Explained map[Cause]int
	Results   []Result
}

// Failed reports whether any property was violated.
func (v *Verdict) Failed() bool { return v.Violations() > 0 }

// Violations returns the number of violations of all properties.
func (v *Verdict) Violations() int {
	n := 0
	for _, r := range v.Results {
		n += len(r.Violations)
	}
	return n
}

// Result returns p's result.
func (v *Verdict) Result(p Property) Result {
	for _, r := range v.Results {
		if r.Property == p {
			return r
		}
	}
	return Result{Property: p}
}

// delivery is one receive of a message and everything recorded about it.
type delivery struct {
	id, proc, key string
	epoch         int
	deliver       *Event
	claims        []*Event
	completes     []*Event
	releases      []*Event
	extends       []*Event
	refusals      []*Event // quarantines refused by a COMPLETED record, which the guard replays
	start, end    *Event
	outcome, ack  *Event
	run           *run
}

// run is one start of the operation.
type run struct {
	d     *delivery
	claim *Event // the successful claim it ran under; nil if none was recorded
	epoch int
}

func (r *run) ok() bool { return r.d.end != nil && r.d.end.Resp == RespOK }

func (r *run) strict() bool { return r.claim != nil && r.claim.Reader.Strict() }

func (r *run) owner() string {
	if r.claim != nil {
		return r.claim.Owner
	}
	return r.d.start.Owner
}

// at is where the run stands in its epoch's order: the later of its start
// and its claim. A run that completed after its record expired and claimed
// the key again stores its result under that later claim (reclaimed), so
// it counts from there, after the runs of the epoch before it.
func (r *run) at() int { return max(r.d.start.Pos, r.claimPos()) }

// pos is where the run's claim is, or its start when no claim was recorded.
func (r *run) claimPos() int {
	if r.claim != nil {
		return r.claim.Pos
	}
	return r.d.start.Pos
}

// epoch is one life of a key's record: from its first claim to its expiry
// or an operator's release.
type epoch struct {
	key         string
	n           int
	runs        []*run
	completions []*Event // successful completions and operator resolves
	anchors     []*Event // quarantines that succeeded, claims that found a quarantine
	replays     []*Event // claims that found the record completed
	releases    []*Event // successful releases
	takeovers   []*Event // claims that took a lapsed claim over
	final       *Event
	deliveries  []*delivery
}

// checker holds the index of one history.
type checker struct {
	h          *History
	events     []Event // h's, each with its Pos
	margin     int64
	deliveries map[string]*delivery
	order      []*delivery
	epochs     map[string][]*epoch // by key
	keys       []string
	off        []int64          // each event's process's clock offset, by position
	epAt       []int            // each event's epoch of its key, by position
	kills      map[string][]int // positions of the kills of each process
	faults     map[string][]int // positions of the faults that hit each process
	v          *Verdict
	storedRuns map[*run]bool   // every epoch's stored run: a run whose completion, after its record expired and it claimed again, stored its result in the next epoch
	sealer     map[string]bool // the processes whose guard has a Sealer
}

// Check verifies the promise's properties on h. Every property is checked
// on every history; one with nothing to check reports 0 cases.
func Check(h *History) *Verdict {
	c := &checker{
		h:          h,
		margin:     h.Header.SkewMargin,
		deliveries: map[string]*delivery{},
		epochs:     map[string][]*epoch{},
		off:        make([]int64, len(h.Events)+1),
		epAt:       make([]int, len(h.Events)+1),
		kills:      map[string][]int{},
		faults:     map[string][]int{},
		sealer:     map[string]bool{},
		v: &Verdict{
			Header: h.Header, Procs: len(h.Procs), Truncated: h.Truncated, Events: len(h.Events),
			Explained: map[Cause]int{},
		},
	}
	c.events = slices.Clone(h.Events)
	for i := range c.events {
		c.events[i].Pos = i + 1
	}
	c.index()
	c.v.Results = make([]Result, len(Properties))
	for i, p := range Properties {
		c.v.Results[i] = Result{Property: p.Property, Doc: p.Doc}
	}
	c.storedRuns = map[*run]bool{}
	for _, key := range c.keys {
		for _, ep := range c.epochs[key] {
			if _, _, r, _ := c.stored(ep); r != nil {
				c.storedRuns[r] = true
			}
		}
	}
	for _, key := range c.keys {
		for _, ep := range c.epochs[key] {
			c.checkEpoch(ep)
		}
	}
	for _, d := range c.order {
		c.checkAck(d)
		c.checkSealed(d)
	}
	c.checkExpiry()
	return c.v
}

// checkExpiry holds every claim that took its key's record as expired to
// the owner it replaced: the owner's run must have ended (or its worker
// died) before, unless the claimer's clock ran SkewMargin or more ahead of
// the owner's. An owner relies on its lease only up to the point where a
// reader whose clock runs less than SkewMargin ahead may take the record
// as expired; the keep-alive must end the operation's context before it.
func (c *checker) checkExpiry() {
	for i := range c.events {
		e := &c.events[i]
		if e.Ev != KindClaim || !e.Expired || e.Prev == "" || (e.Resp != RespClaimed && e.Resp != RespTakenOver) {
			continue
		}
		key := e.Key
		if d := c.deliveries[e.D]; key == "" && d != nil {
			key = d.key
		}
		for _, ep := range c.epochs[key] {
			for _, r := range ep.runs {
				if r.owner() != e.Prev || r.d.start == nil || r.d.start.Pos > e.Pos {
					continue
				}
				c.checked(ExpiryHeld)
				if r.d.end != nil && r.d.end.Pos < e.Pos || c.killedBetween(r.d.proc, r.d.start.Pos, e.Pos) {
					continue
				}
				if skew := c.off[e.Pos] - c.off[r.claimPos()]; skew >= c.margin {
					continue
				}
				c.violate(ExpiryHeld, key, []*Event{r.claim, r.d.start, e},
					"%s took the record of %s as expired while its run (%s) still ran, under a clock skew within SkewMargin", who(e), e.Prev, r.d.id)
				c.blame(ExpiryHeld, e)
			}
		}
	}
}

// killedBetween reports whether proc was killed between positions from
// and to.
func (c *checker) killedBetween(proc string, from, to int) bool {
	for _, p := range c.kills[proc] {
		if p > from && p < to {
			return true
		}
	}
	return false
}

func (c *checker) result(p Property) *Result {
	for i := range c.v.Results {
		if c.v.Results[i].Property == p {
			return &c.v.Results[i]
		}
	}
	panic("history: unknown property " + string(p))
}

func (c *checker) checked(p Property) { c.result(p).Checked++ }

// violate records a violation of p shown by events (nil ones are left out).
func (c *checker) violate(p Property, key string, events []*Event, format string, args ...any) {
	v := Violation{Key: key, Msg: fmt.Sprintf(format, args...)}
	for _, e := range events {
		if e != nil {
			v.Events = append(v.Events, *e)
		}
	}
	slices.SortFunc(v.Events, func(a, b Event) int { return a.Pos - b.Pos })
	v.Events = slices.CompactFunc(v.Events, func(a, b Event) bool { return a.Pos == b.Pos })
	r := c.result(p)
	r.Violations = append(r.Violations, v)
}

// index reads the history once: deliveries, runs, epochs, clock offsets,
// kills and faults.
func (c *checker) index() {
	cur := map[string]int{} // each key's current epoch
	procOff := map[string]int64{}
	for i := range c.events {
		e := &c.events[i]
		switch e.Ev {
		case KindProc:
			procOff[e.Proc] = e.Off
			c.sealer[e.Proc] = e.Sealer
		case KindFault:
			c.v.Faults++
			if e.Target != "" {
				c.faults[e.Target] = append(c.faults[e.Target], e.Pos)
				switch e.Fault {
				case FaultProcKill:
					c.kills[e.Target] = append(c.kills[e.Target], e.Pos)
				case FaultClockSkew:
					procOff[e.Target] = e.Off
				}
			}
		}
		c.off[e.Pos] = procOff[e.Proc]

		var d *delivery
		if e.D != "" {
			d = c.deliveries[e.D]
			if d == nil {
				d = &delivery{id: e.D, proc: e.Proc, key: e.Key, epoch: -1}
				c.deliveries[e.D] = d
				c.order = append(c.order, d)
			}
			if d.key == "" {
				d.key = e.Key
			}
		}
		key := e.Key
		if key == "" && d != nil {
			key = d.key
		}
		if key == "" {
			continue
		}
		if e.Ev == KindClaim && e.Expired && (e.Resp == RespClaimed || e.Resp == RespTakenOver) {
			cur[key]++
		}
		ep := c.epoch(key, cur[key])
		c.epAt[e.Pos] = ep.n
		if d != nil && (d.epoch < 0 || (e.Ev == KindClaim && len(d.claims) == 0 && d.epoch != ep.n)) {
			// A delivery belongs to the epoch of its first claim, else of
			// its first event.
			if d.epoch >= 0 {
				old := c.epoch(key, d.epoch)
				old.deliveries = slices.DeleteFunc(old.deliveries, func(x *delivery) bool { return x == d })
			}
			d.epoch = ep.n
			ep.deliveries = append(ep.deliveries, d)
		}
		switch e.Ev {
		case KindDeliver:
			if d != nil && d.deliver == nil {
				d.deliver = e
			}
		case KindClaim:
			if d != nil {
				d.claims = append(d.claims, e)
			}
			switch e.Resp {
			case RespQuarantined:
				ep.anchors = append(ep.anchors, e)
			case RespTakenOver:
				ep.takeovers = append(ep.takeovers, e)
			case RespReplayed:
				ep.replays = append(ep.replays, e)
			}
		case KindOpStart:
			if d == nil || d.start != nil {
				continue
			}
			d.start = e
			r := &run{d: d, epoch: ep.n}
			for _, cl := range slices.Backward(d.claims) {
				if cl.Resp == RespClaimed || cl.Resp == RespTakenOver {
					r.claim = cl
					r.epoch = c.epAt[cl.Pos]
					break
				}
			}
			d.run = r
			rep := c.epoch(key, r.epoch)
			rep.runs = append(rep.runs, r)
			c.v.Runs++
		case KindOpEnd:
			if d != nil && d.end == nil {
				d.end = e
				if e.Resp == RespOK {
					c.v.CompletedRuns++
				}
			}
		case KindComplete:
			if d != nil {
				d.completes = append(d.completes, e)
			}
			if e.Resp == RespOK {
				ep.completions = append(ep.completions, e)
			}
		case KindRelease:
			if d != nil {
				d.releases = append(d.releases, e)
			}
			if e.Resp == RespOK {
				ep.releases = append(ep.releases, e)
			}
		case KindExtend:
			if d != nil {
				d.extends = append(d.extends, e)
			}
		case KindQuarantine:
			if e.Resp == RespLeaseLost && e.Status == StatusCompleted {
				if d != nil {
					d.refusals = append(d.refusals, e)
				}
				ep.replays = append(ep.replays, e)
			}
			if e.Resp == RespOK {
				ep.anchors = append(ep.anchors, e)
				c.v.Quarantines++
			}
		case KindOutcome:
			if d != nil {
				d.outcome = e
			}
		case KindAck:
			if d != nil && d.ack == nil {
				d.ack = e
				c.v.Acks++
			}
		case KindOperator:
			switch e.Resp {
			case RespOperatorResolve:
				ep.completions = append(ep.completions, e)
			case RespOperatorRelease:
				cur[key]++
			}
		case KindFinal:
			ep.final = e
		}
	}
	c.reclaimed()
	c.v.Keys, c.v.Deliveries = len(c.keys), len(c.order)
}

// reclaimed moves each run whose completion found its lease gone, and
// that claimed the key again and stored its result under the new claim
// (the guard does so when the key was freed), to the epoch of that claim:
// the record it completed.
func (c *checker) reclaimed() {
	for _, d := range c.order {
		r := d.run
		if r == nil || r.claim == nil {
			continue
		}
		for _, e := range d.completes {
			if e.Resp != RespOK || e.Owner == r.claim.Owner {
				continue
			}
			var cl *Event
			for _, x := range d.claims {
				if x.Owner == e.Owner && (x.Resp == RespClaimed || x.Resp == RespTakenOver) && x.Pos < e.Pos {
					cl = x
				}
			}
			if cl == nil || c.epAt[cl.Pos] == r.epoch {
				break
			}
			old, now := c.epoch(d.key, r.epoch), c.epoch(d.key, c.epAt[cl.Pos])
			old.runs = slices.DeleteFunc(old.runs, func(x *run) bool { return x == r })
			now.runs = append(now.runs, r)
			if d.epoch == old.n {
				old.deliveries = slices.DeleteFunc(old.deliveries, func(x *delivery) bool { return x == d })
				now.deliveries = append(now.deliveries, d)
				d.epoch = now.n
			}
			r.claim, r.epoch = cl, now.n
			break
		}
	}
}

// epoch returns key's epoch n, making it (and the ones before it).
func (c *checker) epoch(key string, n int) *epoch {
	eps, ok := c.epochs[key]
	if !ok {
		c.keys = append(c.keys, key)
	}
	for len(eps) <= n {
		eps = append(eps, &epoch{key: key, n: len(eps)})
	}
	c.epochs[key] = eps
	return eps[n]
}

// clock is the guard's clock when e was sent: its Clock, else its time
// plus its process's offset.
func (c *checker) clock(e *Event) int64 {
	if e.Clock != 0 {
		return e.Clock
	}
	return e.T + c.off[e.Pos]
}

// stored returns the epoch's stored result, the event that shows it, and
// the run that produced it (nil for an operator's result or none found):
// the first successful completion's, else the final record's, else the
// first claim that found the record completed.
func (c *checker) stored(ep *epoch) (result string, by *Event, r *run, ok bool) {
	if len(ep.completions) > 0 {
		first := ep.completions[0]
		if first.Ev == KindComplete {
			r = c.runOf(ep, first)
		}
		return first.Result, first, r, true
	}
	if ep.final != nil && ep.final.Status == StatusCompleted {
		for _, cand := range ep.runs {
			if cand.ok() && cand.d.end.Result == ep.final.Result && (ep.final.Owner == "" || cand.owner() == "" || cand.owner() == ep.final.Owner) {
				r = cand
				break
			}
		}
		return ep.final.Result, ep.final, r, true
	}
	if len(ep.replays) > 0 {
		first := ep.replays[0]
		for _, cand := range ep.runs {
			if cand.ok() && cand.d.end.Result == first.Result {
				r = cand
				break
			}
		}
		return first.Result, first, r, true
	}
	return "", nil, nil, false
}

// runOf returns the run whose completion is e: its delivery's run.
func (c *checker) runOf(ep *epoch, e *Event) *run {
	if d := c.deliveries[e.D]; d != nil && d.run != nil {
		return d.run
	}
	for _, r := range ep.runs {
		if r.owner() != "" && r.owner() == e.Owner {
			return r
		}
	}
	return nil
}

func (c *checker) checkEpoch(ep *epoch) {
	result, by, storedRun, hasStored := c.stored(ep)
	c.checkOneResult(ep, result, by, storedRun, hasStored)
	extra := c.checkAtMostOnce(ep, storedRun, hasStored)
	c.checkStrict(ep)
	c.checkQuarantine(ep)
	c.checkReports(ep, storedRun, extra)
}

func (c *checker) checkOneResult(ep *epoch, result string, by *Event, storedRun *run, hasStored bool) {
	if !hasStored {
		return
	}
	c.checked(OneResult)
	for _, e := range ep.completions[min(1, len(ep.completions)):] {
		if e.Owner != by.Owner || e.Ev != by.Ev {
			c.violate(OneResult, ep.key, []*Event{by, e}, "two completions of one record succeeded: %s's and %s's", who(by), who(e))
			c.blame(OneResult, c.completionBreaker(ep, by, e))
			break
		}
	}
	if f := ep.final; f != nil && f != by {
		switch {
		case f.Status != StatusCompleted:
			c.violate(OneResult, ep.key, []*Event{by, f}, "the record was completed, yet it is %s at the end", status(f.Status))
			c.blame(OneResult, c.lastWrite(ep, by.Pos, f.Pos, nil))
		case f.Result != result:
			c.violate(OneResult, ep.key, []*Event{by, f}, "the record keeps result %q at the end, not %q, the one its completion stored", f.Result, result)
			c.blame(OneResult, c.lastWrite(ep, by.Pos, f.Pos, nil))
		}
	}
	for _, e := range ep.replays {
		if e != by && e.Result != result {
			c.violate(OneResult, ep.key, []*Event{by, e}, "a claim found the record completed with result %q, and the stored one is %q", e.Result, result)
			c.blame(OneResult, c.lastWrite(ep, by.Pos, e.Pos, nil))
			break
		}
	}
	if storedRun == nil && by.Ev != KindOperator {
		c.violate(OneResult, ep.key, []*Event{by}, "the stored result %q is no run's", result)
		if by.Ev == KindComplete {
			c.blame(OneResult, by)
		}
	}
}

// checkAtMostOnce explains every run of ep that completed and whose result
// is not stored, and returns those runs.
func (c *checker) checkAtMostOnce(ep *epoch, storedRun *run, hasStored bool) []*run {
	var done []*run
	for _, r := range ep.runs {
		if r.ok() {
			done = append(done, r)
		}
	}
	if len(done) == 0 {
		return nil
	}
	c.checked(AtMostOnce)
	var extra []*run
	single := !hasStored // nothing stored: the first run that completed is the key's one run
	kept := storedRun    // the run whose result stands, for blame
	if kept == nil {
		kept = done[0]
	}
	for _, r := range done {
		if r == storedRun {
			continue
		}
		if single {
			single = false
			continue
		}
		extra = append(extra, r)
		cause, why, shown := c.explain(ep, r)
		if cause == "" {
			c.violate(AtMostOnce, ep.key, append([]*Event{r.claim, r.d.start, r.d.end}, shown...),
				"run of %s completed and its result is not the stored one: %s", r.d.id, why)
			c.blame(AtMostOnce, c.doubleRunBreaker(ep, kept, r))
			continue
		}
		// A default run whose claim a default claim took over before the
		// strict run's claim (which then found the key free) ran before
		// that strict claim could quarantine it: strict_once's exemption.
		if r.strict() || (storedRun != nil && storedRun.strict() && !c.takenOverByDefault(ep, r, storedRun.claimPos())) {
			c.violate(AtMostOnce, ep.key, append([]*Event{r.claim, r.d.start, r.d.end}, shown...),
				"run of %s completed and its result is not the stored one (%s), under strict mode, which allows no double run", r.d.id, cause)
			c.blame(AtMostOnce, c.doubleRunBreaker(ep, kept, r))
			continue
		}
		c.v.Explained[cause]++
	}
	return extra
}

// explain returns the cause of r's extra run, or why none applies, with the
// events that show it.
func (c *checker) explain(ep *epoch, r *run) (Cause, string, []*Event) {
	d := r.d
	for _, e := range d.completes {
		if e.Resp == RespOK {
			return "", "its own completion succeeded, yet another result is stored", []*Event{e}
		}
	}
	first := len(c.events) + 1 // the first answered completion
	if len(d.completes) > 0 {
		first = d.completes[0].Pos
	}
	for _, k := range c.kills[d.proc] {
		if k > d.start.Pos && k < first {
			return CauseKilled, "", []*Event{c.event(k)}
		}
	}
	for _, e := range d.completes {
		if e.Resp == RespRefused {
			return CauseCompletionRefused, "", []*Event{e}
		}
	}
	for _, e := range d.completes {
		if e.Resp != RespLeaseLost {
			continue
		}
		if r.claim == nil {
			return "", "its completion found the lease taken over, and no claim of the run was recorded", []*Event{e}
		}
		if cause, shown := c.takenOverBySkew(ep, r, e); cause != "" {
			return cause, "", shown
		}
		end := r.claim.Lease
		for _, x := range d.extends {
			if x.Resp == RespOK {
				end = max(end, x.Lease)
			}
		}
		shown := []*Event{c.taker(ep, r, e), e}
		if dl := deadline(d); dl != 0 {
			if e.T < dl {
				return "", fmt.Sprintf("its completion found its lease taken over %v before its invocation's deadline",
					time.Duration(dl-e.T)), append(shown, d.deliver)
			}
		} else if sent, granted := c.clock(e), end*int64(time.Millisecond)-c.margin; sent < granted {
			return "", fmt.Sprintf("its completion found its lease taken over %v before the lease it was granted ended (by its own clock)",
				time.Duration(granted-sent)), shown
		}
		if c.h.Header.LeaseExtension && !c.hitBetween(d.proc, r.claim.Pos, e.Pos) {
			return "", "its lease was taken over while its owner ran and reached the store, with leases extended", shown
		}
		return CauseLeaseOutlived, "", shown
	}
	if n := len(d.completes); n > 0 && d.completes[n-1].Resp == RespError {
		return CauseCompletionFailed, "", []*Event{d.completes[n-1]}
	}
	if len(d.completes) == 0 {
		return "", "its worker was not killed, and no completion of it was attempted", nil
	}
	return "", "no documented cause applies", []*Event{d.completes[len(d.completes)-1]}
}

// deadline is d's invocation's deadline, 0 if none was recorded.
func deadline(d *delivery) int64 {
	if d.deliver == nil {
		return 0
	}
	return d.deliver.Deadline
}

// taker returns the claim that took r's claim over before r's completion
// lost found it gone, nil if none was recorded.
func (c *checker) taker(ep *epoch, r *run, lost *Event) *Event {
	for _, t := range slices.Backward(ep.takeovers) {
		if t.Prev != "" && t.Prev == r.claim.Owner && t.Pos < lost.Pos {
			return t
		}
	}
	return nil
}

// takenOverBySkew reports CauseClockSkew when the claim that took r's over
// was made by a process whose clock disagreed with r's by the skew margin
// or more.
func (c *checker) takenOverBySkew(ep *epoch, r *run, lost *Event) (Cause, []*Event) {
	t := c.taker(ep, r, lost)
	if t == nil || c.margin <= 0 {
		return "", nil
	}
	// The owner's clock as it wrote its lease (its claim) or as it found
	// the lease lost: a process's clock may jump between its claim and a
	// completion still on the network.
	for _, pos := range []int{lost.Pos, r.claimPos()} {
		if d := c.off[t.Pos] - c.off[pos]; d >= c.margin || -d >= c.margin {
			return CauseClockSkew, []*Event{t, lost}
		}
	}
	return "", nil
}

// hitBetween reports whether a fault hit proc between positions from and to.
func (c *checker) hitBetween(proc string, from, to int) bool {
	for _, p := range c.faults[proc] {
		if p > from && p < to {
			return true
		}
	}
	return false
}

func (c *checker) event(pos int) *Event { return &c.events[pos-1] }

func (c *checker) checkStrict(ep *epoch) {
	runs := slices.Clone(ep.runs)
	slices.SortFunc(runs, func(a, b *run) int { return a.at() - b.at() })
	strictBefore := false
	for i, r := range runs {
		if !r.strict() && !strictBefore {
			continue
		}
		strictBefore = strictBefore || r.strict()
		c.checked(StrictOnce)
		for _, prev := range runs[:i] {
			if !prev.strict() && !r.strict() {
				continue
			}
			if c.released(prev, r.claimPos()) || r.strict() && c.takenOverByDefault(ep, prev, r.claimPos()) {
				continue
			}
			which := "after a strict claim's run"
			if r.strict() {
				which = "under a strict claim"
			}
			c.violate(StrictOnce, ep.key, []*Event{prev.claim, prev.d.start, r.claim, r.d.start},
				"the operation started again %s (run of %s, then of %s), and the first run was not released", which, prev.d.id, r.d.id)
			c.blame(StrictOnce, c.runBreaker(ep, prev, r))
			break
		}
	}
}

// released reports whether r's claim was released before position pos.
func (c *checker) released(r *run, pos int) bool {
	for _, e := range r.d.releases {
		if e.Resp == RespOK && e.Pos < pos {
			return true
		}
	}
	return false
}

// takenOverByDefault reports whether r, a default-mode run, had its claim
// taken over by a default-mode claim before position pos: a lapsed default
// claim may be taken over (at_most_once judges that double run), and a
// strict claim that later finds the key free (its taker released it) runs
// after no claim of unknown outcome it could have quarantined.
func (c *checker) takenOverByDefault(ep *epoch, r *run, pos int) bool {
	if r.strict() || r.owner() == "" {
		return false
	}
	for _, e := range ep.takeovers {
		if e.Pos < pos && e.Prev == r.owner() && !e.Reader.Strict() {
			return true
		}
	}
	return false
}

func (c *checker) checkQuarantine(ep *epoch) {
	for _, a := range ep.anchors {
		c.checked(QuarantineHolds)
		owner, exp := a.Owner, a.Exp
		if a.Ev == KindClaim {
			owner, exp = a.Prev, 0
		}
		for _, r := range ep.runs {
			if r.d.start.Pos < a.Pos {
				continue
			}
			if r.claim != nil && r.claim.Owner == owner && (owner != "" || (r.claim.Pos < a.Pos && (exp == 0 || r.claim.Exp == exp))) {
				continue // the quarantined claim's own run
			}
			lifted := false
			for _, rel := range ep.releases {
				if rel.Owner == owner && rel.Pos > a.Pos && rel.Pos < r.claimPos() {
					lifted = true
				}
			}
			if lifted {
				continue
			}
			c.violate(QuarantineHolds, ep.key, []*Event{a, r.claim, r.d.start},
				"the operation ran for %s after the key was quarantined", r.d.id)
			c.blame(QuarantineHolds, c.claimBreaker(ep, owner, a.Pos, r.claim))
			break
		}
	}
}

// checkReports holds each run's outcome against what happened to it.
func (c *checker) checkReports(ep *epoch, storedRun *run, extra []*run) {
	for _, d := range ep.deliveries {
		o := d.outcome
		if o == nil {
			continue
		}
		r := d.run
		if r == nil {
			if o.Outcome == OutcomeDoubleRun {
				c.checked(DoubleRunReported)
				c.violate(DoubleRunReported, ep.key, []*Event{o}, "%s's call reported double_run, yet it ran nothing", d.id)
				c.blame(DoubleRunReported, o)
			}
			continue
		}
		c.checked(DoubleRunReported)
		success := o.Err == "" && o.Class == ""
		switch {
		case o.Outcome == OutcomeDoubleRun && !r.ok():
			c.violate(DoubleRunReported, ep.key, []*Event{d.start, d.end, o}, "%s's call reported double_run, yet its run did not complete", d.id)
			c.blame(DoubleRunReported, o)
		case r == storedRun && !c.sawLater(d, r) && slices.Contains([]string{OutcomeDoubleRun, OutcomeReplayed, OutcomeInProgress, OutcomeQuarantined, OutcomeMismatch, OutcomeReleased}, o.Outcome):
			c.violate(DoubleRunReported, ep.key, []*Event{d.end, o}, "%s's run's result is the stored one, yet its call reported %s", d.id, o.Outcome)
			c.blame(DoubleRunReported, o)
		case r.ok() && r != storedRun && !c.storedRuns[r] && success && (o.Outcome == OutcomeClaimed || o.Outcome == OutcomeTakenOver):
			c.violate(DoubleRunReported, ep.key, []*Event{d.end, o}, "%s's run's result is not the stored one, yet its call reported %s", d.id, o.Outcome)
			c.blame(DoubleRunReported, o)
		case slices.Contains(extra, r) && !slices.Contains([]string{OutcomeDoubleRun, OutcomeFailed, OutcomeQuarantined, OutcomeMismatch}, o.Outcome):
			c.violate(DoubleRunReported, ep.key, []*Event{d.end, o}, "%s ran a second time and its call reported %s, not double_run", d.id, o.Outcome)
			c.blame(DoubleRunReported, o)
		}
	}
}

// sawLater reports whether d, after r stored its result, last saw its
// key's record in a later epoch (the record expired, and another run
// claimed it or stored its result): a double_run it reports is then the
// truth as the guard can know it.
func (c *checker) sawLater(d *delivery, r *run) bool {
	if ev := ownEvidence(d, len(c.events)+1); ev != nil && c.epAt[ev.Pos] > r.epoch {
		return true
	}
	cl := last(d.claims) // a claim after a lost completion, that found the later record in progress
	return cl != nil && c.epAt[cl.Pos] > r.epoch
}

// checkAck holds an acknowledged delivery against its outcome, its evidence
// of a COMPLETED record and the stored result.
func (c *checker) checkAck(d *delivery) {
	a := d.ack
	if a == nil {
		return
	}
	o := d.outcome
	c.checked(FailureNotAcked)
	switch {
	case o == nil:
		c.violate(FailureNotAcked, d.key, []*Event{last(d.claims), a}, "%s was acknowledged, and its call reported no outcome", d.id)
		c.blame(FailureNotAcked, a)
	case o.Err != "" || o.Class != "" || !slices.Contains([]string{OutcomeClaimed, OutcomeTakenOver, OutcomeReplayed, OutcomeDoubleRun}, o.Outcome):
		what := o.Outcome
		if o.Class != "" {
			what += " (" + o.Class + ")"
		}
		c.violate(FailureNotAcked, d.key, []*Event{o, a}, "%s was acknowledged, yet its call failed: %s", d.id, what)
		c.blame(FailureNotAcked, a)
	}

	if d.key == "" {
		return
	}
	ep := c.epochs[d.key][max(d.epoch, 0)]
	c.checked(AckCompleted)
	ev := c.evidence(d, a.Pos)
	if ev != nil {
		// The record as the delivery last saw it (or, for an outcome
		// shared in its process or served from its cache, as the
		// delivery that saw it did): the epoch of that event.
		ep = c.epochs[d.key][c.epAt[ev.Pos]]
	}
	if ev == nil {
		seen := "no claim recorded"
		if cl := last(d.claims); cl != nil {
			seen = "its claim found " + string(cl.Resp)
		}
		c.violate(AckCompleted, d.key, []*Event{last(d.claims), o, a}, "%s was acknowledged without a COMPLETED record: %s", d.id, seen)
		c.blame(AckCompleted, a)
	} else if f := ep.final; f != nil && f.Status != StatusCompleted {
		c.violate(AckCompleted, d.key, []*Event{ev, a, f}, "%s was acknowledged, and the key's record is %s at the end", d.id, status(f.Status))
		c.blame(AckCompleted, c.lastWrite(ep, ev.Pos, f.Pos, nil))
	}

	result, by, storedRun, ok := c.stored(ep)
	if ok {
		c.checked(AckSawStored)
		if a.Result != result {
			c.violate(AckSawStored, d.key, []*Event{by, a}, "%s was acknowledged with result %q, and the stored one is %q", d.id, a.Result, result)
			if seen := completionOf(ep, a.Result); seen != nil && by.Ev == KindComplete {
				c.blame(AckSawStored, laterOf(seen, by))
			} else {
				c.blame(AckSawStored, a)
			}
		}
	}
	if storedRun != nil && storedRun.claim != nil && storedRun.claim.Payload != "" && d.deliver != nil && d.deliver.Payload != "" {
		c.checked(PayloadValidated)
		if want := storedRun.claim.Payload; d.deliver.Payload != want {
			c.violate(PayloadValidated, d.key, []*Event{storedRun.claim, d.deliver, a},
				"%s was acknowledged with the result of payload %q, and its own is %q", d.id, want, d.deliver.Payload)
			c.blame(PayloadValidated, a)
		}
	}
}

// checkSealed holds a delivery whose claim found its key's record COMPLETED
// with a sealed result (or whose quarantine such a record refused), before
// its call's report, to its reader: without a Sealer, its call fails (the
// answer may have been lost on the way: any failure) and no run of it
// starts after; with one, its call does not fail unsealed.
func (c *checker) checkSealed(d *delivery) {
	o := d.outcome
	if o == nil {
		return // killed before its report: failure_not_acked holds an acknowledgement without one
	}
	var found *Event
	for _, e := range append(slices.Clone(d.claims), d.refusals...) {
		if e.Sealed && e.Pos < o.Pos && (e.Resp == RespReplayed || e.Ev == KindQuarantine) && (found == nil || e.Pos < found.Pos) {
			found = e
		}
	}
	if found == nil {
		return
	}
	c.checked(SealedHeld)
	switch {
	case c.sealer[d.proc] && o.Class == ClassUnsealed:
		c.violate(SealedHeld, d.key, []*Event{found, o}, "%s's guard has a Sealer and could not open the sealed result it found", d.id)
		c.blame(SealedHeld, o)
	case c.sealer[d.proc]:
	case o.Err == "" && o.Class == "":
		c.violate(SealedHeld, d.key, []*Event{found, o, d.ack}, "%s's guard has no Sealer, found a sealed result, and its call reported %s, not a failure", d.id, o.Outcome)
		c.blame(SealedHeld, o)
	case d.start != nil && d.start.Pos > found.Pos:
		c.violate(SealedHeld, d.key, []*Event{found, d.start, o}, "%s's guard has no Sealer, found a sealed result, and ran the operation", d.id)
		c.blame(SealedHeld, d.start)
	}
}

// evidence returns the event before pos that shows d saw its key's record
// COMPLETED: its own completion, a claim that found the record completed,
// or, for an outcome shared in its process or served from its cache, such
// an event of another delivery of the key in that process.
func (c *checker) evidence(d *delivery, pos int) *Event {
	if e := ownEvidence(d, pos); e != nil {
		return e
	}
	if o := d.outcome; o != nil && (o.Source == "cache" || o.Source == "shared") {
		// The outcome it shared may be of a later epoch (a record that
		// expired while the delivery waited): any delivery of the key in
		// its process.
		var all []*delivery
		for _, ep := range c.epochs[d.key] {
			all = append(all, ep.deliveries...)
		}
		var latest *Event // the latest such event: the outcome shared is the newest
		for _, other := range all {
			if other != d && other.proc == d.proc {
				if e := ownEvidence(other, pos); e != nil && (latest == nil || e.Pos > latest.Pos) {
					latest = e
				}
			}
		}
		return latest
	}
	return nil
}

// ownEvidence returns d's latest event before pos that shows its key's
// record COMPLETED: a delivery is judged against the record as it last saw
// it (a completion whose response was lost, then a claim that found the
// record completed anew after it expired, replays the later record).
func ownEvidence(d *delivery, pos int) *Event {
	var latest *Event
	see := func(e *Event) {
		if e.Pos < pos && (latest == nil || e.Pos > latest.Pos) {
			latest = e
		}
	}
	for _, e := range d.completes {
		if e.Resp == RespOK {
			see(e)
		}
	}
	for _, e := range d.claims {
		if e.Resp == RespReplayed {
			see(e)
		}
	}
	for _, e := range d.refusals {
		see(e)
	}
	return latest
}

func last(es []*Event) *Event {
	if len(es) == 0 {
		return nil
	}
	return es[len(es)-1]
}

func who(e *Event) string {
	switch {
	case e.Ev == KindOperator:
		return "an operator"
	case e.D != "":
		return e.D
	default:
		return e.Proc
	}
}

func status(s string) string {
	if s == "" {
		return "gone"
	}
	return s
}
