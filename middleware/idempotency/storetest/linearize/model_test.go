package linearize

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Times are milliseconds; a claim's lease ends 4 s after it was made, its
// record expires a day after.
const (
	leaseFor = 4000
	day      = 24 * 3600 * 1000
)

func claimRec(owner string, now int64) Record {
	return Record{Status: InProgress, Owner: owner, Expires: now + day, Lease: now + leaseFor, Validation: "v"}
}

// strictRec is a strict claim: its lease in StrictLease, Lease at its expiry.
func strictRec(owner string, now int64) Record {
	r := claimRec(owner, now)
	r.StrictLease, r.Lease = r.Lease, r.Expires
	return r
}

func completedRec(owner string, claimedAt int64, data string) Record {
	return Record{Status: Completed, Owner: owner, Expires: claimedAt + day, Validation: "v", Data: data}
}

func quarantinedRec(r Record, at int64) Record {
	r.Quarantined, r.Lease = at, r.Expires
	return r
}

// op is an operation of client c on record "k", called at call (also its
// Now) and returned 5 ms later.
func op(c int, call int64, in Input, out Output) Op {
	in.ID = "k"
	if in.Now == 0 {
		in.Now = call
	}
	return Op{Client: c, Call: call, Return: call + 5, Input: in, Output: out}
}

func claim(r Record) Input       { return Input{Kind: Claim, Rec: r} }
func strictClaim(r Record) Input { return Input{Kind: Claim, Rec: r, NoTakeover: true} }
func complete(owner, data string, claimedAt int64) Input {
	return Input{Kind: Complete, Rec: Record{Owner: owner, Data: data, Expires: claimedAt + day}}
}
func release(owner string) Input    { return Input{Kind: Release, Rec: Record{Owner: owner}} }
func quarantine(found Record) Input { return Input{Kind: Quarantine, Rec: found} }
func extend(owner string, to int64) Input {
	return Input{Kind: Extend, Rec: Record{Owner: owner, Lease: to}}
}
func read() Input { return Input{Kind: Read} }

var (
	ok      = Output{Result: OK}
	refused = Output{Result: Refused}
	unknown = Output{Result: Unknown}
	none    = Output{Result: NotFound}
)

func found(r Record) Output    { return Output{Result: Refused, Rec: r} }
func replaced(r Record) Output { return Output{Result: OK, Rec: r} }
func got(r Record) Output      { return Output{Result: OK, Rec: r} }

