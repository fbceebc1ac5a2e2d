package history

import "slices"

// Blame: which act broke a promise. A violation names the write that
// should have been refused, or that removed what should have refused it,
// else the report or acknowledgement that broke it ([Violation.Breaker]),
// so that a fleet of several readers can tell whose it was: a violation
// next to another reader's write is not that reader's unless the act that
// broke the promise is its own.

// isWrite reports whether e changed its key's record: a claim that claimed
// or took over, a completion or release that succeeded, an operator's
// release or resolve.
func isWrite(e *Event) bool {
	switch e.Ev {
	case KindClaim:
		return e.Resp == RespClaimed || e.Resp == RespTakenOver
	case KindComplete, KindRelease:
		return e.Resp == RespOK
	case KindOperator:
		return true
	}
	return false
}

// keyOf is e's key: its own, else its delivery's.
func (c *checker) keyOf(e *Event) string {
	if e.Key != "" {
		return e.Key
	}
	if d := c.deliveries[e.D]; d != nil {
		return d.key
	}
	return ""
}

// lastWrite returns the last write to ep's record strictly between
// positions from and to, nil if none.
func (c *checker) lastWrite(ep *epoch, from, to int, keep func(*Event) bool) *Event {
	for pos := min(to, len(c.events)+1) - 1; pos > from && pos > 0; pos-- {
		e := c.event(pos)
		if isWrite(e) && c.epAt[pos] == ep.n && c.keyOf(e) == ep.key && (keep == nil || keep(e)) {
			return e
		}
	}
	return nil
}

// claimBreaker returns the write that let claim, a claim that should have
// found the claim of owner (made, or quarantined, at position from) in its
// way, succeed: the claim itself when it took owner's claim over, or found
// the key free with nothing removed since from; the release (or delete)
// that freed the key; or, when it took over a claim made since, the write
// that let that claim in. Nil when claim is.
func (c *checker) claimBreaker(ep *epoch, owner string, from int, claim *Event) *Event {
	for range 16 {
		if claim == nil || claim.Ev != KindClaim {
			return claim
		}
		switch {
		case claim.Resp == RespTakenOver && claim.Prev == owner:
			return claim
		case claim.Resp == RespTakenOver:
			prev := claim.Prev
			x := c.lastWrite(ep, from, claim.Pos, func(e *Event) bool { return e.Ev == KindClaim && e.Owner == prev })
			if x == nil {
				return claim
			}
			claim = x
		default:
			if rel := c.lastWrite(ep, from, claim.Pos, func(e *Event) bool { return e.Ev != KindClaim && e.Ev != KindComplete }); rel != nil {
				return rel
			}
			return claim
		}
	}
	return claim
}

// runBreaker returns the write that let the later of two runs of one
// record start: claimBreaker of its claim against the earlier's.
func (c *checker) runBreaker(ep *epoch, a, b *run) *Event {
	if a == nil || b == nil {
		return nil
	}
	if b.claimPos() < a.claimPos() {
		a, b = b, a
	}
	return c.claimBreaker(ep, a.owner(), a.claimPos(), b.claim)
}

// doubleRunBreaker returns the write that broke at-most-once for r, a run
// whose result is not kept's, the stored one: when r's own completion
// succeeded too, what let the second completion succeed
// (completionBreaker); else the write that let the later run start.
func (c *checker) doubleRunBreaker(ep *epoch, kept, r *run) *Event {
	for _, e := range r.d.completes {
		if e.Resp == RespOK {
			if len(ep.completions) > 0 && ep.completions[0] != e {
				first, second := ep.completions[0], e
				if second.Pos < first.Pos {
					first, second = second, first
				}
				return c.completionBreaker(ep, first, second)
			}
			return e
		}
	}
	return c.runBreaker(ep, kept, r)
}

// completionBreaker returns the write that let second, a completion of
// ep's record after first succeeded, succeed too: when second's run was
// claimed after first, what let that claim in (claimBreaker: the claim
// itself, or the delete that freed the key); else second itself, which
// should have found its lease lost.
func (c *checker) completionBreaker(ep *epoch, first, second *Event) *Event {
	if r := c.runOf(ep, second); r != nil && r.claim != nil && r.claim.Pos > first.Pos {
		return c.claimBreaker(ep, first.Owner, first.Pos, r.claim)
	}
	return second
}

// laterOf returns whichever of a and b comes later in the history.
func laterOf(a, b *Event) *Event {
	switch {
	case a == nil:
		return b
	case b == nil || a.Pos > b.Pos:
		return a
	}
	return b
}

// completionOf returns the successful completion of ep that stored
// result, nil if none.
func completionOf(ep *epoch, result string) *Event {
	for _, e := range ep.completions {
		if e.Result == result {
			return e
		}
	}
	return nil
}

// blame names b the write that broke the violation of p just recorded,
// and adds it to its events; nothing for nil.
func (c *checker) blame(p Property, b *Event) {
	r := c.result(p)
	if b == nil || len(r.Violations) == 0 {
		return
	}
	v := &r.Violations[len(r.Violations)-1]
	v.Breaker = b.Pos
	if !slices.ContainsFunc(v.Events, func(e Event) bool { return e.Pos == b.Pos }) {
		v.Events = append(v.Events, *b)
		slices.SortFunc(v.Events, func(a, b Event) int { return a.Pos - b.Pos })
	}
}
