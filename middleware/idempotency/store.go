package idempotency

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Status is the state of an idempotency record. The values are the strings
// Powertools for AWS Lambda writes, so the two can share a table.
type Status string

// The two states a stored record can be in. An absent record is the third.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
)

// Default attribute names of a stored record, as Powertools for AWS Lambda
// documents them. Stores that persist records by attribute name use these
// unless configured otherwise; infrastructure code enables the table's TTL on
// [AttrExpiration].
const (
	AttrID           = "id"                      // S: the record id, "{namespace}#{digest}"
	AttrStatus       = "status"                  // S: INPROGRESS or COMPLETED
	AttrExpiration   = "expiration"              // N: epoch seconds; the table's TTL attribute
	AttrLeaseExpiry  = "in_progress_expiration"  // N: epoch milliseconds; the lease's end (a strict claim's: the record's expiry)
	AttrData         = "data"                    // S: the stored result, JSON
	AttrValidation   = "validation"              // S: digest of the validated payload
	AttrOwner        = "lease_owner"             // S: sqsonce's lease owner token (fencing)
	AttrDataEncoding = "data_encoding"           // S: sqsonce's flag for a compressed result
	AttrDataOmitted  = "data_omitted"            // BOOL: sqsonce's flag for a result too large to store
	AttrQuarantined  = "quarantined"             // N: epoch milliseconds; sqsonce's mark on a quarantined claim (see [Config.Strict])
	AttrStrictLease  = "strict_lease_expiration" // N: epoch milliseconds; sqsonce's lease end of a strict claim (see [Record.StrictLease])
)

// Record is one idempotency record: the claim on a key and, once the operation
// completed, its result.
type Record struct {
	// ID is the record id: "{namespace}#{digest}" (see [Format]).
	ID string
	// Status is INPROGRESS while a worker holds the lease, COMPLETED after.
	Status Status
	// ExpiresAt is when the record stops counting (stored as epoch seconds,
	// the table's TTL attribute). A record past it is treated as absent.
	ExpiresAt time.Time
	// LeaseUntil is when an INPROGRESS claim may be taken over by another
	// worker (stored as epoch milliseconds): the lease's end, or for a
	// strict or quarantined claim the record's expiry.
	LeaseUntil time.Time
	// StrictLease is the lease end of a strict claim ([Config.Strict];
	// stored as epoch milliseconds in [AttrStrictLease]), zero for any
	// other. A strict claim is written with LeaseUntil at ExpiresAt, so
	// that no claim condition that reads only LeaseUntil (a default guard's,
	// an earlier sqsonce release's, Powertools') takes it over while the
	// record lives; once StrictLease has passed, a guard of this package
	// that finds the claim quarantines it. [Record.LeaseEnd] tells which
	// lease end holds.
	StrictLease time.Time
	// Data is the operation's result as JSON. It is nil while in progress, and
	// may be nil on a completed record whose result could not be stored.
	Data []byte
	// Validation is the digest of the payload that must match on reuse of the
	// key; empty when payload validation is off.
	Validation string
	// Owner is the lease owner token that fences Complete and Release. Records
	// written by other libraries have none.
	Owner string
	// Quarantined is when a guard found this INPROGRESS record's lease
	// lapsed with the operation's outcome unknown and stopped its key (a
	// strict guard, any claim; any guard, a strict claim; see
	// [Config.Strict]); zero otherwise. A quarantined record stays
	// INPROGRESS, with its lease extended to ExpiresAt, so that every reader
	// (Powertools too) treats it as in progress until an operator releases
	// or resolves it, or it expires.
	Quarantined time.Time
	// Attached holds what the operation attached to its completion with
	// [Attach], in order. A store that can commit such writes atomically with
	// the completion (for example in one DynamoDB transaction) does so; a
	// store that cannot must fail Complete with [ErrAttachUnsupported] rather
	// than drop them. Attached is only set on records passed to Complete.
	Attached []any
}

