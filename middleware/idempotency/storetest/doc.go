// Package storetest is the conformance suite every [idempotency.Store] must
// pass, in the manner of testing/fstest: call [Run] from a test of the store.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) idempotency.Store { return memstore.New() })
//	}
//
// The suite checks the atomic conditional claim (a free key, a held key, a
// lapsed lease, an expired record, a claim retried by its owner), the fenced
// completion and release (a stale owner can neither complete nor delete; a
// completed record is never released; a completion retried by its owner
// succeeds), the stored result and payload
// digest, that a stored result reads back byte for byte (results that
// differ only in whitespace, escapes, number spelling or key order, bytes
// that are not UTF-8, 1 MiB ones) and that a large result is read back as
// the store reported keeping it, that attached writes are never dropped silently, and that of 200
// goroutines racing to claim one key exactly one wins. Through two guards on
// the store, it checks that a claimant whose clock runs ahead cannot take
// over a live claim before its holder's deadline ([idempotency.Config.SkewMargin]).
//
// For a store that implements [idempotency.Quarantiner] (strict mode) it
// checks that a strict claim never takes over a lapsed lease, that
// Quarantine writes only on the lapsed claim it was given and once, that the
// quarantined record stays in progress to every claim, that its owner's
// Release frees the key and its Complete is replayed, both clearing the
// mark, and that of 200 strict claims racing on one lapsed key none claims
// it and exactly one quarantines it. It checks that a strict claim (its
// lease at its expiry, its own in [idempotency.Record.StrictLease]) keeps
// its StrictLease, is taken over by no claim once that lapsed, is
// quarantined by it and not before, and leaves nothing behind in the claim
// that replaces it once released or expired. A store without strict mode
// skips these cases, saying so.
//
// Three scenarios need a store's own setup, so its tests call them:
// [StrictAcrossProcesses] (a strict and a default guard in two OS
// processes), [StrictAcrossGuards] (the same in one process, for a store
// that lives in one) and [OlderReleaseKeepsOff] (a store's claim as an
// older release sends it, against a strict claim).
package storetest
