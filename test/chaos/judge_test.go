package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/test/history"
)

// mixedHistory builds a mixed fleet's history by hand: a Powertools worker p and
// a sqsonce worker s on one key.
type mixedHistory struct {
	ms     int64
	events []history.Event
	seq    map[string]uint64
}

func (f *mixedHistory) at(ms int64) *mixedHistory { f.ms = ms; return f }

func (f *mixedHistory) add(proc string, e history.Event) *mixedHistory {
	if f.seq == nil {
		f.seq = map[string]uint64{}
	}
	f.seq[proc]++
	e.Proc, e.Seq, e.T = proc, f.seq[proc], f.ms*int64(time.Millisecond)
	f.events = append(f.events, e)
	return f
}

// run records a delivery d of k1 on proc: its claim (resp, owner written,
// prev found), the operation's run with result, and nothing after.
func (f *mixedHistory) run(proc, d string, r history.Reader, resp history.Resp, owner, prev string) *mixedHistory {
	lease := f.ms + 3000
	f.add(proc, history.Event{Ev: history.KindDeliver, D: d, Msg: "m-" + d, Rc: 1, Key: "k1", Deadline: lease * int64(time.Millisecond)})
	f.add(proc, history.Event{Ev: history.KindClaim, D: d, Reader: r, Resp: resp, Owner: owner, Prev: prev, Lease: lease, Exp: f.ms + 86_400_000})
	return f.add(proc, history.Event{Ev: history.KindOpStart, D: d, Owner: owner})
}

// done records the end of d's run with result, its completion (resp),
// its outcome and its acknowledgement.
func (f *mixedHistory) done(proc, d, owner, result, outcome string) *mixedHistory {
	f.add(proc, history.Event{Ev: history.KindOpEnd, D: d, Resp: history.RespOK, Result: result})
	f.add(proc, history.Event{Ev: history.KindComplete, D: d, Owner: owner, Resp: history.RespOK, Result: result})
	f.add(proc, history.Event{Ev: history.KindOutcome, D: d, Outcome: outcome, Ran: true})
	return f.add(proc, history.Event{Ev: history.KindAck, D: d, Result: result})
}

func (f *mixedHistory) judge(t *testing.T) *Report {
	t.Helper()
	procs := []history.Event{
		{Ev: history.KindProc, Proc: "p", Seq: 0, Reader: history.ReaderPowertoolsTS},
		{Ev: history.KindProc, Proc: "s", Seq: 0, Reader: history.ReaderSqsonce},
	}
	h := history.New(history.Header{Ev: history.KindHeader, Version: history.Version, Run: "judge", Seed: 1, Profile: "mixed",
		SkewMargin: int64(time.Second)}, append(procs, f.events...))
	r := &Report{Profile: Profile{Name: "mixed"}}
	r.judge(history.Check(h), map[string]history.Reader{"p": history.ReaderPowertoolsTS, "s": history.ReaderSqsonce})
	return r
}

// TestJudgeBlamesTheBreakingWrite: a violation is a finding about
// Powertools only when the write that broke the promise is Powertools'
// own, not when a sqsonce write broke it next to a Powertools write.
func TestJudgeBlamesTheBreakingWrite(t *testing.T) {
	t.Run("sqsonce breaks it beside a Powertools write", func(t *testing.T) {
		// Powertools runs k1 and completes it; then sqsonce claims the
		// completed record as if it were free, runs and completes it
		// again: sqsonce's claim and completion broke the promise, though
		// every violation shows Powertools' completion too.
		f := &mixedHistory{}
		f.at(1000).run("p", "d1", history.ReaderPowertoolsTS, history.RespClaimed, "", "")
		f.at(1100).done("p", "d1", "", "r1", history.OutcomeClaimed)
		f.at(2000).run("s", "d2", history.ReaderSqsonce, history.RespClaimed, "o2", "")
		f.at(2100).done("s", "d2", "o2", "r2", history.OutcomeClaimed)
		f.at(9000).add("harness", history.Event{Ev: history.KindFinal, Key: "k1", Status: history.StatusCompleted, Result: "r2", Owner: "o2"})
		r := f.judge(t)
		if len(r.Findings) > 0 {
			t.Errorf("findings about Powertools, for what sqsonce broke:\n%s", strings.Join(r.Findings, "\n"))
		}
		if !anyContains(r.Violations, "two completions of one record succeeded") || !anyContains(r.Violations, "at_most_once") {
			t.Errorf("violations:\n%s\nwant sqsonce's second completion and second run among them", strings.Join(r.Violations, "\n"))
		}
	})
	t.Run("Powertools breaks it", func(t *testing.T) {
		// Powertools claims k1 and runs long; sqsonce takes the lapsed
		// claim over, runs and completes; Powertools' completion, not
		// conditional, then writes over sqsonce's result: a finding.
		f := &mixedHistory{}
		f.at(1000).run("p", "d1", history.ReaderPowertoolsTS, history.RespClaimed, "", "")
		f.at(5000).run("s", "d2", history.ReaderSqsonce, history.RespTakenOver, "o2", "")
		f.at(5100).done("s", "d2", "o2", "r2", history.OutcomeTakenOver)
		f.at(5200).done("p", "d1", "", "r1", history.OutcomeClaimed)
		f.at(9000).add("harness", history.Event{Ev: history.KindFinal, Key: "k1", Status: history.StatusCompleted, Result: "r1"})
		r := f.judge(t)
		if len(r.Violations) > 0 {
			t.Errorf("violations counted against sqsonce, for what Powertools' completion broke:\n%s", strings.Join(r.Violations, "\n"))
		}
		if !anyContains(r.Findings, "two completions of one record succeeded") {
			t.Errorf("findings:\n%s\nwant Powertools' completion over sqsonce's among them", strings.Join(r.Findings, "\n"))
		}
	})
}

// anyContains reports whether some line of lines contains s.
func anyContains(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
