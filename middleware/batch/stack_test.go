package batch

import (
	"context"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"
)

// deepFrames is how many deep calls use: 12 KiB of frames, more than a
// goroutine starts with and less than growStack leaves room for.
const deepFrames = 12

// deep calls itself n times, each call with a 1 KiB frame.
//
//go:noinline
func deep(n int) byte {
	var frame [1 << 10]byte
	frame[n] = byte(n)
	if n == 0 {
		return lastOf(frame[:])
	}
	return deep(n-1) + lastOf(frame[:])
}

// stackMoves reports whether running deep(deepFrames) on the calling
// goroutine moved its stack: the runtime grows a stack by copying it, so a
// local's address changes when it grows.
//
//go:noinline
func stackMoves() bool {
	var here byte
	before := uintptr(unsafe.Pointer(&here))
	deep(deepFrames)
	return uintptr(unsafe.Pointer(&here)) != before
}

// noGC turns garbage collection off for the test: a collection may shrink
// a stack that is less than a quarter used, which moves it as a growth
// does.
func noGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// onNewGoroutine runs f on a new goroutine and returns its result.
func onNewGoroutine(f func() bool) bool {
	var got bool
	var wg sync.WaitGroup
	wg.Go(func() { got = f() })
	wg.Wait()
	return got
}

// A goroutine's stack grows while deep runs, unless growStack grew it
// first: the check that the tests below can see a growth at all, and that
// the compiler kept growStack's frame.
func TestGrowStackGrowsOnceUpFront(t *testing.T) {
	noGC(t)
	if !onNewGoroutine(stackMoves) {
		t.Fatal("a new goroutine's stack did not move while 12 KiB of frames ran: this test cannot see a stack grow")
	}
	if onNewGoroutine(func() bool { growStack(); return stackMoves() }) {
		t.Fatal("after growStack, the stack moved while 12 KiB of frames ran: growStack did not grow it (its frame optimized away?)")
	}
}

// The workers that run a batch's records start with their stacks grown: a
// record whose path is 12 KiB deep never waits for a stack copy, whether
// the records run concurrently or, one at a time, on the caller's
// goroutine (a new one here, as the Lambda runtime's may be after its stack
// shrank).
func TestWorkersStartWithGrownStacks(t *testing.T) {
	noGC(t)
	for _, concurrency := range []int{0, 1} {
		t.Run("concurrency="+strconv.Itoa(concurrency), func(t *testing.T) {
			if !onNewGoroutine(func() bool { return recordsGrewStacks(t, concurrency) == 0 }) {
				t.Fatal("records grew their worker's stack; want none")
			}
		})
	}
}

// recordsGrewStacks runs a batch of records, each running 12 KiB of
// frames, under Options.Concurrency concurrency, and returns how many moved
// their goroutine's stack.
func recordsGrewStacks(t *testing.T, concurrency int) int {
	var mu sync.Mutex
	moved := 0
	h := SQS(func(ctx context.Context, m events.SQSMessage) (struct{}, error) {
		if stackMoves() {
			mu.Lock()
			moved++
			mu.Unlock()
		}
		return struct{}{}, nil
	}, Options{Concurrency: concurrency})
	var ev events.SQSEvent
	for i := range 3 * DefaultConcurrency {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: "m" + strconv.Itoa(i), Body: "{}"})
	}
	resp, err := h(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("handler: %v, %d failures", err, len(resp.BatchItemFailures))
	}
	if moved != 0 {
		t.Logf("%d of %d records grew their worker's stack", moved, len(ev.Records))
	}
	return moved
}
