package batch

// workerFrame is the stack frame growStack takes: about 16 KiB of free
// stack for what runs after it.
const workerFrame = 16 << 10

// growStack makes the calling goroutine's stack hold about workerFrame
// more bytes than it uses now, growing it in one step while it is shallow
// if it must: a new goroutine's, from the runtime's starting size to 32 KiB.
//
// The runtime doubles a goroutine's stack whenever a call would overflow
// it, copying the stack and adjusting every frame on it each time. A
// record that claims its key in DynamoDB runs the SDK's middleware several
// frames deep under the guard's, and so grew its worker's stack three or
// four times, each copy walking a deep stack: in BenchmarkFloor
// (tools/benchpeer) runtime.newstack took 4–8 % of the sqsonce arm's CPU.
// Growing it before the first record copies a frame or two instead. A
// record path deeper than about 30 KiB still grows the stack once more, and
// a garbage collection may shrink an idle stack again.
//
// The cost: a shallow record function's worker holds 32 KiB of stack
// instead of 2 KiB, for the batch, and each worker clears 16 KiB once
// (about a microsecond).
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
