// Package poll waits, in tests, for a condition that other goroutines or
// processes make true, bounded by a deadline that fails the test with a
// message naming what it waited for: a wait that cannot end (a renamed
// function, a server that never answers) fails in seconds instead of
// hanging until the test binary's timeout.
package poll

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Interval is the time between two checks of the condition.
const Interval = time.Millisecond

// Until checks cond every [Interval] until it returns true, and fails t
// with "waited {timeout} for {what}" when timeout passes first. It must be
// called from the test's own goroutine.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", timeout, what)
		}
		time.Sleep(Interval)
	}
}

// Goroutines waits until at least n goroutines have frame (a function as
// a stack dump names it, e.g. "idempotency.(*Guard).run(") in their
// stacks, read from dumps of all goroutines' stacks, and fails t after a
// minute: a renamed function fails the test with a message.
func Goroutines(t testing.TB, n int, frame string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	Until(t, time.Minute, fmt.Sprintf("%d goroutines in %s, read from stack dumps", n, frame), func() bool {
		for {
			k := runtime.Stack(buf, true)
			if k < len(buf) {
				return strings.Count(string(buf[:k]), frame) >= n
			}
			buf = make([]byte, 2*len(buf))
		}
	})
}