func TestModel(t *testing.T) {
	a0, b5 := claimRec("A", 0), claimRec("B", 5000)
	tests := []struct {
		name  string
		grain int64
		ops   []Op
		want  bool // linearizable
	}{
		{"claim, complete, a duplicate finds the result", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), Output{Result: OK, Rec: Record{Data: "r1"}}),
			op(1, 200, claim(claimRec("B", 200)), found(completedRec("A", 0, "r1"))),
		}, true},
		{"two successful claims by two owners on a live lease", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 20, claim(claimRec("B", 20)), ok),
		}, false},
		{"two successful claims on a live lease, concurrent", 0, []Op{
			{Client: 0, Call: 0, Return: 30, Input: Input{ID: "k", Kind: Claim, Now: 0, Rec: a0}, Output: ok},
			{Client: 1, Call: 10, Return: 40, Input: Input{ID: "k", Kind: Claim, Now: 10, Rec: claimRec("B", 10)}, Output: ok},
		}, false},
		{"concurrent claims: one wins, the other finds its claim", 0, []Op{
			{Client: 0, Call: 0, Return: 30, Input: Input{ID: "k", Kind: Claim, Now: 0, Rec: a0}, Output: ok},
			{Client: 1, Call: 10, Return: 40, Input: Input{ID: "k", Kind: Claim, Now: 10, Rec: claimRec("B", 10)}, Output: found(a0)},
		}, true},
		{"a claim refused by a record that never was", 0, []Op{
			op(1, 10, claim(claimRec("B", 10)), found(a0)),
		}, false},
		{"a takeover after the lease, and the late completion refused", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 5000, claim(b5), replaced(a0)),
			op(0, 5100, complete("A", "r1", 0), refused),
			op(1, 5200, complete("B", "r2", 5000), ok),
		}, true},
		{"a late completion over the new owner's claim", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 5000, claim(b5), replaced(a0)),
			op(0, 5100, complete("A", "r1", 0), ok),
		}, false},
		{"a takeover that reports the wrong record replaced", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 5000, claim(b5), replaced(claimRec("C", 0))),
		}, false},
		{"a strict claim takes a lapsed claim over", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 5000, strictClaim(strictRec("B", 5000)), ok),
		}, false},
		{"a strict claim finds a lapsed claim", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 5000, strictClaim(strictRec("B", 5000)), found(a0)),
		}, true},
		{"a default claim takes a lapsed strict claim over", 0, []Op{
			op(0, 0, strictClaim(strictRec("A", 0)), ok),
			op(1, 5000, claim(b5), ok),
		}, false},
		{"a lapsed strict claim quarantined, then found so", 0, []Op{
			op(0, 0, strictClaim(strictRec("A", 0)), ok),
			op(1, 5000, quarantine(strictRec("A", 0)), got(quarantinedRec(strictRec("A", 0), 5000))),
			op(2, 6000, claim(claimRec("C", 6000)), found(quarantinedRec(strictRec("A", 0), 5000))),
		}, true},
		{"a quarantined claim taken over", 0, []Op{
			op(0, 0, strictClaim(strictRec("A", 0)), ok),
			op(1, 5000, quarantine(strictRec("A", 0)), got(quarantinedRec(strictRec("A", 0), 5000))),
			op(2, 6000, claim(claimRec("C", 6000)), ok),
		}, false},
		{"a quarantine of a live lease", 0, []Op{
			op(0, 0, strictClaim(strictRec("A", 0)), ok),
			op(1, 1000, quarantine(strictRec("A", 0)), got(quarantinedRec(strictRec("A", 0), 1000))),
		}, false},
		{"a quarantine of a claim that was taken over", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 5000, claim(b5), replaced(a0)),
			op(2, 6000, quarantine(a0), got(quarantinedRec(a0, 6000))),
		}, false},
		{"a quarantine refused: the claim was taken over", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 5000, claim(b5), replaced(a0)),
			op(2, 6000, quarantine(a0), found(b5)),
		}, true},
		{"the quarantined claim's owner completes it", 0, []Op{
			op(0, 0, strictClaim(strictRec("A", 0)), ok),
			op(1, 5000, quarantine(strictRec("A", 0)), got(quarantinedRec(strictRec("A", 0), 5000))),
			op(0, 5100, complete("A", "r1", 0), ok),
			op(2, 6000, read(), got(completedRec("A", 0, "r1"))),
		}, true},
		{"a completion by an owner that never claimed", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 100, complete("B", "r2", 0), ok),
		}, false},
		{"a completion made again by its owner", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), ok),
			op(0, 200, complete("A", "r1", 0), Output{Result: OK, Rec: Record{Data: "r1"}}),
		}, true},
		{"a completion made again answered with another result", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), ok),
			op(0, 200, complete("A", "r1", 0), Output{Result: OK, Rec: Record{Data: "r9"}}),
		}, false},
		{"a release by another owner", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 100, release("B"), ok),
		}, false},
		{"a release, then a fresh claim", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, release("A"), ok),
			op(1, 200, claim(claimRec("B", 200)), replaced(Record{})),
		}, true},
		{"a claim made again by its owner", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 10, claim(a0), ok),
			op(1, 20, claim(claimRec("B", 20)), found(a0)),
		}, true},
		{"an extended lease taken over before its new end", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 3000, extend("A", 9000), ok),
			op(1, 5000, claim(b5), ok),
		}, false},
		{"an extended lease, found live", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 3000, extend("A", 9000), ok),
			op(1, 5000, claim(b5), found(Record{Status: InProgress, Owner: "A", Expires: day, Lease: 9000, Validation: "v"})),
		}, true},
		{"an extension of a lapsed lease nobody took over", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 5000, extend("A", 9000), ok),
			op(1, 6000, claim(claimRec("B", 6000)), found(Record{Status: InProgress, Owner: "A", Expires: day, Lease: 9000, Validation: "v"})),
		}, true},
		{"an extension of a lapsed lease after a takeover", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 5000, claim(b5), replaced(a0)),
			op(0, 5500, extend("A", 9000), ok),
		}, false},
		{"an extension by another owner", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, 1000, extend("B", 9000), ok),
		}, false},
		{"a strict claim's extension moves its strict lease", 0, []Op{
			op(0, 0, strictClaim(strictRec("A", 0)), ok),
			op(0, 3000, extend("A", 9000), ok),
			op(1, 5000, quarantine(strictRec("A", 0)), found(Record{Status: InProgress, Owner: "A", Expires: day, Lease: day, StrictLease: 9000, Validation: "v"})),
		}, true},
		{"a claim's answer lost, then another claim wins", 0, []Op{
			op(0, 0, claim(a0), unknown),
			op(1, 100, claim(claimRec("B", 100)), replaced(Record{})),
		}, true},
		{"a claim's answer lost, then another finds it", 0, []Op{
			op(0, 0, claim(a0), unknown),
			op(1, 100, claim(claimRec("B", 100)), found(a0)),
		}, true},
		{"a claim's answer lost: applied after a read found nothing", 0, []Op{
			op(0, 0, claim(a0), unknown),
			op(1, 100, read(), none),
			op(1, 200, read(), got(a0)),
		}, true},
		{"a claim's answer lost: its claim seen, then gone", 0, []Op{
			op(0, 0, claim(a0), unknown),
			op(1, 100, read(), got(a0)),
			op(1, 200, read(), none),
		}, false},
		{"a completion's answer lost: completed or not", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), unknown),
			op(1, 200, read(), got(a0)),
			op(1, 300, read(), got(completedRec("A", 0, "r1"))),
		}, true},
		{"a completion's answer lost: completed, then in progress again", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), unknown),
			op(1, 200, read(), got(completedRec("A", 0, "r1"))),
			op(1, 300, read(), got(a0)),
		}, false},
		{"a release retried by its client, its first attempt applied", 0, append([]Op{
			op(0, 0, claim(a0), ok)},
			Resent(op(0, 100, release("A"), refused))...,
		), true},
		{"a release refused to its owner, not retried", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, release("A"), refused),
		}, false},
		{"an expired record swept away", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), ok),
			op(1, day+1000, read(), none),
		}, true},
		{"a live record swept away", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), ok),
			op(1, day-1000, read(), none),
		}, false},
		{"a strict claim after its store's clock swept the record, at an earlier now", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, day-1000, Input{Kind: Claim, NoTakeover: true, Rec: strictRec("B", day-1000), Swept: day + 500}, ok),
		}, true},
		{"a strict claim after a sweep before the record's expiry", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, day-1000, Input{Kind: Claim, NoTakeover: true, Rec: strictRec("B", day-1000), Swept: day - 500}, ok),
		}, false},
		{"a record not yet swept when the store's clock is past its expiry", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(1, day-1000, Input{Kind: Claim, NoTakeover: true, Rec: strictRec("B", day-1000), Swept: day + 500}, found(a0)),
		}, true},
		{"an expiry kept in seconds: live for a second after it", 1000, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), ok),
			op(1, day+500, claim(claimRec("B", day+500)), found(completedRec("A", 0, "r1"))),
		}, true},
		{"an expiry kept in seconds: not live a second after it", 1000, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), ok),
			op(1, day+1000, claim(claimRec("B", day+1000)), found(completedRec("A", 0, "r1"))),
		}, false},
		{"an exact expiry: not live after it", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), ok),
			op(1, day+1, claim(claimRec("B", day+1)), found(completedRec("A", 0, "r1"))),
		}, false},
		{"an exact expiry: either, at the instant", 0, []Op{
			op(0, 0, claim(a0), ok),
			op(0, 100, complete("A", "r1", 0), ok),
			op(1, day, claim(claimRec("B", day)), found(completedRec("A", 0, "r1"))),
			op(2, day, claim(claimRec("C", day)), replaced(completedRec("A", 0, "r1"))),
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, info := Check(tt.ops, tt.grain, 10*time.Second)
			want := porcupine.Illegal
			if tt.want {
				want = porcupine.Ok
			}
			if res != want {
				var b bytes.Buffer
				_ = Visualize(&b, tt.grain, info)
				t.Errorf("%v, want %v (porcupine's page: %d bytes)", res, want, b.Len())
			}
		})
	}
}

