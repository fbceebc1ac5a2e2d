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
package storetest
