// Package sim is a deterministic simulation of sqsonce: the real
// batch.SQS(idempotency.Wrap(...)) handlers of several worker processes
// and the real memstore, on a simulated clock (testing/synctest), queue
// and network, with faults. It is test support, not part of the library;
// docs/verification.md says what it checks and how to run it.
//
// Every effect of every simulated process (a receive, a record's start,
// each store request, the operation's start and end, the guard's report,
// the acknowledgement) is a step that waits for one scheduler. Once every
// goroutine of the bubble is blocked, the scheduler sorts the waiting
// steps by a stable name and lets the run's [Tape] pick the next, or kill
// its process (as SIGKILL would: nothing it does later is seen), or skew
// its clock; each store request may be dropped before the store, have its
// answer dropped after it, or be held for up to 15 s (past a lease; it
// still arrives when its caller has given up). Lambda kills a worker whose
// invocation outlives its 3 s deadline. One seed gives one tape, and one
// tape one run: the same history, to the byte.
//
// Each run's history goes through history.Check, and the store operations
// the network delivered through porcupine (storetest/linearize). A failing
// tape shrinks to a shorter one that breaks the same property, printed as
// a schedule and saved under testdata/regress, which go test replays.
package sim
