package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/test/history"
)

// Profile is the shape of one chaos run: the load, the timing and the
// faults. Runs of one profile with one seed draw the same faults and sends.
type Profile struct {
	Name    string
	Keys    int // distinct idempotency keys the producer sends
	Workers int // poller processes
	// Invocations is how many invocations each worker process runs at
	// once, each polling and handling its own batches with one shared guard
	// and handler, as aws-lambda-go does under AWS_LAMBDA_MAX_CONCURRENCY;
	// 0 means 1.
	Invocations int
	Seed        uint64 // seeds the producer, the proxy, the killer and the workers
	Pacing      bool   // pace redelivery with visibility changes
	SortKey     bool   // the table has a sort key; the store uses dynamostore.WithSortKey (see [TableKey])
	Strict      bool   // the sqsonce workers' guard runs in strict mode (idempotency.Config.Strict)

	// Mix is the kind of worker of each slot, in turn: slot i runs
	// Mix[i%len(Mix)]. Empty, every slot runs a sqsonce guard, in strict
	// mode with Strict. With a history.ReaderPowertoolsTS among them the
	// table is shared with Powertools for AWS Lambda (TypeScript): record
	// ids and results in its format (see [Profile.Shared]).
	Mix []history.Reader
	// PeerFaults gives the Powertools workers the faults that let a run
	// outlive its lease: slow operations and SIGKILLs between an operation
	// and its completion. Without it their runs stay inside their lease.
	PeerFaults bool
	// Require lists the properties the run must exercise: one that
	// checked no case fails the run, as a profile that did not do what it
	// is for.
	Require []history.Property

	Visibility  time.Duration // the queue's visibility timeout (whole seconds)
	MaxReceives int           // receives before the queue moves a message to the DLQ
	Timeout     time.Duration // the invocation deadline of each batch
	// NoDeadline runs the invocations without a deadline, as a worker
	// outside Lambda (or Managed Instances, where an operation may outlive
	// its invocation): the guard's lease is Lease from the claim.
	NoDeadline bool
	Lease      time.Duration // the guard's Config.Lease; zero: its default
	// KeepAlive lets the sqsonce guards keep their claims alive
	// (idempotency's default, Config.KeepAliveEvery zero); without it
	// keep-alive is off, as every profile ran before the recording store
	// passed Extend through. With Pacing on, the batch handler also keeps
	// the running records' messages invisible (batch.KeepVisible).
	KeepAlive    bool
	MinRemaining time.Duration // batch.Options.MinRemaining
	BatchSize    int32         // messages per receive, at most 10

	OpMin, OpMax     time.Duration // an operation's duration
	SlowProb         float64       // the chance of a slow operation, SlowMin..SlowMax:
	SlowMin, SlowMax time.Duration // longer than the visibility timeout, so the message comes back mid-run

	SendOver       time.Duration // first sends are spread over this
	ResendProb     float64       // the chance a key is re-sent (new message, same key, attempt 2)
	ResendAfterMax time.Duration // ...up to this long after its first send
	DuplicateProb  float64       // the chance a key's first message is sent twice, byte for byte

	// Faults run from the start for FaultsFor; then the run drains.
	FaultsFor       time.Duration
	KillEvery       time.Duration // mean interval between SIGKILLs of a random worker; 0 for none
	KillAfterOpProb float64       // the chance a worker SIGKILLs itself between an operation and its completion
	ShortProb       float64       // the chance a batch gets a short deadline, ShortMin..ShortMax
	ShortMin        time.Duration
	ShortMax        time.Duration
	Store           StoreFaults // injected by the proxy in front of DynamoDB

	// ClockSkew sets each sqsonce worker process's clock (the guard's) off
	// by a seeded draw in [-ClockSkew, +ClockSkew]; SkewMargin is the
	// guard's Config.SkewMargin, which must cover twice ClockSkew. A
	// Powertools worker's clock is the host's.
	ClockSkew  time.Duration
	SkewMargin time.Duration

	Drain time.Duration // the longest the queue may take to empty after the faults end
}

