// Package standalone holds no code: its test checks that the repository
// stands alone (no file refers to a document outside it) and that the
// promise of package idempotency is stated in one place, which the README
// and the store packages link to.
package standalone
