package history

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// violated returns the properties v found violated.
func violated(v *Verdict) []Property {
	var out []Property
	for _, r := range v.Results {
		if len(r.Violations) > 0 {
			out = append(out, r.Property)
		}
	}
	return out
}

func report(t *testing.T, v *Verdict) string {
	t.Helper()
	var b strings.Builder
	if err := v.Write(&b, 5); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// outlived is the promise's first exception, for a worker that outlives
// its lease: w1 claims at 1 s (lease end 5 s, its deadline 4 s), w2 takes
// the lapsed claim over at takeover, runs and completes; w1's run ends at
// w1End and its completion finds the lease lost, so its call replays w2's
// result and reports double_run.
func outlived(s *script, takeover, w1End int64, w1 Reader, w1Outcome string) *script {
	s.proc("w1", w1).proc("w2", ReaderSqsonce)
	s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", w1, RespClaimed, "o1", "")
	s.at(1100).start("w1", "d1", "o1")
	s.at(takeover).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonce, RespTakenOver, "o2", "o1")
	s.at(takeover+50).start("w2", "d2", "o2")
	s.at(takeover+100).end("w2", "d2", RespOK, "r2").complete("w2", "d2", "o2", RespOK, "r2").
		outcome("w2", "d2", OutcomeTakenOver, true, "").ack("w2", "d2", "r2")
	s.at(w1End).end("w1", "d1", RespOK, "r1")
	s.at(w1End+50).complete("w1", "d1", "o1", RespLeaseLost, "").replayed("w1", "d1", w1, "r2").
		outcome("w1", "d1", w1Outcome, true, "")
	if w1Outcome == OutcomeDoubleRun {
		s.ack("w1", "d1", "r2")
	}
	s.at(w1End+1000).final("k1", StatusCompleted, "r2", "o2")
	return s
}