// Reader returns the kind of worker slot i runs (see [Profile.Mix]).
func (p Profile) Reader(slot int) history.Reader {
	if len(p.Mix) > 0 {
		return p.Mix[slot%len(p.Mix)]
	}
	if p.Strict {
		return history.ReaderSqsonceStrict
	}
	return history.ReaderSqsonce
}

// readers returns the kinds of worker the run's slots run.
func (p Profile) readers() []history.Reader {
	var out []history.Reader
	for i := range max(p.Workers, 1) {
		if r := p.Reader(i); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// Shared reports whether the table is shared with Powertools TS: some
// slot runs a Powertools worker, so that every worker keys, hashes and
// stores results as Powertools does.
func (p Profile) Shared() bool { return slices.Contains(p.readers(), history.ReaderPowertoolsTS) }

// anyStrict reports whether some worker claims in strict mode.
func (p Profile) anyStrict() bool { return slices.Contains(p.readers(), history.ReaderSqsonceStrict) }

// replay is the command that repeats the run: the same profile, pacing,
// seed, keys, workers and table layout.
func (p Profile) replay() string {
	cmd := fmt.Sprintf("go run ./test/chaos/cmd/chaos -profiles %s:%s -seed %d -keys %d -workers %d", p.Name, onOff(p.Pacing), p.Seed, p.Keys, p.Workers)
	if p.SortKey {
		cmd += " -sort-key"
	}
	return cmd
}

// base is the timing every profile shares: visibility 2 s and a 4 s
// invocation deadline, so slow operations outlive their message's
// visibility and still finish, and 8 receives before the DLQ. The
// producer sends for about a second per 12 keys (moto_server on a shared
// machine serves a few dozen requests a second), and re-sends up to
// ResendAfterMax later; faults last until the last send and 2 s more.
func base(name string, keys, workers int, seed uint64) Profile {
	p := Profile{
		Name: name, Keys: keys, Workers: workers, Seed: seed,
		Visibility:   2 * time.Second,
		MaxReceives:  8,
		Timeout:      4 * time.Second,
		MinRemaining: 300 * time.Millisecond,
		BatchSize:    10,
		OpMin:        50 * time.Millisecond, OpMax: 400 * time.Millisecond,
		SlowProb: 0.05, SlowMin: 2200 * time.Millisecond, SlowMax: 3200 * time.Millisecond,
		ResendProb: 0.3, ResendAfterMax: 6 * time.Second, DuplicateProb: 0.2,
		SkewMargin: time.Second,
		Drain:      2 * time.Minute,
		Require:    slices.Clone(everyRun),
	}
	p.SendOver = time.Duration(keys) * time.Second / 12
	p.FaultsFor = p.SendOver + p.ResendAfterMax + 2*time.Second
	return p
}

// everyRun are the properties every run exercises: runs, completions,
// acknowledgements of stored results and of replays, failed calls.
var everyRun = []history.Property{
	history.AtMostOnce, history.OneResult, history.AckSawStored, history.AckCompleted,
	history.PayloadValidated, history.FailureNotAcked, history.DoubleRunReported,
}

// The faults of the process and store profiles, which the others combine.
func processFaults(p *Profile) {
	p.KillEvery = 1500 * time.Millisecond
	p.KillAfterOpProb = 0.04
	p.ShortProb, p.ShortMin, p.ShortMax = 0.1, 200*time.Millisecond, 900*time.Millisecond
	p.ClockSkew = 400 * time.Millisecond
}

func storeFaults(p *Profile) {
	p.Store = StoreFaults{ServerError: 0.04, Throttle: 0.04, ResetBefore: 0.03, ResetAfter: 0.05}
}

// profileDef is one named profile: what it is for, and how to make it for
// a number of keys and workers and a seed.
type profileDef struct {
	name, doc string
	make      func(keys, workers int, seed uint64) Profile
}

// profileTable lists every profile, in the order [Profiles] returns them.
// To add a profile, add a line: its name, what it is for, and a function
// that adjusts base or another profile. ProfileByName, the chaos
// command's -profiles flag and its help find it here.
var profileTable = []profileDef{
	{"process", "workers SIGKILLed at random moments and between an operation and its completion, short deadlines, slow operations, clocks up to 400 ms apart (the guard's skew margin is 1 s); no store faults", processProfile},
	{"store", "the proxy in front of DynamoDB answers 5xx and ThrottlingException, resets connections before forwarding and after the write was applied; rare kills", storeProfile},
	{"all", "process and store at once", allProfile},
	{"lambda", "all, with the shipped stack's proportions: a 3 s invocation deadline and a visibility timeout six times that, 18 s", lambdaProfile},
	{"overrun", "process, with clocks up to 5 s apart, far beyond the guard's 1 s skew margin, and a quarter of the runs slow: double runs, each reported double_run (run it with pacing off)", overrunProfile},
	{"strict", "process in strict mode, with more kills between an operation and its completion: lapsed claims quarantined, never run again", strictProfile},
	{"mixed", "all on one table shared by sqsonce default and strict guards and Powertools TS workers (the pinned package), Powertools' runs kept inside their lease, one clock", mixedProfile},
	{"concurrent", "all, with four invocations at once in each worker process (Lambda Managed Instances): the invocations of a process share its guard, its flights and its handler; a kill ends them all", concurrentProfile},
	{"keepalive", "operations without a deadline that run 2.5 to 4 times the guard's 2 s lease, the guard keeping claims alive, store faults, no kills: no live owner may be taken over (taken-over live owners 0), extensions per run reported", keepAliveProfile},
	{"mixed-peer", "mixed, with Powertools' workers under every fault (slow operations, kills between an operation and its completion) and the sqsonce workers' clocks up to 400 ms apart", mixedPeerProfile},
}

func processProfile(keys, workers int, seed uint64) Profile {
	p := base("process", keys, workers, seed)
	processFaults(&p)
	return p
}

func storeProfile(keys, workers int, seed uint64) Profile {
	p := base("store", keys, workers, seed)
	p.KillEvery, p.KillAfterOpProb = 6*time.Second, 0.01
	storeFaults(&p)
	return p
}

func allProfile(keys, workers int, seed uint64) Profile {
	p := base("all", keys, workers, seed)
	processFaults(&p)
	storeFaults(&p)
	return p
}

// lambdaProfile has the proportions of the shipped stack: a visibility
// timeout six times the invocation's, so that a redelivery SQS times
// itself comes late. Operations never outlive the visibility; every other
// fault is as in all.
func lambdaProfile(keys, workers int, seed uint64) Profile {
	p := allProfile(keys, workers, seed)
	p.Name = "lambda"
	p.Timeout, p.Visibility = 3*time.Second, 18*time.Second
	p.MinRemaining = time.Second // room for the completion and the visibility changes
	p.SlowProb, p.SlowMin, p.SlowMax = 0.05, time.Second, 1800*time.Millisecond
	p.Drain = 5 * time.Minute
	return p
}

// overrunProfile: a worker whose clock runs ahead takes over live leases,
// so the operation of a key runs twice, as the promise allows when a
// worker outlives its lease (here: its lease as another clock reads it).
// Every such run must be reported double_run by the worker that lost the
// key, and no other promise may break. Paced redeliveries come back after
// the lease, and rarely meet the run.
func overrunProfile(keys, workers int, seed uint64) Profile {
	p := processProfile(keys, workers, seed)
	p.Name = "overrun"
	p.ClockSkew = 5 * time.Second
	p.SlowProb = 0.25 // slow runs outlive their message's visibility: the redelivery meets them
	return p
}

// strictProfile: a lapsed claim is quarantined, never run again: no second
// run of a key (but after a run that failed and was released), and every
// key not completed is quarantined after at most one run.
func strictProfile(keys, workers int, seed uint64) Profile {
	p := processProfile(keys, workers, seed)
	p.Name = "strict"
	p.Strict = true
	p.KillAfterOpProb = 0.1
	p.Require = append(p.Require, history.StrictOnce, history.QuarantineHolds)
	return p
}

// mixedProfile keeps Powertools' runs inside their lease (no slow
// operations and no kills between an operation and its completion on its
// workers, and one clock): what Powertools does there must keep the
// promise, and sqsonce's properties are checked strictly across the three
// kinds of reader. Whatever Powertools still writes over another worker's
// claim is reported as a finding about Powertools.
func mixedProfile(keys, workers int, seed uint64) Profile {
	p := allProfile(keys, workers, seed)
	p.Name = "mixed"
	p.Mix = []history.Reader{history.ReaderSqsonce, history.ReaderSqsonceStrict, history.ReaderPowertoolsTS}
	p.ClockSkew = 0
	p.KillAfterOpProb = 0.08
	p.Require = append(p.Require, history.StrictOnce, history.QuarantineHolds)
	// A Powertools incarnation loads node for seconds before it polls, and
	// strict workers quarantine what a killed worker left: 300 keys took
	// longer than 2 min to drain on a busy machine.
	p.Drain = 5 * time.Minute
	return p
}

// mixedPeerProfile gives Powertools the faults mixed keeps from it, and
// the sqsonce workers their clock skew: a sqsonce guard whose clock is
// ahead (by less than its own skew margin) can take over a Powertools
// claim, whose lease has no margin, and Powertools' completion and
// release, which are not conditional, then write over the new owner's
// claim. Those writes, and the violations they cause, are findings about
// Powertools; sqsonce's own properties must still hold.
func mixedPeerProfile(keys, workers int, seed uint64) Profile {
	p := mixedProfile(keys, workers, seed)
	p.Name = "mixed-peer"
	p.PeerFaults = true
	p.ClockSkew = 400 * time.Millisecond
	p.SlowProb = 0.15
	return p
}

// keepAliveProfile: operations run several times the lease their claim
// was granted (2 s, with no invocation deadline) while the guards keep
// their claims alive; the store's faults make some extensions fail and be
// tried again, and no worker is killed, so every owner lives: a takeover
// of a claim whose owner had not returned is a broken promise. Messages
// come back after the 2 s visibility timeout unless pacing keeps them
// invisible (run it with pacing on and off).
func keepAliveProfile(keys, workers int, seed uint64) Profile {
	p := base("keepalive", keys, workers, seed)
	// A 2 s lease: moto on a busy machine can take most of a second to
	// answer, and a 1 s lease then ends many operations (their extension
	// not applied in time) before they finish.
	p.NoDeadline, p.Lease, p.KeepAlive = true, 2*time.Second, true
	p.OpMin, p.OpMax = 5*time.Second, 8*time.Second
	p.SlowProb = 0
	p.Store = StoreFaults{ServerError: 0.02, Throttle: 0.02}
	p.Pacing = true
	return p
}

func concurrentProfile(keys, workers int, seed uint64) Profile {
	p := allProfile(keys, workers, seed)
	p.Name = "concurrent"
	p.Invocations = 4
	return p
}

// Profiles returns every profile of the table for keys keys and workers
// workers, in its order; see ProfileNames for what each is for.
func Profiles(keys, workers int, seed uint64) []Profile {
	out := make([]Profile, len(profileTable))
	for i, d := range profileTable {
		out[i] = d.make(keys, workers, seed)
	}
	return out
}

// ProfileNames returns every profile's name with what it is for, the short
// ones go test runs included.
func ProfileNames() [][2]string {
	var out [][2]string
	for _, d := range profileTable {
		out = append(out, [2]string{d.name, d.doc})
	}
	for _, d := range shortTable {
		out = append(out, [2]string{d.name, d.doc})
	}
	return out
}

// shortTable lists the profiles go test runs, each about 30 s on an idle
// machine (short-mixed about 75 s: only with -chaos.mixed), with their own
// keys and workers whatever is asked.
var shortTable = []profileDef{
	{"short", "all on 100 keys and three workers, pacing on (go test)", func(_, _ int, seed uint64) Profile {
		p := allProfile(100, 3, seed)
		p.Name = "short"
		p.Pacing = true
		p.Drain = 60 * time.Second
		return p
	}},
	{"short-strict", "strict on 60 keys and three workers, pacing off (go test)", func(_, _ int, seed uint64) Profile {
		p := strictProfile(60, 3, seed)
		p.Name = "short-strict"
		p.Drain = 60 * time.Second
		return p
	}},
	{"short-mixed", "mixed on 60 keys and three workers, one of each kind, pacing on (go test)", func(_, _ int, seed uint64) Profile {
		p := mixedProfile(60, 3, seed)
		p.Name = "short-mixed"
		p.Pacing = true
		p.Drain = 60 * time.Second
		return p
	}},
}

// Short is the profile `go test` runs: every fault at once on 100 keys and
// three workers, with pacing on.
func Short(seed uint64) Profile { return mustProfile("short", 0, 0, seed) }

// ShortStrict is the strict profile `go test` runs: 60 keys, three
// workers, pacing off.
func ShortStrict(seed uint64) Profile { return mustProfile("short-strict", 0, 0, seed) }

// ShortMixed is the mixed fleet `go test -chaos.mixed` runs: 60 keys, one
// worker of each kind, pacing on.
func ShortMixed(seed uint64) Profile { return mustProfile("short-mixed", 0, 0, seed) }

func mustProfile(name string, keys, workers int, seed uint64) Profile {
	p, err := ProfileByName(name, keys, workers, seed)
	if err != nil {
		panic(err)
	}
	return p
}

// ProfileByName returns the profile called name (see ProfileNames). A
// suffix ":on" or ":off" sets its pacing.
func ProfileByName(name string, keys, workers int, seed uint64) (Profile, error) {
	name, pacing, paced := strings.Cut(name, ":")
	if paced && pacing != "on" && pacing != "off" {
		return Profile{}, fmt.Errorf("chaos: profile %s: pacing %q: want on or off", name, pacing)
	}
	for _, d := range append(slices.Clone(profileTable), shortTable...) {
		if d.name != name {
			continue
		}
		p := d.make(keys, workers, seed)
		if paced {
			p.Pacing = pacing == "on"
		}
		return p, nil
	}
	var names []string
	for _, n := range ProfileNames() {
		names = append(names, n[0])
	}
	return Profile{}, fmt.Errorf("chaos: unknown profile %q (want one of %s)", name, strings.Join(names, ", "))
}

func (p Profile) validate() error {
	switch {
	case p.Keys <= 0 || p.Workers <= 0:
		return fmt.Errorf("chaos: profile %s: keys and workers must be positive", p.Name)
	case p.Visibility < time.Second || p.Visibility%time.Second != 0:
		return fmt.Errorf("chaos: profile %s: visibility %v is not a whole number of seconds", p.Name, p.Visibility)
	case p.BatchSize < 1 || p.BatchSize > 10:
		return fmt.Errorf("chaos: profile %s: batch size %d is not in 1..10", p.Name, p.BatchSize)
	case p.MaxReceives < 1:
		return fmt.Errorf("chaos: profile %s: max receives %d", p.Name, p.MaxReceives)
	case p.SkewMargin <= 0:
		return fmt.Errorf("chaos: profile %s: skew margin %v is not positive", p.Name, p.SkewMargin)
	case p.Shared() && p.SortKey:
		return fmt.Errorf("chaos: profile %s: a table shared with Powertools is keyed by id only here", p.Name)
	}
	for _, r := range p.Mix {
		if r != history.ReaderSqsonce && r != history.ReaderSqsonceStrict && r != history.ReaderPowertoolsTS {
			return fmt.Errorf("chaos: profile %s: unknown worker kind %q", p.Name, r)
		}
	}
	return nil
}
