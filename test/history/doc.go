// Package history records what happened in a run of sqsonce under faults,
// and checks the promise of package
// github.com/sqsonce/sqsonce/middleware/idempotency ("The promise") on the
// record: the chaos test and the simulation write histories, and [Check]
// (or the command in cmd/check) judges them.
//
//	w, err := history.Create(dir+"/w1.jsonl", history.Header{Run: id, Seed: seed, Profile: "all", Proc: "w1", SkewMargin: int64(time.Second)}, history.WriterOptions{Sync: true})
//	err = w.Write(history.Event{Ev: history.KindDeliver, D: "w1/7", Msg: id, Rc: 2, Key: key})
//	h, err := history.ReadFiles(dir)
//	v := history.Check(h) // v.Failed(), v.Write(os.Stdout, 3)
//
// It is test support, not part of the library.
//
// # The format
//
// A history is one file per process, JSON lines: a [Header] first (the
// run, its seed and profile, the guards' skew margin, the command that
// repeats the run), then events ([Event]) numbered by the writer (Seq), stamped
// with its clock (T, unix ns). [ReadFiles] merges the files of a run by
// time, keeping each file's own order; the processes of a run share a
// host, so their clocks agree. A process killed while writing leaves a
// last line cut short, which [Read] drops.
//
// The events of one delivery (one receive of a message) share its id, D.
// They come from three witnesses that the checker holds against each
// other: the store's answers (claim, complete, release, quarantine,
// extend, recorded where the guard calls the store), the guard's report
// (outcome), and the batch's decision (ack, fail). The operation records
// its own start and end (op_start, op_end), the fault injectors each fault
// (fault), the harness the records it reads at the end (final). A result is
// recorded as a digest (Result) that every witness computes alike.
//
// # The properties
//
// Each key's record lives in epochs: an epoch ends when a claim replaces
// the record because it expired, or when an operator releases it. Within
// an epoch, [Check] verifies each of [Properties]:
//
//   - at_most_once: at most one run of the operation completes (op_end ok)
//     but for runs whose result is not stored and that a [Cause] explains:
//     the run's worker was killed before a completion was answered; every
//     completion attempt failed; the store refused it for good; the
//     completion found the lease taken over after the run outlived its
//     invocation's deadline (recorded by the harness, not the guard's lease
//     arithmetic; without one, the lease it was granted: its lease end less
//     the skew margin, by its own clock; with Header.LeaseExtension, only
//     for a worker a fault cut off); the claim was taken over by a clock off
//     by the skew margin or more. No cause explains a second run under a
//     strict claim.
//   - strict_once: no run starts after a run under a strict claim, and no
//     run under a strict claim starts after another run, unless the earlier
//     run's claim was released first.
//   - one_result: one completion succeeds; the record at the end and every
//     claim that found it completed show that result; a stored result is
//     some run's.
//   - ack_saw_stored: an acknowledged delivery returned the stored result.
//   - ack_completed: an acknowledged delivery saw the record COMPLETED: its
//     own completion succeeded, or a claim of its found the record
//     completed, or (an outcome shared in its process or served from its
//     cache) another delivery of the key in its process saw it so; and the
//     record is COMPLETED at the end.
//   - payload_validated: an acknowledged delivery carried the payload of
//     the run whose result is stored (the promise's payload validation).
//   - quarantine_holds: after a quarantine, no run but the quarantined
//     claim's own, until that claim's owner releases it or the epoch ends.
//   - failure_not_acked: a delivery whose call failed is not acknowledged.
//   - double_run_reported: a run whose result is not stored is reported
//     double_run or as a failure, never as claimed; a double_run outcome
//     belongs to a run that completed and is not the stored one.
//   - expiry_held: no claim takes a record as expired while its owner's
//     run still runs, unless the claimer's clock runs SkewMargin or more
//     ahead of the owner's: the keep-alive ends an operation's context
//     before a reader within the margin may take the record as expired.
//   - sealed_held: a delivery whose guard has no Sealer (Event.Sealer)
//     and that found its record COMPLETED with a sealed result fails,
//     neither replaying the sealed text nor running; one whose guard has
//     a Sealer opens it (its call does not fail with ClassUnsealed).
//
// The [Verdict] counts the cases each property checked, the violations with
// the events that show them, and the explained double runs by cause.
package history