// TestPropertiesCatch builds, for each property, a history that breaks it
// and the same history repaired: the broken one violates exactly the
// properties listed, the repaired one none, and checks the property.
func TestPropertiesCatch(t *testing.T) {
	tests := []struct {
		name     string
		property Property
		build    func(s *script, broken bool)
		want     []Property // violated by the broken history
	}{
		{
			name: "a live lease taken over", property: AtMostOnce,
			// Broken: w2 takes w1's claim over at 2 s, while w1's lease
			// (to 5 s) runs; w1's completion at 2.55 s, before its 4 s
			// deadline, finds it lost. Repaired: the takeover at 5.1 s,
			// w1's completion at 5.35 s, after its deadline: it
			// outlived its lease.
			build: func(s *script, broken bool) {
				if broken {
					outlived(s, 2000, 2500, ReaderSqsonce, OutcomeDoubleRun)
				} else {
					outlived(s, 5100, 5300, ReaderSqsonce, OutcomeDoubleRun)
				}
			},
			want: []Property{AtMostOnce},
		},
		{
			name: "a strict claim taken over by a default guard", property: StrictOnce,
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonceStrict).proc("w2", ReaderSqsonce)
				s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonceStrict, RespClaimed, "o1", "")
				s.at(1100).start("w1", "d1", "o1")
				s.at(1200).fault("harness", FaultProcKill, "w1", 0)
				s.at(6000).deliver("w2", "d2", "k1")
				if broken {
					s.claim("w2", "d2", ReaderSqsonce, RespTakenOver, "o2", "o1").start("w2", "d2", "o2")
					s.at(6100).end("w2", "d2", RespOK, "r2").complete("w2", "d2", "o2", RespOK, "r2").
						outcome("w2", "d2", OutcomeTakenOver, true, "").ack("w2", "d2", "r2")
					s.at(7000).final("k1", StatusCompleted, "r2", "o2")
				} else {
					s.claim("w2", "d2", ReaderSqsonce, RespInProgress, "", "o1").quarantine("w2", "d2", "o1", 1000, RespOK).
						outcome("w2", "d2", OutcomeQuarantined, false, "quarantined").fail("w2", "d2", "quarantined")
					s.at(7000).final("k1", StatusInProgress, "", "o1")
				}
			},
			want: []Property{StrictOnce},
		},
		{
			name: "the record keeps another result", property: OneResult,
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				if broken {
					s.at(2000).final("k1", StatusCompleted, "r9", "o1")
				} else {
					s.at(2000).final("k1", StatusCompleted, "r1", "o1")
				}
			},
			want: []Property{OneResult},
		},
		{
			name: "the owner fence dropped from completion", property: OneResult,
			// Broken: w1's late completion overwrites the record that w2
			// took over and completed. Repaired: it finds its lease lost.
			build: func(s *script, broken bool) {
				if !broken {
					outlived(s, 5100, 5400, ReaderSqsonce, OutcomeDoubleRun)
					return
				}
				s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
				s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonce, RespClaimed, "o1", "")
				s.at(1100).start("w1", "d1", "o1")
				s.at(5100).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonce, RespTakenOver, "o2", "o1")
				s.at(5150).start("w2", "d2", "o2")
				s.at(5200).end("w2", "d2", RespOK, "r2").complete("w2", "d2", "o2", RespOK, "r2").
					outcome("w2", "d2", OutcomeTakenOver, true, "").ack("w2", "d2", "r2")
				s.at(5400).end("w1", "d1", RespOK, "r1")
				s.at(5450).complete("w1", "d1", "o1", RespOK, "r1").outcome("w1", "d1", OutcomeClaimed, true, "").ack("w1", "d1", "r1")
				s.at(6400).final("k1", StatusCompleted, "r1", "o1")
			},
			want: []Property{AtMostOnce, OneResult, AckSawStored, DoubleRunReported},
		},
		{
			name: "a claim answered with another result", property: OneResult,
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				result := "r1"
				if broken {
					result = "r0"
				}
				s.at(2000).deliver("w2", "d2", "k1").replayed("w2", "d2", ReaderSqsonce, result).
					outcome("w2", "d2", OutcomeReplayed, false, "").ack("w2", "d2", result)
			},
			want: []Property{OneResult, AckSawStored},
		},
		{
			name: "a completion's answer lost, the result seen by a replay", property: AckSawStored,
			// w1's completion was applied but every answer lost; no final
			// record is read: w2's replay shows what was stored.
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
				s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonce, RespClaimed, "o1", "")
				s.at(1100).start("w1", "d1", "o1")
				s.at(1400).end("w1", "d1", RespOK, "r1").complete("w1", "d1", "o1", RespError, "").
					complete("w1", "d1", "o1", RespError, "").outcome("w1", "d1", OutcomeFailed, true, "store_complete").
					fail("w1", "d1", "store_complete")
				result := "r1"
				if broken {
					result = "r0"
				}
				s.at(2000).deliver("w2", "d2", "k1").replayed("w2", "d2", ReaderSqsonce, "r1").
					outcome("w2", "d2", OutcomeReplayed, false, "").ack("w2", "d2", result)
			},
			want: []Property{AckSawStored},
		},
		{
			name: "a cached result returned for another payload", property: PayloadValidated,
			// d1b reuses k1 with payload "q"; broken: w1's cache answers it.
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				s.at(2000).deliver("w1", "d1b", "k1").set("d1b", KindDeliver, func(e *Event) { e.Payload = "q" })
				if broken {
					s.shared("w1", "d1b", "cache").ack("w1", "d1b", "r1")
				} else {
					s.outcome("w1", "d1b", OutcomeMismatch, false, "mismatch").fail("w1", "d1b", "mismatch")
				}
			},
			want: []Property{PayloadValidated},
		},
		{
			name: "an acknowledgement with another result", property: AckSawStored,
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				result := "r1"
				if broken {
					result = "r0"
				}
				s.at(2000).deliver("w2", "d2", "k1").replayed("w2", "d2", ReaderSqsonce, "r1").
					outcome("w2", "d2", OutcomeReplayed, false, "").ack("w2", "d2", result)
			},
			want: []Property{AckSawStored},
		},
		{
			name: "an acknowledgement of a record in progress", property: AckCompleted,
			// Broken: the store answered w2's claim with w1's live claim,
			// yet the guard reported a replay and w2 was acknowledged.
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				s.at(1200).deliver("w2", "d2", "k1")
				if broken {
					s.claim("w2", "d2", ReaderSqsonce, RespInProgress, "", "o1")
				} else {
					s.replayed("w2", "d2", ReaderSqsonce, "r1")
				}
				s.at(1600).outcome("w2", "d2", OutcomeReplayed, false, "").ack("w2", "d2", "r1")
			},
			want: []Property{AckCompleted},
		},
		{
			name: "a run after a quarantine", property: QuarantineHolds,
			// w1's claim lapses (w1 killed); a strict w2 quarantines it.
			// Broken: the store lets w3 claim the key and w3 runs it.
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonceStrict).proc("w3", ReaderSqsonce)
				s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonce, RespClaimed, "o1", "")
				s.at(1100).start("w1", "d1", "o1")
				s.at(1200).fault("harness", FaultProcKill, "w1", 0)
				s.at(6000).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonceStrict, RespInProgress, "", "o1").
					quarantine("w2", "d2", "o1", 1000, RespOK).outcome("w2", "d2", OutcomeQuarantined, false, "quarantined").
					fail("w2", "d2", "quarantined")
				s.at(7000).deliver("w3", "d3", "k1")
				if broken {
					s.claim("w3", "d3", ReaderSqsonce, RespClaimed, "o3", "").start("w3", "d3", "o3")
					s.at(7100).end("w3", "d3", RespOK, "r3").complete("w3", "d3", "o3", RespOK, "r3").
						outcome("w3", "d3", OutcomeClaimed, true, "").ack("w3", "d3", "r3")
					s.at(8000).final("k1", StatusCompleted, "r3", "o3")
				} else {
					s.claim("w3", "d3", ReaderSqsonce, RespQuarantined, "", "o1").
						outcome("w3", "d3", OutcomeQuarantined, false, "quarantined").fail("w3", "d3", "quarantined")
					s.at(8000).final("k1", StatusInProgress, "", "o1")
				}
			},
			want: []Property{QuarantineHolds},
		},
		{
			name: "an in-progress delivery acknowledged", property: FailureNotAcked,
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				s.at(1200).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonce, RespInProgress, "", "o1").
					outcome("w2", "d2", OutcomeInProgress, false, "in_progress")
				if broken {
					s.ack("w2", "d2", "")
				} else {
					s.fail("w2", "d2", "in_progress")
				}
			},
			want: []Property{AckSawStored, AckCompleted, FailureNotAcked},
		},
		{
			name: "a failed replay acknowledged", property: FailureNotAcked,
			// The record was found completed, but the call failed (a
			// replay hook's error): only the outcome tells.
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				s.at(2000).deliver("w2", "d2", "k1").replayed("w2", "d2", ReaderSqsonce, "r1").
					outcome("w2", "d2", OutcomeFailed, false, "other")
				if broken {
					s.ack("w2", "d2", "r1")
				} else {
					s.fail("w2", "d2", "other")
				}
			},
			want: []Property{FailureNotAcked},
		},
		{
			name: "a double run reported as claimed", property: DoubleRunReported,
			// w1 outlives its lease; its call must not claim its result
			// was stored. (w1 is killed before its batch returns.)
			build: func(s *script, broken bool) {
				o := OutcomeDoubleRun
				if broken {
					o = OutcomeClaimed
				}
				outlived(s, 5100, 5300, ReaderSqsonce, o)
				s.at(5400).fault("harness", FaultProcKill, "w1", 0)
				if !broken {
					s.events = slices.DeleteFunc(s.events, func(e Event) bool { return e.Ev == KindAck && e.D == "d1" })
				}
			},
			want: []Property{DoubleRunReported},
		},
		{
			name: "the stored run reported as a double run", property: DoubleRunReported,
			build: func(s *script, broken bool) {
				s.proc("w1", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				if broken {
					for i, e := range s.events {
						if e.Ev == KindOutcome {
							s.events[i].Outcome = OutcomeDoubleRun
						}
					}
				}
			},
			want: []Property{DoubleRunReported},
		},
		{
			name: "a sealed result replayed by a guard without the Sealer", property: SealedHeld,
			// w1 (with a Sealer) stores r1 sealed; w2 (without one) finds
			// it. Broken: w2 replays the sealed text and acknowledges it.
			// Repaired: its call fails unsealed.
			build: func(s *script, broken bool) {
				s.add("w1", Event{Ev: KindProc, Reader: ReaderSqsonce, Sealer: true})
				s.proc("w2", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				s.at(2000).deliver("w2", "d2", "k1")
				s.add("w2", Event{Ev: KindClaim, D: "d2", Reader: ReaderSqsonce, Resp: RespReplayed, Result: "r1", Sealed: true})
				if broken {
					s.at(2100).outcome("w2", "d2", OutcomeReplayed, false, "").ack("w2", "d2", "(sealed text)")
				} else {
					s.at(2100).outcome("w2", "d2", OutcomeFailed, false, ClassUnsealed).fail("w2", "d2", ClassUnsealed)
				}
				s.at(3000).final("k1", StatusCompleted, "r1", "o1")
			},
			want: []Property{AckSawStored, SealedHeld},
		},
		{
			name: "a sealed result a guard with the Sealer cannot open", property: SealedHeld,
			build: func(s *script, broken bool) {
				s.add("w1", Event{Ev: KindProc, Reader: ReaderSqsonce, Sealer: true})
				s.add("w2", Event{Ev: KindProc, Reader: ReaderSqsonce, Sealer: true})
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				s.at(2000).deliver("w2", "d2", "k1")
				s.add("w2", Event{Ev: KindClaim, D: "d2", Reader: ReaderSqsonce, Resp: RespReplayed, Result: "r1", Sealed: true})
				if broken {
					s.at(2100).outcome("w2", "d2", OutcomeFailed, false, ClassUnsealed).fail("w2", "d2", ClassUnsealed)
				} else {
					s.at(2100).outcome("w2", "d2", OutcomeReplayed, false, "").ack("w2", "d2", "r1")
				}
				s.at(3000).final("k1", StatusCompleted, "r1", "o1")
			},
			want: []Property{SealedHeld},
		},
		{
			name: "a guard without the Sealer runs over a sealed result", property: SealedHeld,
			build: func(s *script, broken bool) {
				s.add("w1", Event{Ev: KindProc, Reader: ReaderSqsonce, Sealer: true})
				s.proc("w2", ReaderSqsonce)
				s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
				s.at(2000).deliver("w2", "d2", "k1")
				s.add("w2", Event{Ev: KindClaim, D: "d2", Reader: ReaderSqsonce, Resp: RespReplayed, Result: "r1", Sealed: true})
				if broken {
					s.at(2050).start("w2", "d2", "")
					s.at(2080).end("w2", "d2", RespError, "")
				}
				s.at(2100).outcome("w2", "d2", OutcomeFailed, broken, ClassUnsealed).fail("w2", "d2", ClassUnsealed)
				s.at(3000).final("k1", StatusCompleted, "r1", "o1")
			},
			want: []Property{SealedHeld},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			broken := newScript("synthetic")
			tt.build(broken, true)
			v := Check(broken.history())
			if got := violated(v); !slices.Equal(got, tt.want) {
				t.Errorf("broken: violated %v, want %v\n%s", got, tt.want, report(t, v))
			}
			if !v.Failed() {
				t.Errorf("broken: Failed() = false")
			}
			repaired := newScript("synthetic")
			tt.build(repaired, false)
			v = Check(repaired.history())
			if v.Failed() {
				t.Errorf("repaired: violated %v\n%s", violated(v), report(t, v))
			}
			if v.Result(tt.property).Checked == 0 {
				t.Errorf("repaired: %s checked nothing\n%s", tt.property, report(t, v))
			}
		})
	}
}

