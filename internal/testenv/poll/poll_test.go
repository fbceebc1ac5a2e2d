package poll_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/poll"
)

func TestUntilReturnsWhenTrue(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	poll.Until(t, time.Minute, "three increments", func() bool { return n.Load() == 3 })
}

// recorder is a testing.TB that records a fatal failure instead of
// stopping the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r) // as t.Fatalf, Until must not go on
}

func TestUntilFailsAtTheDeadline(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if v := recover(); v != r {
				t.Fatalf("Until returned or panicked with %v; want it to fail the test", v)
			}
		}()
		poll.Until(r, 20*time.Millisecond, "a condition that never holds", func() bool { return false })
	}()
	if want := "waited 20ms for a condition that never holds"; r.msg != want {
		t.Errorf("failure message %q, want %q", r.msg, want)
	}
}
