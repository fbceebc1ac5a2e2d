package chaos

import (
	"bytes"
	"slices"
	"testing"

	"github.com/sqsonce/sqsonce/test/history"
)

// TestEntriesOf writes a worker's history as the worker does, cuts its last
// line short as a SIGKILL during a write could, reads it back and checks the
// account's view of it: runs named by their result, or by their delivery
// when they returned none; an acknowledgement closes its record; the
// worker's own kill counted, another's not; claims granted and extensions
// applied, not those refused.
func TestEntriesOf(t *testing.T) {
	var buf bytes.Buffer
	w, err := history.NewWriter(&buf, history.Header{Run: "r", Proc: "w0.0"}, history.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(
		history.Event{Ev: history.KindProc, Reader: history.ReaderSqsonce},
		history.Event{Ev: history.KindDeliver, D: "w0.0/1", Msg: "m1", Key: "k1", Rc: 2},
		history.Event{Ev: history.KindDeliver, D: "w0.0/2", Msg: "m2", Key: "k2", Rc: 1},
		history.Event{Ev: history.KindClaim, D: "w0.0/1", Resp: history.RespClaimed, Owner: "o1"},
		history.Event{Ev: history.KindOpStart, D: "w0.0/1", Owner: "o1"},
		history.Event{Ev: history.KindOpStart, D: "w0.0/2", Owner: "o2"},
		history.Event{Ev: history.KindExtend, D: "w0.0/1", Resp: history.RespOK, Owner: "o1"},
		history.Event{Ev: history.KindExtend, D: "w0.0/2", Resp: history.RespLeaseLost, Owner: "o2"},
		history.Event{Ev: history.KindOpEnd, D: "w0.0/1", Resp: history.RespOK, Result: "w0.0-1"},
		history.Event{Ev: history.KindOpEnd, D: "w0.0/2", Resp: history.RespError, Err: "deadline"},
		history.Event{Ev: history.KindOutcome, D: "w0.0/1", Outcome: "claimed", Ran: true},
		history.Event{Ev: history.KindOutcome, D: "w0.0/2", Outcome: "released", Ran: true, Class: "operation"},
		history.Event{Ev: history.KindFail, D: "w0.0/2", Class: "operation"},
		history.Event{Ev: history.KindAck, D: "w0.0/1", Result: "w0.0-1"},
		history.Event{Ev: history.KindFault, Fault: history.FaultProcKill, Target: "w1.0", Class: "random"},
		history.Event{Ev: history.KindFault, Fault: history.FaultProcKill, Target: "w0.0", Class: "deadline"},
	); err != nil {
		t.Fatal(err)
	}
	buf.WriteString(`{"seq":17,"t":1,"proc":"w0.0","ev":"exi`)
	f, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Truncated {
		t.Error("the cut line was not reported")
	}
	var got []string
	for _, e := range entriesOf(f) {
		got = append(got, e.Ev+" "+e.Msg+" "+e.Key+" "+e.Run+" "+e.Outcome+" "+e.Class)
	}
	want := []string{
		"recv m1 k1 w0.0-1  ",
		"recv m2 k2 w0.0/2  ",
		"claim m1 k1 w0.0-1  ",
		"op_start m1 k1 w0.0-1  ",
		"op_start m2 k2 w0.0/2  ",
		"extend m1 k1 w0.0-1  ",
		"op_done m1 k1 w0.0-1  ",
		"op_fail m2 k2 w0.0/2  ",
		"outcome m1 k1 w0.0-1 claimed ",
		"outcome m2 k2 w0.0/2 released operation",
		"record m2 k2 w0.0/2  operation",
		"record m1 k1   ",
		"ack m1 k1 w0.0-1  ",
		"kill     deadline",
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries:\n%q\nwant\n%q", got, want)
	}
}