// TestCauses: each documented cause explains an extra run, and is counted
// as such; the same runs without the cause are violations.
func TestCauses(t *testing.T) {
	// takenOver is w2 taking w1's claim over at 5.1 s and completing it.
	takenOver := func(s *script) {
		s.at(5100).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonce, RespTakenOver, "o2", "o1")
		s.at(5150).start("w2", "d2", "o2")
		s.at(5200).end("w2", "d2", RespOK, "r2").complete("w2", "d2", "o2", RespOK, "r2").
			outcome("w2", "d2", OutcomeTakenOver, true, "").ack("w2", "d2", "r2")
		s.at(6000).final("k1", StatusCompleted, "r2", "o2")
	}
	// w1 claims at 1 s, its run ends at 1.4 s.
	w1 := func(s *script) {
		s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
		s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonce, RespClaimed, "o1", "")
		s.at(1100).start("w1", "d1", "o1")
		s.at(1400).end("w1", "d1", RespOK, "r1")
	}
	tests := []struct {
		name  string
		cause Cause // "" for a run nothing explains
		build func(s *script)
	}{
		{"killed before completing", CauseKilled, func(s *script) {
			w1(s)
			s.at(1410).fault("harness", FaultProcKill, "w1", 0)
			takenOver(s)
		}},
		{"completion failed", CauseCompletionFailed, func(s *script) {
			w1(s)
			s.at(1450).complete("w1", "d1", "o1", RespError, "")
			s.at(1500).complete("w1", "d1", "o1", RespError, "").outcome("w1", "d1", OutcomeFailed, true, "store_complete").
				fail("w1", "d1", "store_complete")
			takenOver(s)
		}},
		{"completion refused", CauseCompletionRefused, func(s *script) {
			w1(s)
			s.at(1450).complete("w1", "d1", "o1", RespRefused, "").outcome("w1", "d1", OutcomeFailed, true, "store_complete").
				fail("w1", "d1", "store_complete")
			takenOver(s)
		}},
		{"lease outlived", CauseLeaseOutlived, func(s *script) {
			outlived(s, 5100, 5300, ReaderSqsonce, OutcomeDoubleRun)
		}},
		{"taken over by a clock ahead by more than the margin", CauseClockSkew, func(s *script) {
			outlived(s, 2000, 2500, ReaderSqsonce, OutcomeDoubleRun)
			s.at(10).fault("harness", FaultClockSkew, "w2", 3*time.Second)
		}},
		{"taken over by a clock ahead by less than the margin", "", func(s *script) {
			outlived(s, 2000, 2500, ReaderSqsonce, OutcomeDoubleRun)
			s.at(10).fault("harness", FaultClockSkew, "w2", 900*time.Millisecond)
		}},
		{"killed after its completion failed", CauseCompletionFailed, func(s *script) {
			w1(s)
			s.at(1450).complete("w1", "d1", "o1", RespError, "")
			s.at(1460).fault("harness", FaultProcKill, "w1", 0)
			takenOver(s)
		}},
		{"neither killed nor completed", "", func(s *script) {
			w1(s)
			s.at(1450).outcome("w1", "d1", OutcomeFailed, true, "other").fail("w1", "d1", "other")
			takenOver(s)
		}},
		{"lease outlived with leases extended, no fault", "", func(s *script) {
			s.hdr.LeaseExtension = true
			outlived(s, 5100, 5300, ReaderSqsonce, OutcomeDoubleRun)
		}},
		{"lease outlived with leases extended, cut off from the store", CauseLeaseOutlived, func(s *script) {
			s.hdr.LeaseExtension = true
			outlived(s, 5100, 5300, ReaderSqsonce, OutcomeDoubleRun)
			s.at(2000).fault("proxy", FaultDropRequest, "w1", 0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript("synthetic")
			tt.build(s)
			v := Check(s.history())
			if tt.cause == "" {
				if got := violated(v); !slices.Equal(got, []Property{AtMostOnce}) {
					t.Errorf("violated %v, want [at_most_once]\n%s", got, report(t, v))
				}
				return
			}
			if v.Failed() {
				t.Fatalf("violated %v\n%s", violated(v), report(t, v))
			}
			want := map[Cause]int{tt.cause: 1}
			if !maps.Equal(v.Explained, want) {
				t.Errorf("explained %v, want %v\n%s", v.Explained, want, report(t, v))
			}
		})
	}
}

