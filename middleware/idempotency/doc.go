// Package idempotency makes an SQS-triggered Lambda handler idempotent: the
// operation behind an idempotency key runs at most once, and every later
// delivery of the key gets the stored result.
package idempotency
