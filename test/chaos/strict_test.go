package chaos

import "testing"

// TestShortProfileStrict runs the strict profile: workers SIGKILLed at
// random and between an operation and its completion, the guard in strict
// mode. No key's operation may start a second time (but after a run that
// failed and was released), and every key is COMPLETED or quarantined
// after at most one run; the run must have quarantined some.
func TestShortProfileStrict(t *testing.T) {
	p := ShortStrict(1)
	r := runProfile(t, p)
	if r == nil {
		return
	}
	switch {
	case r.SecondRuns != 0:
		t.Errorf("%d second runs in strict mode", r.SecondRuns)
	case r.Quarantined == 0 || r.QuarantineEvents == 0:
		t.Errorf("no key was quarantined (%d outcomes): the run did not exercise strict mode; kills %v", r.QuarantineEvents, r.Kills)
	case r.Completed+r.Quarantined != p.Keys:
		t.Errorf("%d keys completed and %d quarantined, want %d in all", r.Completed, r.Quarantined, p.Keys)
	case r.Kills["after_op"] == 0:
		t.Errorf("no worker was killed between an operation and its completion: %v", r.Kills)
	}
}