// TestDeadlineOverLease: a run outlived its lease only if it outlived its
// invocation's deadline. A guard that writes its lease without the skew
// margin (lease end = deadline) is taken over by a clock 0.5 s ahead while
// its run is still inside its deadline: the deadline shows it; the lease
// it wrote, which the checker falls back on without a deadline, does not.
func TestDeadlineOverLease(t *testing.T) {
	for _, withDeadline := range []bool{true, false} {
		s := newScript("synthetic")
		outlived(s, 3600, 3650, ReaderSqsonce, OutcomeDoubleRun)
		s.at(10).fault("harness", FaultClockSkew, "w2", 500*time.Millisecond)
		s.set("d1", KindClaim, func(e *Event) { e.Lease = 1000 + lease }) // no margin
		var want []Property
		if withDeadline {
			want = []Property{AtMostOnce}
		} else {
			s.set("d1", KindDeliver, func(e *Event) { e.Deadline = 0 })
		}
		v := Check(s.history())
		if got := violated(v); !slices.Equal(got, want) {
			t.Errorf("deadline recorded %v: violated %v, want %v\n%s", withDeadline, got, want, report(t, v))
		}
	}
}

// TestStrictAllowsNoCause: a run that outlived its lease explains a double
// run in default mode only.
func TestStrictAllowsNoCause(t *testing.T) {
	s := newScript("synthetic")
	outlived(s, 5100, 5300, ReaderSqsonceStrict, OutcomeDoubleRun)
	v := Check(s.history())
	if got, want := violated(v), []Property{AtMostOnce, StrictOnce}; !slices.Equal(got, want) {
		t.Errorf("violated %v, want %v\n%s", got, want, report(t, v))
	}
}

