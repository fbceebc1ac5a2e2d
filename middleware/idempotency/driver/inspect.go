package driver

import (
	"context"
	"iter"
	"strings"
)

// Inspector is implemented by stores whose records operators' tools can
// read without a claim, and release or complete fenced on the record as
// read, so that a claim without an owner (Powertools writes none) can be
// acted on too, and a record that changed since it was read is left
// alone. The guard never calls it. Reads are strongly consistent where the
// store offers it, and return records as stored, expired ones included.
type Inspector interface {
	// Inspect returns the record id, or an error wrapping [ErrNotFound]
	// when there is none (a released claim included). A record that cannot
	// be read in full is returned with what could be read, and an error
	// saying why.
	Inspect(ctx context.Context, id string) (StoredRecord, error)

	// List yields the records opts selects, in no given order, reading the
	// store page by page as the caller iterates. A record that cannot be
	// read in full is yielded with what could be read and an error, and
	// the listing goes on; an error with a zero StoredRecord ends it.
	List(ctx context.Context, opts ListOptions) iter.Seq2[StoredRecord, error]

	// ReleaseInspected releases found, an INPROGRESS record as Inspect
	// returned it, in one write fenced on the record being unchanged since
	// it was read (status, owner or none, expiry, lease end, a strict
	// claim's StrictLease, quarantine mark): an extension since the read
	// fails it. A record that changed, or is gone, is left alone and the
	// error wraps [ErrLeaseLost].
	ReleaseInspected(ctx context.Context, found Record) error

	// CompleteInspected completes found, fenced as ReleaseInspected, with
	// done's Data, ExpiresAt and Owner. It never completes a record
	// without its result: one the store cannot keep in full is refused.
	// Finding the record COMPLETED with done's owner and result (the write
	// sent again after it was applied) is a success.
	CompleteInspected(ctx context.Context, found, done Record) error
}

// StoredRecord is a record as an [Inspector] read it: the [Record], and
// how its result is kept.
type StoredRecord struct {
	Record
	Size     int    // bytes of the result as stored (compressed, or in the store's types); 0 for none
	Encoding string // "gzip" for a result stored compressed, else empty
	DataMark string // the store's mark of how it holds the result (dynamostore's data format), if any
	Omitted  bool   // the record was completed without its result: too large to store
}

// ListOptions selects the records [Inspector.List] yields; the zero value
// selects every record.
type ListOptions struct {
	Status Status // when not empty, the records of that status
	Prefix string // when not empty, the records whose id starts with it, such as "orders#"
}

// Match reports whether opts selects rec.
func (o ListOptions) Match(rec Record) bool {
	return (o.Status == "" || rec.Status == o.Status) && strings.HasPrefix(rec.ID, o.Prefix)
}
