package driver

import (
	"context"
	"time"
)

// Store persists idempotency records. It must be safe for concurrent use,
// and each method must be one atomic operation evaluated by the store
// itself, idempotent for its caller: the store's client may send a request
// again after its first attempt was applied, and the retry must succeed as
// the first would have. An error means nothing is known of the write: the
// guard then runs nothing, or reports the call failed.
type Store interface {
	// Acquire claims rec.ID by writing rec (INPROGRESS, with its lease,
	// its StrictLease when set, and its owner) in one conditional create
	// that keeps nothing of the record it replaces. The create succeeds
	// when there is no record for the id, the record is past its
	// ExpiresAt, or, with [Takeover], it is INPROGRESS with LeaseUntil
	// before now; with [NoTakeover] a lapsed lease is left alone. Then
	// loaded is false and actual is the record replaced (the zero Record
	// when there was none). Otherwise nothing is written, and actual is
	// the existing record, with loaded true, as [sync.Map.LoadOrStore]
	// returns it. Finding an INPROGRESS record with rec's own Owner (a
	// retried request whose first attempt was applied) is a successful
	// claim; actual is then what the first attempt replaced, or the zero
	// Record when the store cannot tell.
	Acquire(ctx context.Context, rec Record, now time.Time, mode ClaimMode) (actual Record, loaded bool, err error)

	// Complete sets the record to COMPLETED with rec.Data and
	// rec.ExpiresAt, only if it is INPROGRESS and owned by rec.Owner, and
	// clears its quarantine mark. It returns the result as stored: what
	// every later delivery will read, which may be less than rec.Data (nil
	// for a result too large to keep). The writes in rec.Attached commit
	// with the completion or not at all; a store that cannot commit them
	// fails with [ErrAttachUnsupported] and writes nothing. A record
	// owned by someone else, completed by someone else, or gone is left
	// alone, and the error wraps [ErrLeaseLost]. Finding the record
	// COMPLETED with rec's own Owner (an earlier attempt applied, or an
	// operator's completion under the claim's owner) is a success that
	// writes nothing and returns the result stored then. An error whose
	// Permanent method reports true (see package batch) is not retried.
	Complete(ctx context.Context, rec Record) (stored []byte, err error)

	// Release deletes the record id, only if it is INPROGRESS and owned by
	// owner, so that a later delivery can run the operation again; a store
	// may keep a released mark instead, which Acquire treats as no record.
	// A record owned by someone else, a completed record, or no record is
	// left alone, and the error wraps [ErrLeaseLost]. Release clears a
	// quarantine mark with the record.
	Release(ctx context.Context, id, owner string) error

	// Quarantine marks found, a lapsed claim as Acquire returned it, in
	// one conditional write: only if the record is still INPROGRESS with
	// found's Owner (none when found has none) and ExpiresAt, its lease
	// ([Record.LeaseEnd]) ended before now, and it carries no mark yet. It
	// sets [AttrQuarantined] to now and LeaseUntil to the record's expiry,
	// keeps the rest, and returns the record as it is then. When the
	// condition fails nothing is written, the error wraps [ErrLeaseLost],
	// and the record returned is the one that failed it when the store
	// can tell (the zero Record otherwise): a retry of an applied
	// Quarantine, or one that lost a race, returns the record quarantined
	// with that error.
	Quarantine(ctx context.Context, found Record, now time.Time) (Record, error)
}

// Extender is implemented by stores that extend a live claim's lease for
// its owner, so that a guard keeps a claim alive while its operation runs
// (see idempotency.Config.KeepAlive). It is optional, as [AttachValidator]
// and [Inspector] are: a store without it still works, and a guard on it
// runs every operation within the lease it claimed (the context ends
// before that lease does), as it did before extensions existed. Every
// store of this module implements it.
type Extender interface {
	// Extend moves the lease of the claim rec.ID to rec's, in one
	// conditional write: only if the record is INPROGRESS, owned by
	// rec.Owner, carries no quarantine mark and has not expired at now
	// (a record past its ExpiresAt counts as none, as for Acquire). For a
	// strict claim (rec.Strict()) it sets the record's StrictLease to
	// rec.StrictLease; for any other claim, its LeaseUntil to
	// rec.LeaseUntil. It writes nothing else (not the expiry, not the
	// owner), and does not compare the lease with now: a lease that lapsed
	// without being taken over is still its owner's, and Extend keeps it.
	// It may move a lease earlier as well as later; the guard only moves
	// it later. When the condition fails (the claim was taken over,
	// completed, released, quarantined, expired or is gone) nothing is
	// written and the error wraps [ErrLeaseLost]. Sent again after it was
	// applied, it succeeds as the first did. Any other error means nothing
	// is known of the write.
	Extend(ctx context.Context, rec Record, now time.Time) error
}

