package chaos

import (
	"flag"
	"testing"

	"github.com/sqsonce/sqsonce/test/history"
)

var (
	mixed     = flag.Bool("chaos.mixed", false, "run TestShortProfileMixed, the mixed fleet with Powertools TS workers")
	mixedSeed = flag.Uint64("chaos.seed", 1, "the seed of TestShortProfileMixed")
)

// TestShortProfileMixed runs the mixed fleet: a sqsonce default guard, a
// sqsonce strict guard and a Powertools TS worker (the pinned package) on
// one table in Powertools' format, under every fault, Powertools' runs kept
// inside their lease. The history's checker holds every property across
// the three readers (a strict claim is never taken over by a default guard
// or by Powertools; every acknowledgement saw the stored result, whoever
// stored it); each kind of worker must have run and acknowledged some keys.
// What Powertools itself writes against the promise is logged as a finding.
//
// It takes about 75 s (a minute of it the drain), longer than make test's
// chaos budget: make verify runs it (with -chaos.mixed), then the long
// mixed-peer profile (cmd/chaos -profiles mixed-peer:on).
func TestShortProfileMixed(t *testing.T) {
	if !*mixed {
		t.Skip("the mixed fleet takes about 75 s: make verify runs it (-chaos.mixed)")
	}
	p := ShortMixed(*mixedSeed)
	r := runProfile(t, p)
	if r == nil {
		return
	}
	for _, k := range []history.Reader{history.ReaderSqsonce, history.ReaderSqsonceStrict, history.ReaderPowertoolsTS} {
		if r.RunsBy[k] == 0 || r.AcksBy[k] == 0 {
			t.Errorf("%s workers began %d runs and acknowledged %d deliveries: the fleet was not mixed", k, r.RunsBy[k], r.AcksBy[k])
		}
	}
	if r.Completed+r.DLQKeys != p.Keys {
		t.Errorf("%d keys completed and %d in the DLQ, want %d in all", r.Completed, r.DLQKeys, p.Keys)
	}
}
