package chaos

import (
	"fmt"
	"strings"
	"time"
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
	Strict      bool   // the workers' guard runs in strict mode (idempotency.Config.Strict)

	Visibility   time.Duration // the queue's visibility timeout (whole seconds)
	MaxReceives  int           // receives before the queue moves a message to the DLQ
	Timeout      time.Duration // the invocation deadline of each batch
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

	// ClockSkew sets each worker process's clock (the guard's) off by a
	// seeded draw in [-ClockSkew, +ClockSkew]; SkewMargin is the guard's
	// Config.SkewMargin, which must cover twice ClockSkew.
	ClockSkew  time.Duration
	SkewMargin time.Duration

	Drain time.Duration // the longest the queue may take to empty after the faults end
}

// base is the timing every profile shares: visibility 2 s and a 4 s
// invocation deadline, so slow operations outlive their message's
// visibility and still finish, and 8 receives before the DLQ.
func base(name string, keys, workers int, seed uint64) Profile {
	return Profile{
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
	}
}

// Profiles returns the named fault profiles for keys keys:
//
//   - process: workers SIGKILLed at random moments and between an operation
//     and its completion, short deadlines, slow operations, clocks up to
//     400 ms apart (the guard's skew margin is 1 s); no store faults.
//   - store: the proxy in front of DynamoDB answers 5xx and
//     ThrottlingException, resets connections before forwarding and after
//     the write was applied; rare kills.
//   - all: both at once.
//   - lambda: all, with the shipped stack's proportions: a 3 s invocation
//     deadline and a visibility timeout six times that, 18 s.
//   - overrun: process, with clocks up to 10 s apart, far beyond the guard's
//     1 s skew margin, and a quarter of the runs slow: a worker whose clock
//     runs ahead takes over live leases, so the operation of a key runs
//     twice, as the promise allows when a worker outlives its lease (here:
//     its lease as another clock reads it). Every such run must be
//     reported double_run by the worker that lost the key, and no other
//     promise may break. Run it with pacing off: paced redeliveries come
//     back after the lease, and rarely meet the run.
//   - strict: process in strict mode, with more kills between an operation
//     and its completion: a lapsed claim is quarantined, never run again.
//     The account then allows no second run of a key (only after a run
//     that failed and was released), and every key not completed must be
//     quarantined after at most one run.
//   - concurrent: all, with four invocations at once in each worker process
//     (Lambda Managed Instances): the invocations of a process share its
//     guard, its flights and its handler; a kill ends them all.
func Profiles(keys, workers int, seed uint64) []Profile {
	// The producer sends for about a second per 12 keys (moto_server on a
	// shared machine serves a few dozen requests a second), and re-sends up
	// to ResendAfterMax later; faults last until the last send and 2 s more.
	send := time.Duration(keys) * time.Second / 12
	faults := send + base("", 0, 0, 0).ResendAfterMax + 2*time.Second
	process := base("process", keys, workers, seed)
	process.SendOver, process.FaultsFor = send, faults
	process.KillEvery = 1500 * time.Millisecond
	process.KillAfterOpProb = 0.04
	process.ShortProb, process.ShortMin, process.ShortMax = 0.1, 200*time.Millisecond, 900*time.Millisecond
	process.ClockSkew = 400 * time.Millisecond

	store := base("store", keys, workers, seed)
	store.SendOver, store.FaultsFor = send, faults
	store.KillEvery = 6 * time.Second
	store.KillAfterOpProb = 0.01
	store.Store = StoreFaults{ServerError: 0.04, Throttle: 0.04, ResetBefore: 0.03, ResetAfter: 0.05}

	all := base("all", keys, workers, seed)
	all.SendOver, all.FaultsFor = send, faults
	all.KillEvery, all.KillAfterOpProb = process.KillEvery, process.KillAfterOpProb
	all.ShortProb, all.ShortMin, all.ShortMax = process.ShortProb, process.ShortMin, process.ShortMax
	all.Store = store.Store
	all.ClockSkew = process.ClockSkew

	// lambda has the proportions of the shipped stack: a visibility timeout
	// six times the invocation's, so that a redelivery SQS times itself
	// comes late. Operations never outlive the visibility; every other fault
	// is as in all.
	lambda := all
	lambda.Name = "lambda"
	lambda.Timeout, lambda.Visibility = 3*time.Second, 18*time.Second
	lambda.MinRemaining = time.Second // room for the completion and the visibility changes
	lambda.SlowProb, lambda.SlowMin, lambda.SlowMax = 0.05, time.Second, 1800*time.Millisecond
	lambda.Drain = 5 * time.Minute

	overrun := process
	overrun.Name = "overrun"
	overrun.ClockSkew = 5 * time.Second
	overrun.SlowProb = 0.25 // slow runs outlive their message's visibility: the redelivery meets them
	strict := process
	strict.Name = "strict"
	strict.Strict = true
	strict.KillAfterOpProb = 0.1
	concurrent := all
	concurrent.Name = "concurrent"
	concurrent.Invocations = 4
	return []Profile{process, store, all, lambda, overrun, strict, concurrent}
}

// ShortStrict is the strict profile `go test` runs: 60 keys, three
// workers, pacing off, about 30 s on an idle machine.
func ShortStrict(seed uint64) Profile {
	p := Profiles(60, 3, seed)[5] // strict
	p.Name = "short-strict"
	p.Drain = 60 * time.Second
	return p
}

// Short is the profile `go test` runs: every fault at once on 100 keys and
// three workers, with pacing on, about 30 s on an idle machine.
func Short(seed uint64) Profile {
	p := Profiles(100, 3, seed)[2] // all
	p.Name = "short"
	p.Pacing = true
	p.Drain = 60 * time.Second
	return p
}

// ProfileByName returns the profile called name ("process", "store",
// "all", "lambda", "overrun", "strict", "concurrent", "short" or "short-strict"). A suffix ":on" or ":off" sets its pacing.
func ProfileByName(name string, keys, workers int, seed uint64) (Profile, error) {
	name, pacing, paced := strings.Cut(name, ":")
	if paced && pacing != "on" && pacing != "off" {
		return Profile{}, fmt.Errorf("chaos: profile %s: pacing %q: want on or off", name, pacing)
	}
	ps := append(Profiles(keys, workers, seed), Short(seed), ShortStrict(seed))
	for _, p := range ps {
		if p.Name == name {
			if paced {
				p.Pacing = pacing == "on"
			}
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("chaos: unknown profile %q (want process, store, all, lambda, overrun, strict, concurrent, short or short-strict)", name)
}

func (p Profile) validate() error {
	switch {
	case p.Keys <= 0 || p.Workers <= 0 || p.Invocations < 0:
		return fmt.Errorf("chaos: profile %s: keys and workers must be positive, invocations not negative", p.Name)
	case p.Visibility < time.Second || p.Visibility%time.Second != 0:
		return fmt.Errorf("chaos: profile %s: visibility %v is not a whole number of seconds", p.Name, p.Visibility)
	case p.BatchSize < 1 || p.BatchSize > 10:
		return fmt.Errorf("chaos: profile %s: batch size %d is not in 1..10", p.Name, p.BatchSize)
	case p.MaxReceives < 1:
		return fmt.Errorf("chaos: profile %s: max receives %d", p.Name, p.MaxReceives)
	case p.SkewMargin <= 0:
		return fmt.Errorf("chaos: profile %s: skew margin %v is not positive", p.Name, p.SkewMargin)
	}
	return nil
}