// TestEpochs: a record that expired, or that an operator released, starts
// a new life of its key, in which the operation may run again.
func TestEpochs(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		for _, expired := range []bool{true, false} {
			s := newScript("synthetic")
			s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
			s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
			s.at(day+2000).firstRun("w2", "d2", "k1", "o2", "r2")
			for i, e := range s.events {
				if e.Ev == KindClaim && e.D == "d2" {
					s.events[i].Resp, s.events[i].Prev, s.events[i].Expired = RespTakenOver, "o1", expired
				}
				if e.Ev == KindOutcome && e.D == "d2" {
					s.events[i].Outcome = OutcomeTakenOver
				}
			}
			s.at(day+3000).final("k1", StatusCompleted, "r2", "o2")
			v := Check(s.history())
			if v.Failed() == expired {
				t.Errorf("claim of an expired record (%v): violated %v\n%s", expired, violated(v), report(t, v))
			}
			if expired && v.Keys != 1 {
				t.Errorf("keys %d, want 1", v.Keys)
			}
		}
	})
	t.Run("operator release", func(t *testing.T) {
		for _, released := range []bool{true, false} {
			s := newScript("synthetic")
			s.proc("w1", ReaderSqsonceStrict).proc("w2", ReaderSqsonceStrict)
			s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonceStrict, RespClaimed, "o1", "")
			s.at(1100).start("w1", "d1", "o1")
			s.at(1200).fault("harness", FaultProcKill, "w1", 0)
			s.at(6000).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonceStrict, RespInProgress, "", "o1").
				quarantine("w2", "d2", "o1", 1000, RespOK).outcome("w2", "d2", OutcomeQuarantined, false, "quarantined").
				fail("w2", "d2", "quarantined")
			if released {
				s.at(7000).add("ops", Event{Ev: KindOperator, Key: "k1", Resp: RespOperatorRelease})
			}
			s.at(8000).deliver("w2", "d3", "k1").claim("w2", "d3", ReaderSqsonceStrict, RespClaimed, "o3", "")
			s.at(8100).start("w2", "d3", "o3")
			s.at(8200).end("w2", "d3", RespOK, "r3").complete("w2", "d3", "o3", RespOK, "r3").
				outcome("w2", "d3", OutcomeClaimed, true, "").ack("w2", "d3", "r3")
			s.at(9000).final("k1", StatusCompleted, "r3", "o3")
			v := Check(s.history())
			if v.Failed() == released {
				t.Errorf("released by an operator (%v): violated %v\n%s", released, violated(v), report(t, v))
			}
			if !released && !slices.Equal(violated(v), []Property{StrictOnce, QuarantineHolds}) {
				t.Errorf("violated %v, want [strict_once quarantine_holds]\n%s", violated(v), report(t, v))
			}
		}
	})
	t.Run("the owner's release lifts a quarantine", func(t *testing.T) {
		s := newScript("synthetic")
		s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonceStrict).proc("w3", ReaderSqsonce)
		s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonce, RespClaimed, "o1", "")
		s.at(1100).start("w1", "d1", "o1")
		s.at(6000).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonceStrict, RespInProgress, "", "o1").
			quarantine("w2", "d2", "o1", 1000, RespOK).outcome("w2", "d2", OutcomeQuarantined, false, "quarantined").
			fail("w2", "d2", "quarantined")
		s.at(6100).end("w1", "d1", RespError, "").release("w1", "d1", "o1", RespOK).
			outcome("w1", "d1", OutcomeReleased, true, "other").fail("w1", "d1", "other")
		s.at(7000).firstRun("w3", "d3", "k1", "o3", "r3")
		v := Check(s.history())
		if v.Failed() {
			t.Errorf("violated %v\n%s", violated(v), report(t, v))
		}
	})
}

