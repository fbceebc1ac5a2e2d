package history

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// every is one event of each kind with every field it can carry set.
func every() []Event {
	return []Event{
		{Ev: KindProc, Reader: ReaderSqsonceStrict, Off: -int64(400 * time.Millisecond)},
		{Ev: KindDeliver, Inv: "i1", D: "w1/1", Msg: "m1", Rc: 3, Key: "k1"},
		{Ev: KindClaim, D: "w1/1", Reader: ReaderSqsonceStrict, Resp: RespTakenOver, Owner: "o1", Prev: "o0", Expired: true,
			Lease: 1_700_000_005_000, Exp: 1_700_086_400_000, Clock: 1_700_000_000_123_456_789},
		{Ev: KindOpStart, D: "w1/1", Owner: "o1"},
		{Ev: KindOpEnd, D: "w1/1", Resp: RespOK, Result: "sha256:ab"},
		{Ev: KindExtend, D: "w1/1", Owner: "o1", Lease: 1_700_000_009_000, Resp: RespOK},
		{Ev: KindComplete, D: "w1/1", Owner: "o1", Resp: RespOK, Result: "sha256:ab", Clock: 7},
		{Ev: KindRelease, D: "w1/1", Owner: "o1", Resp: RespLeaseLost, Err: "idempotency: lease lost"},
		{Ev: KindQuarantine, D: "w1/1", Key: "k2", Owner: "", Exp: 9, Lease: 8, Resp: RespOK},
		{Ev: KindOutcome, D: "w1/1", Outcome: OutcomeDoubleRun, Ran: true, Source: "store", Class: "in_progress", Err: "idempotency: in progress"},
		{Ev: KindAck, D: "w1/1", Result: "sha256:ab"},
		{Ev: KindFail, D: "w1/2", Class: "store_acquire"},
		{Ev: KindVisibility, D: "w1/2", Dur: int64(2 * time.Second), Err: "throttled"},
		{Ev: KindFault, Fault: FaultClockSkew, Target: "w2", Op: "PutItem", Dur: 5, Off: int64(time.Second)},
		{Ev: KindOperator, Key: "k2", Resp: RespOperatorResolve, Result: "sha256:cd"},
		{Ev: KindFinal, Key: "k2", Status: StatusInProgress, Owner: "o9", Exp: 9, Quarantined: true},
		{Ev: KindExit},
	}
}

