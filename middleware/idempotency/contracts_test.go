package idempotency

import "github.com/sqsonce/sqsonce/middleware/batch"

// The contracts between this package and package batch, which import
// neither the other: renaming a method breaks this build rather than
// silently turning single logging or pacing off.
var (
	_ batch.LoggedError  = (*reported)(nil)
	_ batch.RetryAtError = (*InProgressError)(nil)
)