// TestSharedAndCached: a call that shares another call's outcome in its
// process, or is served from its cache, saw the record completed through
// that call; a call in another process did not.
func TestSharedAndCached(t *testing.T) {
	for _, tt := range []struct {
		source, proc string
		ok           bool
	}{
		{"shared", "w1", true},
		{"cache", "w1", true},
		{"shared", "w2", false},
	} {
		s := newScript("synthetic")
		s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
		s.at(1000).firstRun("w1", "d1", "k1", "o1", "r1")
		s.at(1000).deliver(tt.proc, "d1b", "k1")
		s.at(1460).shared(tt.proc, "d1b", tt.source)
		s.at(1500).ack(tt.proc, "d1b", "r1")
		v := Check(s.history())
		if v.Failed() == tt.ok {
			t.Errorf("%s in %s: violated %v\n%s", tt.source, tt.proc, violated(v), report(t, v))
		}
		if !tt.ok && !slices.Equal(violated(v), []Property{AckCompleted}) {
			t.Errorf("%s in %s: violated %v, want [ack_completed]", tt.source, tt.proc, violated(v))
		}
	}
}

// TestOwnerlessQuarantine: a quarantine of a claim without an owner (one
// Powertools wrote) holds against later Powertools claims, and does not
// count the quarantined claim's own run.
func TestOwnerlessQuarantine(t *testing.T) {
	for _, broken := range []bool{true, false} {
		s := newScript("mixed")
		s.proc("p1", ReaderPowertoolsTS).proc("w2", ReaderSqsonceStrict).proc("p3", ReaderPowertoolsTS)
		s.at(1000).deliver("p1", "d1", "k1").claim("p1", "d1", ReaderPowertoolsTS, RespClaimed, "", "")
		s.at(5900).start("p1", "d1", "") // started late, before the quarantine
		s.at(6000).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonceStrict, RespInProgress, "", "").
			quarantine("w2", "d2", "", 1000, RespOK).outcome("w2", "d2", OutcomeQuarantined, false, "quarantined").
			fail("w2", "d2", "quarantined")
		s.at(6500).fault("harness", FaultProcKill, "p1", 0)
		s.at(7000).deliver("p3", "d3", "k1")
		if broken {
			s.claim("p3", "d3", ReaderPowertoolsTS, RespClaimed, "", "").start("p3", "d3", "")
		} else {
			s.claim("p3", "d3", ReaderPowertoolsTS, RespInProgress, "", "").outcome("p3", "d3", OutcomeInProgress, false, "in_progress").
				fail("p3", "d3", "in_progress")
		}
		v := Check(s.history())
		want := []Property(nil)
		if broken {
			want = []Property{QuarantineHolds}
		}
		if got := violated(v); !slices.Equal(got, want) {
			t.Errorf("broken %v: violated %v, want %v\n%s", broken, got, want, report(t, v))
		}
	}
}