// TestRoundTrip: what a Writer writes, Read reads back, header and events
// field for field, numbered and stamped by the writer.
func TestRoundTrip(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	hdr := Header{Run: "r1", Seed: 42, Profile: "all:on", Proc: "w1", SkewMargin: int64(time.Second), LeaseExtension: true,
		Replay: "go run ./test/chaos/cmd/chaos -profiles all:on -seed 42"}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, hdr, WriterOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	in := every()
	if err := w.Write(in[:3]...); err != nil { // one write, one time
		t.Fatal(err)
	}
	for _, e := range in[3:] {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(in[0]); err == nil {
		t.Error("Write after Close did not fail")
	}
	f, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	wantHdr := hdr
	wantHdr.Ev, wantHdr.Version, wantHdr.T = KindHeader, Version, time.Unix(1_700_000_000, int64(time.Millisecond)).UnixNano()
	if f.Header != wantHdr {
		t.Errorf("header %+v, want %+v", f.Header, wantHdr)
	}
	if f.Truncated {
		t.Error("Truncated on a whole file")
	}
	want := slices.Clone(in)
	for i := range want {
		want[i].Seq, want[i].Proc = uint64(i+1), "w1"
		ms := int64(2 + max(i-2, 0)) // the header's time is 1 ms; the first three share one
		want[i].T = time.Unix(1_700_000_000, ms*int64(time.Millisecond)).UnixNano()
	}
	if !reflect.DeepEqual(f.Events, want) {
		t.Errorf("read back:\n%+v\nwant:\n%+v", f.Events, want)
	}
	// Written again, the same bytes.
	var again bytes.Buffer
	w2, err := NewWriter(&again, f.Header, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range f.Events {
		if err := w2.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if again.String() != buf.String() {
		t.Errorf("rewritten:\n%s\nfirst:\n%s", again.String(), buf.String())
	}
}

// TestConcurrentWriters: many goroutines writing one file never interleave
// a line, and sequence numbers follow the file's order.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w1.jsonl")
	w, err := Create(path, Header{Run: "r", Proc: "w1"}, WriterOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				d := fmt.Sprintf("g%d/%d", g, i)
				if err := w.Write(Event{Ev: KindDeliver, D: d, Key: "k"}, Event{Ev: KindAck, D: d}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Events) != 2*goroutines*each {
		t.Fatalf("%d events, want %d", len(f.Events), 2*goroutines*each)
	}
	for i := 0; i < len(f.Events); i += 2 {
		a, b := f.Events[i], f.Events[i+1]
		if a.Seq != uint64(i+1) || b.Seq != uint64(i+2) || a.D != b.D || a.Ev != KindDeliver || b.Ev != KindAck {
			t.Fatalf("events %d and %d: %+v, %+v: one Write's events are not together and in order", i+1, i+2, a, b)
		}
	}
	if _, err := Create(path, Header{Run: "r", Proc: "w1"}, WriterOptions{}); err == nil {
		t.Error("Create over an existing file did not fail")
	}
}

// TestReadCutShort: a last line cut short by a kill is dropped and
// reported; a bad line anywhere else is an error naming it.
func TestReadCutShort(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Run: "r", Proc: "w1"}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Write(Event{Ev: KindDeliver, D: "d", Key: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	whole := buf.String()
	cut := whole[:len(whole)-10]
	f, err := Read(strings.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Truncated || len(f.Events) != 2 {
		t.Errorf("cut short: Truncated %v, %d events; want true, 2", f.Truncated, len(f.Events))
	}
	lines := strings.SplitAfter(whole, "\n")
	for _, tt := range []struct{ name, text, want string }{
		{"bad middle line", lines[0] + lines[1][:20] + "\n" + lines[2], "line 2"},
		{"unknown field", lines[0] + `{"seq":1,"t":1,"proc":"w1","ev":"ack","bogus":1}` + "\n", "line 2"},
		{"another process", lines[0] + strings.Replace(lines[1], `"w1"`, `"w2"`, 1), "process \"w2\""},
		{"sequence back", lines[0] + lines[2] + lines[1], "sequence number 1 after 2"},
		{"no header", lines[1], "header"},
		{"empty", "", "no header"},
		{"a header cut short", lines[0][:10], "header"},
		{"another version", strings.Replace(lines[0], `"version":1`, `"version":2`, 1), "version 2"},
	} {
		if _, err := Read(strings.NewReader(tt.text)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.want)
		}
	}
}

// TestMerge: files merge by time, each file's order kept even where its
// clock stepped back; files of another run are refused.
func TestMerge(t *testing.T) {
	dir := t.TempDir()
	write := func(proc string, run string, ts ...int64) {
		t.Helper()
		w, err := Create(filepath.Join(dir, proc+".jsonl"), Header{Run: run, Seed: 3, Profile: "p", Proc: proc}, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range ts {
			if err := w.Write(Event{Ev: KindFault, T: ts, Fault: FaultDelay}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "r", 10, 30, 25, 50) // a's clock stepped back at 25
	write("b", "r", 20, 30, 40)
	h, err := ReadFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, e := range h.Events {
		if e.Pos != i+1 {
			t.Errorf("event %d has Pos %d", i+1, e.Pos)
		}
		got = append(got, fmt.Sprintf("%s%d@%d", e.Proc, e.Seq, e.T))
	}
	want := []string{"a1@10", "b1@20", "a2@30", "a3@25", "b2@30", "b3@40", "a4@50"}
	if !slices.Equal(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	if h.Header.Run != "r" || h.Header.Seed != 3 || h.Header.Proc != "" || !slices.Equal(h.Procs, []string{"a", "b"}) {
		t.Errorf("header %+v, procs %v", h.Header, h.Procs)
	}
	write("c", "other", 5)
	if _, err := ReadFiles(dir); err == nil || !strings.Contains(err.Error(), `run "other"`) {
		t.Errorf("a file of another run: error %v", err)
	}
	os.Remove(filepath.Join(dir, "c.jsonl"))
	if _, err := ReadFiles(filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "a.jsonl")); err == nil {
		t.Error("one process's file twice: no error")
	}
}
