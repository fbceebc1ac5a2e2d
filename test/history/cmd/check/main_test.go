package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/test/history"
)

// writeRun writes a two-process run to dir: w1 runs key k1 and is
// acknowledged with result r1; w2 receives a duplicate, finds the record
// completed and is acknowledged with ackResult.
func writeRun(t *testing.T, dir, ackResult string) {
	t.Helper()
	hdr := history.Header{Run: "r", Seed: 9, Profile: "p", SkewMargin: 1e9, Replay: "go run ./test/chaos/cmd/chaos -seed 9"}
	open := func(proc string) *history.Writer {
		h := hdr
		h.Proc = proc
		w, err := history.Create(filepath.Join(dir, proc+".jsonl"), h, history.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w1, w2 := open("w1"), open("w2")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w1.Write(
		history.Event{T: 1, Ev: history.KindDeliver, D: "d1", Key: "k1"},
		history.Event{T: 2, Ev: history.KindClaim, D: "d1", Reader: history.ReaderSqsonce, Resp: history.RespClaimed, Owner: "o1", Lease: 5000, Exp: 9e9},
		history.Event{T: 3, Ev: history.KindOpStart, D: "d1", Owner: "o1"},
		history.Event{T: 4, Ev: history.KindOpEnd, D: "d1", Resp: history.RespOK, Result: "r1"},
		history.Event{T: 5, Ev: history.KindComplete, D: "d1", Owner: "o1", Resp: history.RespOK, Result: "r1"},
		history.Event{T: 6, Ev: history.KindOutcome, D: "d1", Outcome: history.OutcomeClaimed, Ran: true},
		history.Event{T: 7, Ev: history.KindAck, D: "d1", Result: "r1"},
	))
	must(w2.Write(
		history.Event{T: 8, Ev: history.KindDeliver, D: "d2", Key: "k1"},
		history.Event{T: 9, Ev: history.KindClaim, D: "d2", Reader: history.ReaderSqsonce, Resp: history.RespReplayed, Result: "r1"},
		history.Event{T: 10, Ev: history.KindOutcome, D: "d2", Outcome: history.OutcomeReplayed},
		history.Event{T: 11, Ev: history.KindAck, D: "d2", Result: ackResult},
	))
	must(w1.Close())
	must(w2.Close())
}

func TestRun(t *testing.T) {
	for _, tt := range []struct {
		name      string
		ackResult string
		code      int
		want      []string
	}{
		{"pass", "r1", 0, []string{"verdict: PASS", "ack_saw_stored       2        0", "replay: go run ./test/chaos/cmd/chaos -seed 9"}},
		{"fail", "r0", 1, []string{"verdict: FAIL, 1 violation", "ack_saw_stored: 1 violation", `#11 w2:4 {"seq":4,"t":11,"proc":"w2","ev":"ack","d":"d2","result":"r0"}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeRun(t, dir, tt.ackResult)
			var out, errs bytes.Buffer
			if code := run([]string{dir}, &out, &errs); code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, errs.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in:\n%s", w, out.String())
				}
			}
		})
	}
	var out, errs bytes.Buffer
	if code := run([]string{filepath.Join(t.TempDir(), "none.jsonl")}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "none.jsonl") {
		t.Errorf("a missing file: exit %d, stderr %q", code, errs.String())
	}
	if code := run(nil, &out, &errs); code != 2 {
		t.Errorf("no argument: exit %d", code)
	}
}