// ClaimMode says whether [Store.Acquire] takes over an INPROGRESS record
// whose lease lapsed.
type ClaimMode int

const (
	// Takeover claims a lapsed lease: the claim of a default guard.
	Takeover ClaimMode = iota
	// NoTakeover returns a lapsed lease with loaded true, as a live one:
	// the claim of a strict call, which quarantines it instead.
	NoTakeover
)

// AttachValidator is implemented by stores that commit writes attached to
// a completion (see Record.Attached). ValidateAttached reports, before
// the operation goes on, whether the store could commit writes attached
// to the record id: an error wrapping [ErrAttachUnsupported] for writes it
// cannot take.
type AttachValidator interface {
	ValidateAttached(id string, writes []any) error
}

// Status is the state of a stored record: Powertools for AWS Lambda's
// strings.
type Status string

// The two states a stored record can be in; an absent record is the third.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
)

// The default attribute names of a record, as Powertools for AWS Lambda
// documents them, and this module's beside them. A store that persists
// records by attribute name uses them unless configured otherwise; the
// table's TTL is on AttrExpiration.
const (
	AttrID           = "id"                      // S: the record id, "{namespace}#{digest}"
	AttrStatus       = "status"                  // S: INPROGRESS or COMPLETED
	AttrExpiration   = "expiration"              // N: epoch seconds; the table's TTL attribute
	AttrLeaseExpiry  = "in_progress_expiration"  // N: epoch milliseconds; Record.LeaseUntil
	AttrData         = "data"                    // S: the stored result, JSON
	AttrValidation   = "validation"              // S: digest of the validated payload
	AttrOwner        = "lease_owner"             // S: the lease owner token (fencing)
	AttrDataEncoding = "data_encoding"           // S: "gzip" for a compressed result
	AttrDataOmitted  = "data_omitted"            // BOOL: a result too large to store
	AttrQuarantined  = "quarantined"             // N: epoch milliseconds; Record.Quarantined
	AttrStrictLease  = "strict_lease_expiration" // N: epoch milliseconds; Record.StrictLease
)

// Record is one idempotency record: the claim on a key and, once the
// operation completed, its result.
type Record struct {
	ID     string // "{namespace}#{digest}"
	Status Status

	// ExpiresAt is when the record stops counting (stored in seconds): a
	// record past it is treated as absent.
	ExpiresAt time.Time

	// LeaseUntil is when an INPROGRESS claim may be taken over (stored in
	// milliseconds): the lease's end, or the record's expiry for a strict
	// or quarantined claim.
	LeaseUntil time.Time

	// StrictLease is a strict claim's lease end (stored in milliseconds),
	// zero for any other claim. A strict claim is written with LeaseUntil
	// at ExpiresAt, so that no reader of LeaseUntil alone (a default
	// claim, an older release, Powertools) takes it over; see LeaseEnd.
	StrictLease time.Time

	// Data is the result as JSON: nil while in progress, and on a
	// completed record whose result could not be stored.
	Data []byte

	// Validation is the digest of the payload that must match when the key
	// is reused; empty without payload validation.
	Validation string

	// Owner is the lease owner token that fences Complete and Release, random
	// per claim. Records written by other libraries have none.
	Owner string

	// Quarantined is when a claim that found this INPROGRESS record lapsed
	// quarantined it (see Store.Quarantine); zero otherwise.
	Quarantined time.Time

	// Attached holds the writes attached to the completion, in order; it
	// is set only on a record passed to Store.Complete.
	Attached []any
}

// LeaseEnd returns when the claim's holder's lease ends: StrictLease for a
// strict claim, else LeaseUntil.
func (r Record) LeaseEnd() time.Time {
	if r.Strict() {
		return r.StrictLease
	}
	return r.LeaseUntil
}

// Strict reports whether r is a strict claim: a StrictLease, on a record
// whose LeaseUntil is at or after its ExpiresAt, as a strict claim is
// written. A writer that does not know StrictLease may have left one
// beside a lease of its own, which then does not count.
func (r Record) Strict() bool {
	return !r.StrictLease.IsZero() && !r.LeaseUntil.Before(r.ExpiresAt)
}
