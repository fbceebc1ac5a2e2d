// Package storetest is the conformance suite every [driver.Store] must
// pass, in the manner of testing/fstest: call [Run] from a test of the
// store.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) driver.Store { return memstore.New() })
//	}
//
// For every store it checks the atomic conditional claim (a free key, a
// held key, a lapsed lease, an expired record, a claim retried by its
// owner), the fenced completion and release (a stale owner can neither
// complete nor delete; a completed record is never released; a completion
// retried by its owner, or made late after an operator completed the claim,
// succeeds and returns the result stored), the stored result and payload
// digest, that a stored result reads back byte for byte (results that
// differ only in whitespace, escapes, number spelling or key order, bytes
// that are not UTF-8, 1 MiB ones) and a large one as the store reported
// keeping it, that attached writes are never dropped silently, and that of
// 200 goroutines racing to claim one key exactly one wins. Through two
// guards on the store, it checks that a claimant whose clock runs ahead
// cannot take over a live claim before its holder's deadline
// ([idempotency.Config.SkewMargin]), and that under
// [idempotency.TenancyMessageGroup] two message groups that send one key
// get a run and a result each, through Wrap and WrapJSON alike.
//
// Strict mode: a claim with [driver.NoTakeover] never takes over a lapsed
// lease; Quarantine writes only on the lapsed claim it was given, and once;
// the quarantined record stays in progress to every claim; its owner's
// Release frees the key and its Complete is replayed, both clearing the
// mark; of 200 such claims racing on one lapsed key none claims it and
// exactly one quarantines it. A strict claim (its lease at its expiry, its
// own in [driver.Record.StrictLease]) keeps its StrictLease, is taken over
// by no claim once that lapsed, is quarantined by it and not before, and
// leaves nothing behind in the claim that replaces it once released or
// expired.
//
// Extension, for a [driver.Extender]: the owner's Extend moves its claim's
// lease (a strict claim's StrictLease) and nothing else, even after the
// lease lapsed if nobody took it over, and succeeds when sent again; a
// stale owner's is refused and moves nothing, so the winner's lease lapses
// as it was; a completed, released, quarantined or expired claim is not
// extended; of an extension and Racers claims racing on one lapsed lease,
// either the extension or exactly one claim wins.
//
// Run finds the optional interfaces itself. For a [driver.AttachValidator]
// it checks that a write the store cannot commit is refused. For a
// [driver.Inspector] it checks Inspect and List on records of every kind
// (completed, lapsed, live, strict, released, quarantined), List across
// [ListPages] records, and that ReleaseInspected and CompleteInspected
// write only on the record as it was read (not once it was extended). A
// store without one skips its cases, saying so. [KeepAliveLiveOwner], a
// guard keeping a live claim alive three times its initial lease on the
// store, takes seconds: a store's tests call it beside Run.
//
// Three scenarios need a store's own setup, so its tests call them:
// [StrictAcrossProcesses] (a strict and a default guard in two OS
// processes), [StrictAcrossGuards] (the same in one process, for a store
// that lives in one) and [OlderReleaseKeepsOff] (a store's claim as an
// older release sends it, against a strict claim).
package storetest
