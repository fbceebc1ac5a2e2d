package driver

import "errors"

// The errors a store reports to the guard and to tools.
var (
	// ErrLeaseLost: a fenced write (Complete, Release, Quarantine, Extend
	// and the Inspector's writes) found the record owned by someone else, changed,
	// or gone, and wrote nothing.
	ErrLeaseLost = errors.New("idempotency: lease lost")

	// ErrNotFound: an [Inspector] found no record for an id.
	ErrNotFound = errors.New("idempotency: no record")

	// ErrAttachUnsupported: the store cannot commit the writes attached
	// to a completion.
	ErrAttachUnsupported = errors.New("idempotency: store cannot commit attached writes")
)
