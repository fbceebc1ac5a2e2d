package linearize

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
)

// Status is the state of the record.
type Status uint8

// The states of the record: none, claimed, completed.
const (
	Absent Status = iota
	InProgress
	Completed
)

func (s Status) String() string {
	switch s {
	case Absent:
		return "absent"
	case InProgress:
		return "INPROGRESS"
	case Completed:
		return "COMPLETED"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Record is the record as a store keeps it. Times are in the unit the
// history's adapter chose (see the package doc).
type Record struct {
	Status      Status
	Owner       string // the lease owner token; empty for a claim another library wrote
	Expires     int64  // when the record stops counting
	Lease       int64  // when an INPROGRESS claim may be taken over (a strict claim's: Expires)
	StrictLease int64  // a strict claim's own lease end; 0 for other claims
	Quarantined int64  // when the claim was quarantined; 0 if it is not
	Validation  string // the validated payload's digest
	Data        string // the result, or its digest; "" while in progress
}

// LeaseEnd returns when the claim's holder's lease ends: StrictLease for
// a strict claim (one written with Lease at or after Expires), else Lease.
func (r Record) LeaseEnd() int64 {
	if r.strict() {
		return r.StrictLease
	}
	return r.Lease
}

func (r Record) strict() bool { return r.StrictLease != 0 && r.Lease >= r.Expires }

// canon is r as the model compares it: nothing of an absent record, no
// result on a claim, no lease on a completed record (what a store keeps
// there means nothing).
func canon(r Record) Record {
	switch r.Status {
	case Absent:
		return Record{}
	case InProgress:
		r.Data = ""
	case Completed:
		r.Lease, r.StrictLease, r.Quarantined = 0, 0, 0
	}
	return r
}

// Kind is a record operation.
type Kind uint8

// The record operations, as the idempotency package's stores implement
// them.
const (
	// Claim is Acquire, or AcquireStrict with NoTakeover: it writes Rec,
	// an INPROGRESS claim, if the key is free, the record expired, or
	// (without NoTakeover) its lease ended before Now; a claim finding
	// its own Owner's INPROGRESS record succeeds and writes nothing.
	// Output: OK with the record replaced (zero if none, or not told),
	// or Refused with the record found.
	Claim Kind = iota
	// Complete sets the record COMPLETED with Rec.Data and Rec.Expires,
	// if it is INPROGRESS and Rec.Owner's; finding it COMPLETED by
	// Rec.Owner (an earlier attempt applied) succeeds and writes nothing.
	// Output: OK with Rec.Data the result stored ("" if not told), or
	// Refused (lease lost).
	Complete
	// Release deletes the record if it is INPROGRESS and Rec.Owner's.
	// Output: OK or Refused.
	Release
	// Quarantine marks the claim Rec (the record found: its Owner and
	// Expires) if it is still that INPROGRESS claim, its lease ended before
	// Now and it is not marked yet: Quarantined becomes Now and Lease the
	// record's expiry. Output: OK with the record as it is then, or
	// Refused with the record that failed the condition (zero if not told).
	Quarantine
	// Extend sets the lease end of Rec.Owner's claim to Rec.Lease (a
	// strict claim's StrictLease), as driver.Extender does, if the claim is
	// INPROGRESS, not quarantined and not expired: a lease that lapsed
	// without being taken over is still its owner's, and is extended.
	// Output: OK or Refused.
	Extend
	// Read returns the record as stored (Inspect): OK with it, or NotFound.
	Read
)

func (k Kind) String() string {
	switch k {
	case Claim:
		return "claim"
	case Complete:
		return "complete"
	case Release:
		return "release"
	case Quarantine:
		return "quarantine"
	case Extend:
		return "extend"
	case Read:
		return "read"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Input is one operation on the record ID.
type Input struct {
	ID         string // the record's id; a history of several records is checked record by record
	Kind       Kind
	Now        int64 // the client's time: the one it passed to the store, or read when it called
	NoTakeover bool  // Claim: never take a lapsed claim over (AcquireStrict)
	Rec        Record

	// Swept is the latest time the store's own clock may read when it
	// applies the operation (0: Now): a store that deletes a record by
	// its own clock (a Redis key's TTL) may have swept it away from
	// Expires on, at the operation's return, even though the operation
	// passed an earlier Now.
	Swept int64
}

// Result is how an operation ended, as its client saw it.
type Result uint8

// The results.
const (
	OK       Result = iota
	Refused         // a claim that found another record; a fenced write whose fence failed (lease lost)
	NotFound        // a read that found no record
	Unknown         // no answer: the client cannot tell whether the store applied it
)

func (r Result) String() string {
	switch r {
	case OK:
		return "ok"
	case Refused:
		return "refused"
	case NotFound:
		return "not found"
	case Unknown:
		return "unknown"
	}
	return "result(" + strconv.Itoa(int(r)) + ")"
}

// Output is an operation's answer: its Result and the record it returned
// (see each [Kind]).
type Output struct {
	Result Result
	Rec    Record
}

// Op is one operation of a history: its client, when it was called and
// when it returned (by one clock for the whole history, in any unit), what
// it asked and what it got.
type Op struct {
	Client       int
	Call, Return int64
	Input        Input
	Output       Output
}

// Resent is op as a client that may have sent it more than once saw it:
// an SDK or driver that retried the request after an error (a response
// lost) returns the last attempt's answer, and an earlier attempt may have
// been applied, at any time after the call. So op becomes two operations:
// the earlier attempt, its answer unknown, and op.
func Resent(op Op) []Op {
	earlier := op
	earlier.Output = Output{Result: Unknown}
	return []Op{earlier, op}
}

// Model returns the sequential model of one record for porcupine.
// expiryGrain is the resolution at which the store compares expiries, in
// the history's time unit: a store that keeps epoch seconds (DynamoDB,
// Redis) treats a record as live until a whole second after its expiry,
// so with milliseconds that is 1000; 0 for a store that compares them
// exactly. Expiry is fuzzy in that band: a record may count as expired,
// and may have been swept away, from its Expires on; it must count as
// expired from Expires + max(expiryGrain, 1) on.
func Model(expiryGrain int64) porcupine.Model {
	grain := max(expiryGrain, 1)
	m := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byID := map[string]int{}
			var out [][]porcupine.Operation
			for _, op := range history {
				id := op.Input.(Input).ID
				i, ok := byID[id]
				if !ok {
					i = len(out)
					byID[id] = i
					out = append(out, nil)
				}
				out[i] = append(out[i], op)
			}
			return out
		},
		Init: func() []any { return []any{Record{}} },
		Step: func(state, input, output any) []any {
			return step(state.(Record), input.(Input), output.(Output), grain)
		},
		Hash: func(state any) uint64 {
			h := fnv.New64a()
			fmt.Fprintf(h, "%+v", state.(Record))
			return h.Sum64()
		},
		DescribeOperation: func(input, output any) string {
			return describe(input.(Input), output.(Output))
		},
		DescribeState: func(state any) string { return describeRecord(state.(Record)) },
	}
	return m.ToModel()
}

// view is the record as an operation at some time may find it.
type view struct {
	rec     Record // absent when swept
	expired bool
}

// views returns what an operation at now may find in state s: the record,
// live or expired; and once it may be expired by now, or by swept (the
// store's own clock), no record (the store swept it: a TTL, a cleanup).
func views(s Record, now, swept, grain int64) []view {
	if s.Status == Absent {
		return []view{{}}
	}
	var vs []view
	switch {
	case now < s.Expires:
		vs = []view{{rec: s}}
	case now < s.Expires+grain:
		vs = []view{{rec: s}, {rec: s, expired: true}}
	default:
		vs = []view{{rec: s, expired: true}}
	}
	if max(now, swept) >= s.Expires {
		vs = append(vs, view{})
	}
	return vs
}

// step returns the states the record may be in after in answered out,
// from state s; none if it could not have answered so.
func step(s Record, in Input, out Output, grain int64) []any {
	var next []any
	add := func(r Record) {
		r = canon(r)
		for _, n := range next {
			if n.(Record) == r {
				return
			}
		}
		next = append(next, r)
	}
	for _, v := range views(s, in.Now, in.Swept, grain) {
		after, accept := apply(v, in)
		switch {
		case out.Result == Unknown:
			// Applied or not. (With Operations' end-of-time return, a
			// place last in the order also stands for "never"; this keeps
			// the model right for an unknown operation given its own
			// return.)
			add(v.rec)
			add(after)
		case accept(out):
			add(after)
		}
	}
	return next
}

// apply returns the record after in, from view v, and which answers the
// store may give.
func apply(v view, in Input) (Record, func(Output) bool) {
	cur := canon(v.rec)
	owner := in.Rec.Owner
	mine := owner != "" && cur.Owner == owner
	is := func(want Result, rec func(Record) bool) func(Output) bool {
		return func(o Output) bool { return o.Result == want && rec(o.Rec) }
	}
	either := func(recs ...Record) func(Record) bool {
		return func(r Record) bool {
			for _, x := range recs {
				if canon(r) == canon(x) {
					return true
				}
			}
			return false
		}
	}
	anything := func(Record) bool { return true }
	switch in.Kind {
	case Claim:
		if cur.Status == InProgress && mine {
			return cur, is(OK, anything) // this claim, made again
		}
		if cur.Status == Absent || v.expired || (!in.NoTakeover && cur.Status == InProgress && cur.Lease < in.Now) {
			rec := in.Rec
			rec.Status, rec.Data, rec.Quarantined = InProgress, "", 0
			return rec, is(OK, either(Record{}, cur))
		}
		return cur, is(Refused, either(cur))
	case Complete:
		data := func(want string) func(Record) bool {
			return func(r Record) bool { return r.Data == "" || r.Data == want }
		}
		switch {
		case cur.Status == Completed && mine:
			return cur, is(OK, data(cur.Data)) // this completion, made again
		case cur.Status == InProgress && mine:
			rec := cur
			rec.Status, rec.Data, rec.Expires = Completed, in.Rec.Data, in.Rec.Expires
			return rec, is(OK, data(in.Rec.Data))
		}
		return cur, is(Refused, anything)
	case Release:
		if cur.Status == InProgress && mine {
			return Record{}, is(OK, anything)
		}
		return cur, is(Refused, anything)
	case Quarantine:
		found := in.Rec
		if cur.Status == InProgress && cur.Owner == found.Owner && cur.Expires == found.Expires &&
			cur.LeaseEnd() < in.Now && cur.Quarantined == 0 {
			rec := cur
			rec.Quarantined, rec.Lease = in.Now, cur.Expires
			return rec, is(OK, either(rec))
		}
		return cur, is(Refused, either(Record{}, cur))
	case Extend:
		if cur.Status == InProgress && mine && cur.Quarantined == 0 && !v.expired {
			rec := cur
			if rec.strict() {
				rec.StrictLease = in.Rec.Lease
			} else {
				rec.Lease = in.Rec.Lease
			}
			return rec, is(OK, anything)
		}
		return cur, is(Refused, anything)
	case Read:
		if cur.Status == Absent {
			return cur, is(NotFound, anything)
		}
		return cur, is(OK, either(cur))
	}
	return cur, func(Output) bool { return false }
}

// Operations returns ops as porcupine's operations. An operation whose
// answer is Unknown returns at the end of time: the store may apply it at
// any point after its call, or never.
func Operations(ops []Op) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		ret := op.Return
		if op.Output.Result == Unknown {
			ret = math.MaxInt64
		}
		out[i] = porcupine.Operation{ClientId: op.Client, Input: op.Input, Call: op.Call, Output: op.Output, Return: ret}
	}
	return out
}