// TestWrite: the verdict's table lists every property with its counts,
// and each violation its events with their places and sequence numbers.
func TestWrite(t *testing.T) {
	s := newScript("synthetic")
	s.hdr.Replay = "go run ./test/chaos/cmd/chaos -seed 1"
	outlived(s, 2000, 2500, ReaderSqsonce, OutcomeDoubleRun)
	h := s.history()
	v := Check(h)
	out := report(t, v)
	for _, p := range Properties {
		if !strings.Contains(out, string(p.Property)+" ") {
			t.Errorf("no row for %s:\n%s", p.Property, out)
		}
	}
	var end Event
	for _, e := range h.Events {
		if e.Ev == KindOpEnd && e.D == "d1" {
			end = e
		}
	}
	for _, want := range []string{
		"replay: go run ./test/chaos/cmd/chaos -seed 1",
		"at_most_once: 1 violation\n",
		"#" + strconv.Itoa(end.Pos) + " w1:" + strconv.FormatUint(end.Seq, 10) + " ",
		"verdict: FAIL, 1 violation\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestStrictAfterDefaultTakeover: a default claim whose worker died is taken
// over by another default guard, whose run fails and releases the key; a
// strict claim then finds the key free and runs. No strict claim was taken
// over, and no claim of unknown outcome was left for it to quarantine: not
// a strict_once violation. The same history without the takeover (the dead
// worker's claim gone with no release) is one.
func TestStrictAfterDefaultTakeover(t *testing.T) {
	for _, takeover := range []bool{true, false} {
		s := newScript("synthetic")
		s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce).proc("w3", ReaderSqsonceStrict)
		s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonce, RespClaimed, "o1", "").start("w1", "d1", "o1")
		s.at(1100).fault("harness", FaultProcKill, "w1", 0)
		if takeover {
			s.at(10000).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonce, RespTakenOver, "o2", "o1").start("w2", "d2", "o2")
			s.at(10100).end("w2", "d2", RespError, "").release("w2", "d2", "o2", RespOK).outcome("w2", "d2", OutcomeReleased, true, "error").fail("w2", "d2", "error")
		}
		s.at(20000).firstRun("w3", "d3", "k1", "o3", "r3")
		s.set("d3", KindClaim, func(e *Event) { e.Reader = ReaderSqsonceStrict })
		s.at(21000).final("k1", StatusCompleted, "r3", "o3")
		v := Check(s.history())
		if got := v.Result(StrictOnce); (len(got.Violations) > 0) == takeover || got.Checked == 0 {
			t.Errorf("takeover %v: strict_once checked %d, violations %d\n%s", takeover, got.Checked, len(got.Violations), report(t, v))
		}
	}
}

