package history

import "testing"

// breaker returns the event a violation of p in v names as its breaker,
// nil when none does.
func breaker(t *testing.T, v *Verdict, p Property) *Event {
	t.Helper()
	for _, x := range v.Result(p).Violations {
		for i := range x.Events {
			if x.Events[i].Pos == x.Breaker {
				return &x.Events[i]
			}
		}
		t.Errorf("%s: violation %q names breaker #%d, not among its events", p, x.Msg, x.Breaker)
	}
	return nil
}

// TestBreaker: each violation names the write that broke the promise,
// not a write beside it.
func TestBreaker(t *testing.T) {
	t.Run("a live lease taken over", func(t *testing.T) {
		v := Check(outlived(newScript("test"), 2000, 2500, ReaderSqsonce, OutcomeDoubleRun).history())
		if b := breaker(t, v, AtMostOnce); b == nil || b.Ev != KindClaim || b.Proc != "w2" {
			t.Errorf("at_most_once breaker %+v, want w2's takeover", b)
		}
	})
	t.Run("a claim after another worker's delete", func(t *testing.T) {
		// w1 claims, runs and completes; p deletes the record (a release
		// of no claim of its own); w2 then claims the free key and runs
		// again: p's delete broke at-most-once, not w2's claim.
		s := newScript("test")
		s.proc("w1", ReaderSqsonce).proc("p", ReaderPowertoolsTS).proc("w2", ReaderSqsonce)
		s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
		s.at(2000).deliver("p", "dp", "k1").release("p", "dp", "", RespOK)
		s.at(3000).firstRun("w2", "d2", "k1", "o2", "r2")
		s.at(9000).final("k1", StatusCompleted, "r2", "o2")
		v := Check(s.history())
		if b := breaker(t, v, AtMostOnce); b == nil || b.Ev != KindRelease || b.Proc != "p" {
			t.Errorf("at_most_once breaker %+v, want p's delete", b)
		}
		if b := breaker(t, v, OneResult); b == nil || b.Ev != KindRelease || b.Proc != "p" {
			t.Errorf("one_result breaker %+v, want p's delete, which let the second completion in", b)
		}
	})
	t.Run("a strict claim taken over", func(t *testing.T) {
		s := newScript("test")
		s.proc("w1", ReaderSqsonceStrict).proc("w2", ReaderSqsonce)
		s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonceStrict, RespClaimed, "o1", "")
		s.at(1100).start("w1", "d1", "o1")
		s.at(6000).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonce, RespTakenOver, "o2", "o1").start("w2", "d2", "o2")
		s.at(6100).end("w2", "d2", RespOK, "r2").complete("w2", "d2", "o2", RespOK, "r2")
		s.at(7000).final("k1", StatusCompleted, "r2", "o2")
		v := Check(s.history())
		if b := breaker(t, v, StrictOnce); b == nil || b.Ev != KindClaim || b.Proc != "w2" {
			t.Errorf("strict_once breaker %+v, want w2's takeover", b)
		}
	})
}