// Check checks ops against the model (see [Model]) within timeout (0: no
// limit), and returns porcupine's result and what [Visualize] draws.
func Check(ops []Op, expiryGrain int64, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(Model(expiryGrain), Operations(ops), timeout)
}

// Visualize writes porcupine's HTML page of a checked history: each
// record's operations by client, the longest order found that the model
// accepts, and where it fails.
func Visualize(w io.Writer, expiryGrain int64, info porcupine.LinearizationInfo) error {
	return porcupine.Visualize(Model(expiryGrain), info, w)
}

func describe(in Input, out Output) string {
	var arg string
	switch in.Kind {
	case Claim:
		arg = fmt.Sprintf("%s, lease %d, expires %d", in.Rec.Owner, in.Rec.LeaseEnd(), in.Rec.Expires)
		if in.NoTakeover {
			arg += ", no takeover"
		}
	case Complete:
		arg = fmt.Sprintf("%s, %q", in.Rec.Owner, in.Rec.Data)
	case Release:
		arg = in.Rec.Owner
	case Quarantine:
		arg = fmt.Sprintf("found %s, expires %d", in.Rec.Owner, in.Rec.Expires)
	case Extend:
		arg = fmt.Sprintf("%s to %d", in.Rec.Owner, in.Rec.Lease)
	}
	s := fmt.Sprintf("%s(%s) at %d -> %s", in.Kind, arg, in.Now, out.Result)
	if out.Rec != (Record{}) {
		s += " " + describeRecord(out.Rec)
	}
	return s
}

func describeRecord(r Record) string {
	if r.Status == Absent {
		return "{absent}"
	}
	s := fmt.Sprintf("{%s %s expires %d", r.Status, r.Owner, r.Expires)
	switch {
	case r.Status == Completed:
		s += fmt.Sprintf(" data %q", r.Data)
	case r.Quarantined != 0:
		s += fmt.Sprintf(" quarantined %d", r.Quarantined)
	default:
		s += fmt.Sprintf(" lease %d", r.LeaseEnd())
	}
	return s + "}"
}