// TestExpiryHeld: a claim that takes a record as expired while its owner's
// run still runs breaks expiry_held, unless the claimer's clock ran
// SkewMargin or more ahead of the owner's, or the run had ended first.
func TestExpiryHeld(t *testing.T) {
	for _, tc := range []struct {
		name    string
		skew    time.Duration // w2's clock, ahead of w1's
		endedAt int64         // when w1's run ends (ms)
		want    int           // expiry_held violations
	}{
		{"skew within the margin, owner running", 500 * time.Millisecond, 9000, 1},
		{"no skew, owner running", 0, 9000, 1},
		{"skew at the margin", margin, 9000, 0},
		{"the owner's run ended first", 0, 4000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript("synthetic")
			s.proc("w1", ReaderSqsonce).proc("w2", ReaderSqsonce)
			if tc.skew != 0 {
				s.fault("harness", FaultClockSkew, "w2", tc.skew)
			}
			s.at(1000).deliver("w1", "d1", "k1").claim("w1", "d1", ReaderSqsonce, RespClaimed, "o1", "")
			s.at(1100).start("w1", "d1", "o1")
			s.at(tc.endedAt).end("w1", "d1", RespError, "")
			s.at(5000).deliver("w2", "d2", "k1").claim("w2", "d2", ReaderSqsonce, RespTakenOver, "o2", "o1")
			s.set("d2", KindClaim, func(e *Event) { e.Expired = true })
			s.at(5100).start("w2", "d2", "o2")
			s.at(5200).end("w2", "d2", RespOK, "r2").complete("w2", "d2", "o2", RespOK, "r2").
				outcome("w2", "d2", OutcomeTakenOver, true, "").ack("w2", "d2", "r2")
			s.at(9500).final("k1", StatusCompleted, "r2", "o2")
			v := Check(s.history())
			r := v.Result(ExpiryHeld)
			if r.Checked == 0 || len(r.Violations) != tc.want {
				t.Errorf("expiry_held: %d checked, %d violations, want %d\n%s", r.Checked, len(r.Violations), tc.want, report(t, v))
			}
		})
	}
}
