package batch

// workerFrame is the stack frame growStack takes: enough that a worker's
// stack is grown once, to 32 KiB, before its first record, instead of
// doubling from the runtime's starting size while a record runs.
const workerFrame = 16 << 10

// growStack grows the calling goroutine's stack, once and while it is
// shallow, to what a record's path through an AWS SDK call needs.
//
// A goroutine starts with a small stack that the runtime doubles whenever
// a call would overflow it, copying the stack and adjusting every frame on
// it each time. A record that claims its key in DynamoDB runs the SDK's
// middleware stack several frames deep under the guard's, and so grew its
// worker's stack three or four times, each copy walking a deep stack: in
// BenchmarkFloor (tools/benchpeer) that was up to a tenth of a record's
// CPU. One frame of workerFrame bytes at a worker's start makes the
// runtime size the stack for it in one step, while only a frame or two
// are on it to copy; the stack is then large enough for the rest. The
// memory is the same 32 KiB a record's path grew to anyway, for the
// worker's life (one batch).
//
//go:noinline
func growStack() {
	var frame [workerFrame]byte
	lastOf(frame[:])
}

// lastOf reads b's last byte: a use of growStack's frame that the compiler
// cannot remove, and that lets it stay on the stack.
//
//go:noinline
func lastOf(b []byte) byte { return b[len(b)-1] }
