// Package driver is what an idempotency store implements, as
// database/sql/driver is for database/sql: the records package
// idempotency's guard keeps, the [Store] interface it calls, and the
// optional interfaces it looks for. A function author never imports it; a
// store's package does, and so do operators' tools.
//
//	var _ driver.Store = (*Store)(nil)
//
// # Required
//
// Every store implements [Store]: a claim ([Store.Acquire], with or
// without taking over a lapsed lease), a completion that returns the
// result as stored ([Store.Complete]), a release ([Store.Release]) and a
// quarantine ([Store.Quarantine]). Each is one atomic operation evaluated
// by the store, never a read followed by a write. Package storetest is the
// conformance suite: run it against every store.
//
// # Optional
//
//   - [AttachValidator]: the store commits writes attached to a completion
//     (idempotency.Attach) in the same transaction. Without it, Attach fails
//     with [ErrAttachUnsupported] and the operation learns so before it
//     does its work; the store must still fail a Complete whose
//     Record.Attached is not empty with ErrAttachUnsupported.
//   - [Inspector]: the store's records can be read and listed without a
//     claim, and released or completed fenced on the record as read, for
//     operators' tools. The guard never calls it; without it a tool cannot
//     inspect the store.
//   - [Extender]: the store extends a live claim's lease for its owner, in
//     one write fenced on the owner. The guard keeps a claim alive with it
//     while the operation runs (idempotency.Config.KeepAlive). Without it
//     the operation runs within the lease it claimed, as inside Lambda,
//     where the lease already ends at the invocation's deadline. It is
//     optional so that a store written before it still builds and works.
//   - [SealValidator]: the store refuses a guard that seals results
//     (idempotency.Config.Sealer, a [Sealer]) when its other readers would
//     misread a sealed result ([SealedPrefix]).
//   - [DataFitter]: the store says whether it would keep a result whole; a
//     guard with a Sealer compresses a result before sealing it only where
//     the store would not keep its seal otherwise ([SealedGzipPrefix]).
//
// storetest.Run finds the optional interfaces itself and runs their cases
// too.
//
// # Records
//
// A [Record] is stored under Powertools for AWS Lambda's attribute names
// ([AttrID], [AttrStatus], [AttrExpiration], [AttrLeaseExpiry], [AttrData],
// [AttrValidation]) and its statuses ([StatusInProgress],
// [StatusCompleted]), so that the two can share a table; the other
// attributes are this module's, which Powertools ignores.
package driver
