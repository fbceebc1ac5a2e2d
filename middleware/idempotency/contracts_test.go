package idempotency

import "github.com/sqsonce/sqsonce/middleware/batch"

// The contracts between this package and package batch, which import
// neither the other: renaming a method breaks this build rather than
// silently turning single logging, pacing or dead-lettering off.
var (
	_ batch.LoggedError    = (*reported)(nil)
	_ batch.RetryAtError   = (*InProgressError)(nil)
	_ batch.PermanentError = (*BodyError)(nil)
	_ batch.PermanentError = (*KeyError)(nil)
	_ batch.PermanentError = (*PayloadMismatchError)(nil)
	_ batch.PermanentError = (*QuarantinedError)(nil)
	_ PermanentError       = batch.PermanentError(nil) // one method, one meaning
)