// TestPartition: records are checked one by one: two owners claiming two
// records both win; a violation on one record is found among others.
func TestPartition(t *testing.T) {
	at := func(id string, o Op) Op { o.Input.ID = id; return o }
	okOps := []Op{
		at("k1", op(0, 0, claim(claimRec("A", 0)), ok)),
		at("k2", op(1, 10, claim(claimRec("B", 10)), ok)),
	}
	if res, _ := Check(okOps, 0, 0); res != porcupine.Ok {
		t.Errorf("two records, one claim each: %v", res)
	}
	bad := append(okOps, at("k2", op(2, 20, claim(claimRec("C", 20)), ok)))
	if res, _ := Check(bad, 0, 0); res != porcupine.Illegal {
		t.Errorf("a second live claim of k2: %v", res)
	}
}

// TestVisualize: the page of a failed check names the operations and
// states as the model describes them (in its JSON, ">" is \u003e).
func TestVisualize(t *testing.T) {
	_, info := Check([]Op{
		op(0, 0, claim(claimRec("A", 0)), ok),
		op(1, 20, claim(claimRec("B", 20)), ok),
	}, 0, 0)
	var b bytes.Buffer
	if err := Visualize(&b, 0, info); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<html", `claim(A, lease 4000, expires 86400000) at 0 -\u003e ok`, "{INPROGRESS A expires 86400000 lease 4000}"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in the page (%d bytes)", want, b.Len())
		}
	}
}