// LeaseEnd returns when the claim's holder's lease ends: StrictLease for a
// strict claim, else LeaseUntil. A StrictLease counts only on a record
// whose LeaseUntil is at or after its ExpiresAt, as a strict claim is
// written: a claim by a writer that does not know the attribute may have
// left it behind beside a lease of its own.
func (r Record) LeaseEnd() time.Time {
	if r.strict() {
		return r.StrictLease
	}
	return r.LeaseUntil
}

// strict reports whether r is a strict claim (see Record.LeaseEnd).
func (r Record) strict() bool {
	return !r.StrictLease.IsZero() && !r.LeaseUntil.Before(r.ExpiresAt)
}

// Store persists idempotency records. Implementations must be safe for
// concurrent use, and each method must be a single atomic operation evaluated
// by the store itself: never a read followed by a write. Run the conformance
// suite in package storetest against every implementation. The guard's
// promise (see the package doc) rests on these methods doing what they say.
type Store interface {
	// Acquire claims rec.ID by writing rec (status INPROGRESS, with its
	// lease, its StrictLease when set, and its owner) in one atomic
	// conditional create; a claim keeps nothing of the record it replaces. The create succeeds
	// when no record exists for the id, or the existing record is past its
	// ExpiresAt, or it is INPROGRESS with LeaseUntil before now. Then loaded
	// is false and actual is the record the claim replaced (the zero Record
	// when there was none), so the caller can tell a takeover.
	//
	// Otherwise Acquire writes nothing and returns the existing record with
	// loaded true, like [sync.Map.LoadOrStore]. An error means nothing is
	// known about the claim: the caller must not run the operation.
	//
	// Acquire is idempotent for its caller: finding an INPROGRESS record
	// with rec's own Owner (a retried request whose first attempt was
	// applied) is a successful claim; actual is then the record the first
	// attempt replaced, or the zero Record when the store cannot tell.
	Acquire(ctx context.Context, rec Record, now time.Time) (actual Record, loaded bool, err error)

	// Complete sets the record to COMPLETED with rec.Data and rec.ExpiresAt,
	// only if it is still INPROGRESS and owned by rec.Owner. If it is not (the
	// lease was taken over, or the record was deleted), Complete writes
	// nothing and returns an error that wraps [ErrLeaseLost]. Writes in
	// rec.Attached commit together with the completion or not at all.
	//
	// Complete is idempotent for its caller: finding the record already
	// COMPLETED with rec's own Owner (a retried request whose first attempt
	// was applied and its response lost) is a success; nothing is written,
	// and the result is the one stored then. Owner tokens are random per
	// claim, so only this completion can have left rec.Owner there.
	// [Config.CompleteAttempts] says which errors the guard retries.
	Complete(ctx context.Context, rec Record) error

	// Release deletes the record id, only if it is INPROGRESS and owned
	// by owner, so that a later delivery can run the operation again; a
	// store may instead keep a released mark that Acquire treats as no
	// record. A record owned by someone else, a completed record, or no
	// record at all is left alone and Release returns an error that wraps
	// [ErrLeaseLost].
	Release(ctx context.Context, id, owner string) error
}

// DataCompleter is implemented by stores that may keep less of a result than
// they are given (a result too large for an item, say). CompleteData is
// Complete, and returns the result as the store kept it: what every later
// delivery will read. The guard then returns and caches that, not the
// operation's own value, so that every delivery sees the same result.
type DataCompleter interface {
	CompleteData(ctx context.Context, rec Record) (stored []byte, err error)
}

// ErrNotFound reports that an [Inspector] found no record for an id: none
// was written, it was deleted, or it was released (a store that keeps a
// released mark reports the mark as no record, as Acquire treats it).
var ErrNotFound = errors.New("idempotency: no record")

