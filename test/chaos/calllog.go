package chaos

import (
	"github.com/sqsonce/sqsonce/test/history"
)

// The kinds of entries the account counts, read from a worker's history
// (see entriesOf).
const (
	evRecv    = "recv"     // a message was received (N: its receive count)
	evOpStart = "op_start" // the operation began a run (Run)
	evOpDone  = "op_done"  // the operation finished a run, before its completion was stored
	evOpFail  = "op_fail"  // the operation gave up (its context ended)
	evOutcome = "outcome"  // the guard reported an outcome (Outcome, Ran, Run)
	evRecord  = "record"   // the batch handler finished a record (Class: "" on success)
	evAck     = "ack"      // the message is acknowledged: recorded before its delete (Run: the result it saw)
	evPace    = "pace"     // a failed record's visibility was changed (Err if refused)
	evKill    = "kill"     // the worker is about to SIGKILL itself (Class: why)
	evRecvErr = "recv_err" // a ReceiveMessage call failed (not recorded in histories: always 0)
	evClaim   = "claim"    // a claim the store granted (Owner; Prev: the owner taken over, if any)
	evExtend  = "extend"   // an extension of a lease the store applied (Owner)
)

// entry is one step of a worker, as the account counts it: a history event
// of the worker's own file, with its delivery's message, key and run
// resolved.
type entry struct {
	T       int64
	Ev      string
	Msg     string
	Key     string
	Run     string
	N       int
	Outcome string
	Ran     bool
	Class   string
	Err     string
	D       string // the history's delivery
	Owner   string // evClaim, evExtend: the claim's owner
	Prev    string // evClaim: the owner of the claim taken over
}

// entriesOf turns one worker incarnation's history file into the account's
// entries. A run is named by the result its operation returned (its run
// id), or by its delivery when it returned none (it failed, or its worker
// died first); an acknowledgement closes its record, as a success.
func entriesOf(f history.File) []entry {
	type del struct{ msg, key, run string }
	ds := map[string]*del{}
	of := func(d string) *del {
		if ds[d] == nil {
			ds[d] = &del{run: d}
		}
		return ds[d]
	}
	for _, e := range f.Events {
		switch {
		case e.Ev == history.KindDeliver:
			x := of(e.D)
			x.msg, x.key = e.Msg, e.Key
		case e.Ev == history.KindOpEnd && e.Resp == history.RespOK && e.Result != "":
			of(e.D).run = e.Result
		}
	}
	var out []entry
	for _, e := range f.Events {
		x := of(e.D)
		base := entry{T: e.T, Msg: x.msg, Key: x.key, Run: x.run, D: e.D}
		switch e.Ev {
		case history.KindDeliver:
			base.Ev, base.N = evRecv, e.Rc
		case history.KindOpStart:
			base.Ev = evOpStart
		case history.KindOpEnd:
			base.Ev = evOpDone
			if e.Resp != history.RespOK {
				base.Ev, base.Err = evOpFail, e.Err
			}
		case history.KindOutcome:
			base.Ev, base.Outcome, base.Ran, base.Class, base.Err = evOutcome, e.Outcome, e.Ran, e.Class, e.Err
			if !e.Ran {
				base.Run = ""
			}
		case history.KindFail:
			base.Ev, base.Class = evRecord, e.Class
		case history.KindAck:
			out = append(out, entry{T: e.T, Ev: evRecord, Msg: x.msg, Key: x.key})
			base.Ev, base.Run = evAck, e.Result
		case history.KindClaim:
			if e.Resp != history.RespClaimed && e.Resp != history.RespTakenOver {
				continue
			}
			base.Ev, base.Owner = evClaim, e.Owner
			if e.Resp == history.RespTakenOver {
				base.Prev = e.Prev
			}
		case history.KindExtend:
			if e.Resp != history.RespOK {
				continue
			}
			base.Ev, base.Owner = evExtend, e.Owner
		case history.KindVisibility:
			base.Ev, base.Err = evPace, e.Err
		case history.KindFault:
			if e.Fault != history.FaultProcKill || e.Target != f.Header.Proc || e.Class == killRandom {
				continue // a random kill is counted from the incarnations
			}
			base = entry{T: e.T, Ev: evKill, Class: e.Class}
		default:
			continue
		}
		out = append(out, base)
	}
	return out
}