// TestOperations: an unknown answer returns at the end of time, others
// when they did.
func TestOperations(t *testing.T) {
	ops := Operations([]Op{op(0, 0, claim(claimRec("A", 0)), unknown), op(0, 100, read(), none)})
	if ops[0].Return != 1<<63-1 || ops[1].Return != 105 {
		t.Errorf("returns %d, %d", ops[0].Return, ops[1].Return)
	}
	if r := Resent(op(0, 0, release("A"), refused)); len(r) != 2 || r[0].Output.Result != Unknown || r[1].Output.Result != Refused {
		t.Errorf("Resent: %+v", r)
	}
}

// TestUnknownNotApplied: the model itself lets an unknown answer be one
// that was never applied, even where the operation returns when its
// client gave up rather than at the end of time.
func TestUnknownNotApplied(t *testing.T) {
	ops := []porcupine.Operation{
		{ClientId: 0, Call: 0, Return: 5, Input: Input{ID: "k", Kind: Claim, Now: 0, Rec: claimRec("A", 0)}, Output: unknown},
		{ClientId: 1, Call: 100, Return: 105, Input: Input{ID: "k", Kind: Read, Now: 100}, Output: none},
	}
	if !porcupine.CheckOperations(Model(0), ops) {
		t.Error("a lost claim, then no record: not linearizable")
	}
	ops[1].Output = got(claimRec("A", 0))
	if !porcupine.CheckOperations(Model(0), ops) {
		t.Error("a lost claim, then its record: not linearizable")
	}
	ops[1].Output = got(claimRec("B", 0))
	if porcupine.CheckOperations(Model(0), ops) {
		t.Error("a lost claim, then another's record: linearizable")
	}
}
