package chaos

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// idOf is the record id of key, as the workers' guard makes it.
func idOf(t *testing.T, key string) string {
	t.Helper()
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	k, err := idempotency.Select(idempotency.BodyField(KeyField), events.SQSMessage{Body: `{"idempotency_key":"` + key + `"}`})
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAccount feeds the account hand-made logs and checks that it finds
// exactly the broken promises in them.
func TestAccount(t *testing.T) {
	const k = "k0001"
	completed := func(run string) map[string]storedRecord {
		return map[string]storedRecord{idOf(t, k): {Status: "COMPLETED", Run: run, Key: k}}
	}
	inProgress := map[string]storedRecord{idOf(t, k): {Status: "INPROGRESS"}}
	recv := func(msg string, at int64) entry { return entry{T: at, Ev: evRecv, Msg: msg, Key: k, N: 1} }
	run := func(ev, msg, id string, at int64) entry { return entry{T: at, Ev: ev, Msg: msg, Key: k, Run: id} }
	claimed := func(msg, id string, at int64) entry {
		return entry{T: at, Ev: evOutcome, Msg: msg, Key: k, Run: id, Ran: true, Outcome: "claimed"}
	}
	record := func(msg, class string, at int64) entry {
		return entry{T: at, Ev: evRecord, Msg: msg, Key: k, Class: class}
	}
	ack := func(msg, id string, at int64) entry { return entry{T: at, Ev: evAck, Msg: msg, Key: k, Run: id} }

	tests := []struct {
		name    string
		incs    []incarnation
		logs    map[string][]entry
		records map[string]storedRecord
		dlq     []dlqMessage
		want    []string // substrings of the violations, in order
		check   func(t *testing.T, r *Report)
	}{{
		name: "one run, acknowledged",
		incs: []incarnation{{Name: "a"}},
		logs: map[string][]entry{"a": {
			recv("m1", 1), run(evOpStart, "m1", "a-1", 2), run(evOpDone, "m1", "a-1", 3), claimed("m1", "a-1", 4), record("m1", "", 5), ack("m1", "a-1", 6),
		}},
		records: completed("a-1"),
		check: func(t *testing.T, r *Report) {
			if r.RunsDone != 1 || r.Acks != 1 || r.Completed != 1 || r.ExtraRuns != 0 {
				t.Errorf("runs %d, acks %d, completed %d, extra %d; want 1, 1, 1, 0", r.RunsDone, r.Acks, r.Completed, r.ExtraRuns)
			}
		},
	}, {
		name: "second run after a kill between operation and completion",
		incs: []incarnation{{Name: "a", Killed: true, Random: true}, {Name: "b"}},
		logs: map[string][]entry{
			"a": {recv("m1", 1), run(evOpStart, "m1", "a-1", 2), run(evOpDone, "m1", "a-1", 3)},
			"b": {recv("m1", 10), run(evOpStart, "m1", "b-1", 11), run(evOpDone, "m1", "b-1", 12), claimed("m1", "b-1", 13), record("m1", "", 14), ack("m1", "b-1", 15)},
		},
		records: completed("b-1"),
		check: func(t *testing.T, r *Report) {
			if r.ExtraRuns != 1 || r.ExtraKill != 1 {
				t.Errorf("extra runs %d (killed %d), want 1 (1)", r.ExtraRuns, r.ExtraKill)
			}
		},
	}, {
		name: "second run the kill does not explain",
		incs: []incarnation{{Name: "a"}, {Name: "b"}},
		logs: map[string][]entry{
			"a": {recv("m1", 1), run(evOpStart, "m1", "a-1", 2), run(evOpDone, "m1", "a-1", 3), claimed("m1", "a-1", 4)},
			"b": {recv("m2", 10), run(evOpStart, "m2", "b-1", 11), run(evOpDone, "m2", "b-1", 12), claimed("m2", "b-1", 13)},
		},
		records: completed("b-1"),
		want:    []string{"run a-1 finished in a and is not the stored result"},
	}, {
		name: "a killed worker whose completion was stored does not explain another run",
		incs: []incarnation{{Name: "a", Killed: true}, {Name: "b"}},
		logs: map[string][]entry{
			"a": {recv("m1", 1), run(evOpStart, "m1", "a-1", 2), run(evOpDone, "m1", "a-1", 3), claimed("m1", "a-1", 4)},
			"b": {recv("m2", 10), run(evOpStart, "m2", "b-1", 11), run(evOpDone, "m2", "b-1", 12), claimed("m2", "b-1", 13)},
		},
		records: completed("b-1"),
		want:    []string{"run a-1 finished in a"},
	}, {
		name: "second run reported as double_run by the worker that outlived its lease",
		incs: []incarnation{{Name: "a"}, {Name: "b"}},
		logs: map[string][]entry{
			"a": {recv("m1", 1), run(evOpStart, "m1", "a-1", 2), run(evOpDone, "m1", "a-1", 30),
				{T: 31, Ev: evOutcome, Msg: "m1", Key: k, Run: "a-1", Ran: true, Outcome: "double_run"}, record("m1", "", 32), ack("m1", "b-1", 33)},
			"b": {recv("m2", 10), run(evOpStart, "m2", "b-1", 11), run(evOpDone, "m2", "b-1", 12), {T: 13, Ev: evOutcome, Msg: "m2", Key: k, Run: "b-1", Ran: true, Outcome: "taken_over"},
				record("m2", "", 14), ack("m2", "b-1", 15)},
		},
		records: completed("b-1"),
		check: func(t *testing.T, r *Report) {
			if r.ExtraRuns != 1 || r.ExtraDouble != 1 || r.DoubleRuns != 1 {
				t.Errorf("extra runs %d (double_run %d), double_run outcomes %d; want 1 (1), 1", r.ExtraRuns, r.ExtraDouble, r.DoubleRuns)
			}
		},
	}, {
		name: "double_run reported by the run whose result is stored",
		incs: []incarnation{{Name: "a"}},
		logs: map[string][]entry{"a": {
			recv("m1", 1), run(evOpStart, "m1", "a-1", 2), run(evOpDone, "m1", "a-1", 3),
			{T: 4, Ev: evOutcome, Msg: "m1", Key: k, Run: "a-1", Ran: true, Outcome: "double_run"}, ack("m1", "a-1", 6),
		}},
		records: completed("a-1"),
		want:    []string{"run a-1 reported double_run, yet its result is the stored one"},
	}, {
		name: "acknowledged with another result",
		incs: []incarnation{{Name: "a"}},
		logs: map[string][]entry{"a": {
			recv("m1", 1), run(evOpStart, "m1", "a-1", 2), run(evOpDone, "m1", "a-1", 3), claimed("m1", "a-1", 4), ack("m1", "a-2", 6),
		}},
		records: completed("a-1"),
		want:    []string{`acknowledged with the result of run "a-2", the stored one is "a-1"`},
	}, {
		name:    "acknowledged while in progress",
		incs:    []incarnation{{Name: "a"}},
		logs:    map[string][]entry{"a": {recv("m1", 1), ack("m1", "", 2)}},
		records: inProgress,
		want:    []string{`acknowledged but the key is "INPROGRESS"`, "neither COMPLETED"},
	}, {
		name: "lost key",
		incs: []incarnation{{Name: "a"}},
		logs: map[string][]entry{"a": {recv("m1", 1), record("m1", "in_progress", 2)}},
		want: []string{`neither COMPLETED ("") nor in the DLQ`},
	}, {
		name: "key in the DLQ with its reason",
		incs: []incarnation{{Name: "a"}},
		logs: map[string][]entry{"a": {recv("m1", 1), record("m1", "in_progress", 2)}},
		dlq:  []dlqMessage{{Msg: "m1", Key: k}},
		check: func(t *testing.T, r *Report) {
			if r.DLQKeys != 1 || r.DLQReasons["in_progress"] != 1 {
				t.Errorf("DLQ keys %d, reasons %v; want 1, in_progress:1", r.DLQKeys, r.DLQReasons)
			}
		},
	}, {
		name: "key in the DLQ without a reason",
		incs: []incarnation{{Name: "a"}},
		logs: map[string][]entry{"a": {recv("m1", 1)}},
		dlq:  []dlqMessage{{Msg: "m1", Key: k}},
		want: []string{"no log explains its last failure"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Profile{Name: "test", Keys: 1}
			sends := []sent{{Msg: "m1", Key: k, Kind: "first"}, {Msg: "m2", Key: k, Kind: "resend"}}
			r, err := account(p, sends, tt.incs, tt.logs, tt.records, tt.dlq, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Violations) != len(tt.want) {
				t.Fatalf("violations:\n%s\nwant %d: %q", strings.Join(r.Violations, "\n"), len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(r.Violations[i], w) {
					t.Errorf("violation %d = %q, want it to contain %q", i, r.Violations[i], w)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestAccountTakenOverLive: a claim taken over while its owner's operation
// ran, in a worker that was not killed, is a taken-over live owner, and a
// broken promise in a profile whose guards keep claims alive; one taken
// over after its operation returned, or from a killed worker, is not.
// Extensions are counted per claim.
func TestAccountTakenOverLive(t *testing.T) {
	const k = "k0001"
	for _, tc := range []struct {
		name     string
		returned int64 // when the first owner's operation returned
		killed   bool
		want     int
	}{
		{"owner still running", 8, false, 1},
		{"owner had returned", 4, false, 0},
		{"owner's worker killed", 8, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := map[string][]entry{
				"a": {
					{T: 1, Ev: evRecv, D: "a/1", Msg: "m1", Key: k, N: 1},
					{T: 2, Ev: evClaim, D: "a/1", Msg: "m1", Key: k, Owner: "o1"},
					{T: 3, Ev: evExtend, D: "a/1", Msg: "m1", Key: k, Owner: "o1"},
					{T: 3, Ev: evExtend, D: "a/1", Msg: "m1", Key: k, Owner: "o1"},
					{T: 2, Ev: evOpStart, D: "a/1", Msg: "m1", Key: k},
					{T: tc.returned, Ev: evOpFail, D: "a/1", Msg: "m1", Key: k, Err: "x"},
					{T: tc.returned + 1, Ev: evOutcome, D: "a/1", Msg: "m1", Key: k, Outcome: "released", Err: "x"},
				},
				"b": {
					{T: 5, Ev: evRecv, D: "b/1", Msg: "m1", Key: k, N: 2},
					{T: 5, Ev: evClaim, D: "b/1", Msg: "m1", Key: k, Owner: "o2", Prev: "o1"},
					{T: 6, Ev: evExtend, D: "b/1", Msg: "m1", Key: k, Owner: "o2"},
				},
			}
			incs := []incarnation{{Name: "a", Killed: tc.killed}, {Name: "b"}}
			r, err := account(Profile{Name: "test", Keys: 1, KeepAlive: true}, []sent{{Msg: "m1", Key: k, Kind: "first"}}, incs, logs, nil, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if r.TakenOverLive != tc.want || r.TakeoversTotal != 1 || r.Extensions != 3 || r.MaxExtensions != 2 {
				t.Errorf("taken-over live owners %d of %d takeovers, extensions %d (max %d); want %d of 1, 3 (2)",
					r.TakenOverLive, r.TakeoversTotal, r.Extensions, r.MaxExtensions, tc.want)
			}
			found := strings.Contains(strings.Join(r.Violations, "\n"), "taken over while their owner lived")
			if found != (tc.want > 0) {
				t.Errorf("violations:\n%s\nwant the taken-over live owner reported: %v", strings.Join(r.Violations, "\n"), tc.want > 0)
			}
		})
	}
}
