//go:build race

package idempotency_test

// raceDetector is true when the tests run with -race, which changes what
// allocates (sync.Pool drops items at random): allocation ceilings are
// measured without it.
const raceDetector = true
