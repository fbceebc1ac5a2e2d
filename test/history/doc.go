// Package history records what happened in a run of sqsonce under faults,
// one event a line: the chaos test and the simulation write histories.
//
//	w, err := history.Create(dir+"/w1.jsonl", history.Header{Run: id, Seed: seed, Profile: "all", Proc: "w1", SkewMargin: int64(time.Second)}, history.WriterOptions{Sync: true})
//	err = w.Write(history.Event{Ev: history.KindDeliver, D: "w1/7", Msg: id, Rc: 2, Key: key})
//	h, err := history.ReadFiles(dir)
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
package history
