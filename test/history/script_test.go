package history

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// script builds a history by hand, event by event, at times set with at
// (milliseconds). Every guard's lease is 3 s plus the 1 s skew margin, the
// record's expiry a day.
type script struct {
	hdr    Header
	events []Event
	ms     int64
}

const (
	margin = time.Second
	lease  = 3000 // ms: the invocation's deadline after a claim
	day    = 24 * 3600 * 1000
)

func newScript(profile string) *script {
	return &script{
		hdr: Header{Ev: KindHeader, Version: Version, Run: "test", Seed: 1, Profile: profile, SkewMargin: int64(margin)},
	}
}

func (s *script) at(ms int64) *script { s.ms = ms; return s }

func (s *script) add(proc string, e Event) {
	e.Proc, e.T = proc, s.ms*int64(time.Millisecond)
	s.events = append(s.events, e)
}

// history returns the events in time order (ties in the order added),
// numbered per process in that order.
func (s *script) history() *History {
	events := slices.Clone(s.events)
	slices.SortStableFunc(events, func(a, b Event) int { return cmp.Compare(a.T, b.T) })
	seq := map[string]uint64{}
	for i := range events {
		seq[events[i].Proc]++
		events[i].Seq = seq[events[i].Proc]
	}
	return New(s.hdr, events)
}

func (s *script) proc(proc string, r Reader) *script {
	s.add(proc, Event{Ev: KindProc, Reader: r})
	return s
}

// deliver records a delivery of key with payload "p", in an invocation
// whose deadline is 3 s away.
func (s *script) deliver(proc, d, key string) *script {
	s.add(proc, Event{Ev: KindDeliver, D: d, Msg: "m-" + d, Rc: 1, Key: key, Payload: "p", Deadline: (s.ms + lease) * int64(time.Millisecond)})
	return s
}

// set changes the events of delivery d of kind k.
func (s *script) set(d string, k Kind, f func(e *Event)) *script {
	for i := range s.events {
		if s.events[i].D == d && s.events[i].Ev == k {
			f(&s.events[i])
		}
	}
	return s
}

// claim records a claim of d by a reader of kind r, answered resp; a
// successful one writes owner's lease end, 3 s from now plus the margin,
// an expiry a day from now and payload "p".
func (s *script) claim(proc, d string, r Reader, resp Resp, owner, prev string) *script {
	e := Event{Ev: KindClaim, D: d, Reader: r, Resp: resp, Prev: prev}
	if resp == RespClaimed || resp == RespTakenOver {
		e.Owner, e.Lease, e.Exp, e.Payload = owner, s.ms+lease+margin.Milliseconds(), s.ms+day, "p"
	}
	s.add(proc, e)
	return s
}

func (s *script) replayed(proc, d string, r Reader, result string) *script {
	s.add(proc, Event{Ev: KindClaim, D: d, Reader: r, Resp: RespReplayed, Result: result})
	return s
}

func (s *script) start(proc, d, owner string) *script {
	s.add(proc, Event{Ev: KindOpStart, D: d, Owner: owner})
	return s
}

func (s *script) end(proc, d string, resp Resp, result string) *script {
	s.add(proc, Event{Ev: KindOpEnd, D: d, Resp: resp, Result: result})
	return s
}

func (s *script) complete(proc, d, owner string, resp Resp, result string) *script {
	e := Event{Ev: KindComplete, D: d, Owner: owner, Resp: resp}
	if resp == RespOK {
		e.Result = result
	}
	s.add(proc, e)
	return s
}

func (s *script) release(proc, d, owner string, resp Resp) *script {
	s.add(proc, Event{Ev: KindRelease, D: d, Owner: owner, Resp: resp})
	return s
}

// quarantine records proc's quarantine of the claim of owner found, made
// at claimedAt (ms).
func (s *script) quarantine(proc, d, owner string, claimedAt int64, resp Resp) *script {
	s.add(proc, Event{Ev: KindQuarantine, D: d, Owner: owner, Exp: claimedAt + day, Lease: claimedAt + day, Resp: resp})
	return s
}

// outcome records the guard's outcome of d's call; a failing outcome gets
// its class and an error.
func (s *script) outcome(proc, d, outcome string, ran bool, class string) *script {
	e := Event{Ev: KindOutcome, D: d, Outcome: outcome, Ran: ran, Class: class}
	if class != "" {
		e.Err = "idempotency: " + class
	}
	s.add(proc, e)
	return s
}

func (s *script) shared(proc, d, source string) *script {
	s.add(proc, Event{Ev: KindOutcome, D: d, Outcome: OutcomeReplayed, Source: source})
	return s
}

func (s *script) ack(proc, d, result string) *script {
	s.add(proc, Event{Ev: KindAck, D: d, Result: result})
	return s
}

func (s *script) fail(proc, d, class string) *script {
	s.add(proc, Event{Ev: KindFail, D: d, Class: class})
	return s
}

func (s *script) fault(proc string, f Fault, target string, off time.Duration) *script {
	s.add(proc, Event{Ev: KindFault, Fault: f, Target: target, Off: int64(off)})
	return s
}

func (s *script) final(key, status, result, owner string) *script {
	s.add("harness", Event{Ev: KindFinal, Key: key, Status: status, Result: result, Owner: owner})
	return s
}

// firstRun is a delivery that claims a free key, runs, completes and is
// acknowledged, 500 ms from claim to acknowledgement.
func (s *script) firstRun(proc, d, key, owner, result string) *script {
	t := s.ms
	s.deliver(proc, d, key).claim(proc, d, ReaderSqsonce, RespClaimed, owner, "")
	s.at(t+100).start(proc, d, owner)
	s.at(t+400).end(proc, d, RespOK, result)
	s.at(t+450).complete(proc, d, owner, RespOK, result).outcome(proc, d, OutcomeClaimed, true, "")
	s.at(t+500).ack(proc, d, result)
	return s
}

func (s *script) String() string { return fmt.Sprintf("script of %d events", len(s.events)) }