// Inspector is implemented by stores whose records can be read without a
// claim, for operators' tools (cmd/sqsonce-ops): to see why a key is stuck
// and to list stuck or quarantined records. The guard never calls it. Reads
// are strongly consistent where the store offers it. Records are returned
// as stored, expired ones included; what a record means at a given time is
// the caller's to judge.
type Inspector interface {
	// Inspect returns the record id. It fails with an error wrapping
	// [ErrNotFound] when there is none. A record that cannot be read in
	// full (its result in another data format, say) is returned with what
	// could be read, and an error that says why.
	Inspect(ctx context.Context, id string) (StoredRecord, error)

	// List returns the records that opts selects, in no given order,
	// reading the store page by page as the caller iterates. A record
	// that cannot be read in full is yielded with what could be read and
	// an error, and the listing goes on; an error with a zero
	// StoredRecord (a failed read of the store) ends it.
	List(ctx context.Context, opts ListOptions) iter.Seq2[StoredRecord, error]
}

// StoredRecord is a record as an [Inspector] read it: the [Record], and
// how its result is kept.
type StoredRecord struct {
	Record
	// Size is the bytes of the result as stored: compressed, or in the
	// store's own types; 0 when none is stored.
	Size int
	// Encoding is "gzip" for a result stored compressed, else empty.
	Encoding string
	// DataFormat is the format mark a store writes beside a result (for
	// dynamostore: "json", "powertools-python" or "powertools-typescript"),
	// empty when the store writes none or the record has none.
	DataFormat string
	// Omitted reports a record completed without its result: it was too
	// large to store.
	Omitted bool
}

// ListOptions selects the records [Inspector.List] returns. The zero value
// selects every record.
type ListOptions struct {
	// Status, when not empty, selects the records of that status.
	Status Status
	// Prefix, when not empty, selects the records whose id starts with it,
	// such as "orders#" for one namespace.
	Prefix string
}

// Match reports whether rec is one opts selects.
func (o ListOptions) Match(rec Record) bool {
	return (o.Status == "" || rec.Status == o.Status) && len(rec.ID) >= len(o.Prefix) && rec.ID[:len(o.Prefix)] == o.Prefix
}

// Quarantiner is implemented by stores that support strict mode
// ([Config.Strict], [Guard.Strict]): they can claim a key without taking
// over a lapsed lease, and mark such a claim quarantined. Like the methods
// of [Store], each method is one atomic operation evaluated by the store.
type Quarantiner interface {
	// AcquireStrict is [Store.Acquire], except that an INPROGRESS record
	// whose lease lapsed is not taken over: it is returned with loaded
	// true, like a live one. A free key, an expired record and a released
	// claim are claimed as Acquire claims them.
	AcquireStrict(ctx context.Context, rec Record, now time.Time) (actual Record, loaded bool, err error)

	// Quarantine marks the lapsed claim found, the record found as
	// AcquireStrict returned it, in one atomic conditional write: only if
	// the record is still INPROGRESS with found's Owner (no owner when
	// found has none) and found's ExpiresAt, its lease ([Record.LeaseEnd]:
	// a strict claim's StrictLease) ended before now, and it is not
	// quarantined yet. The write sets [AttrQuarantined] to now and the
	// lease to the record's expiry, and keeps the status, the owner and
	// the StrictLease; it returns the record as it is then.
	//
	// When the condition fails, nothing is written and the error wraps
	// [ErrLeaseLost]; the record returned is the one that failed the
	// condition when the store can tell (the zero Record otherwise). So a
	// Quarantine sent again by the store's client after its first attempt
	// was applied, or one that lost a race with another, returns the
	// record quarantined, with that error: the key is quarantined either
	// way, and the guard reports it so.
	//
	// The store's Complete and Release of a quarantined record, fenced on
	// its owner as for any claim, clear the mark: a late completion by the
	// worker that ran the operation, or an operator's resolve or release.
	Quarantine(ctx context.Context, found Record, now time.Time) (Record, error)
}
