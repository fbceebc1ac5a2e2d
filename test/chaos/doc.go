// Package chaos is the repository's chaos test: an emulator of Lambda's SQS
// event source mapping on moto_server's SQS and DynamoDB, with all four
// causes of redelivery and the faults that make them, and an exact account
// per key of what ran and what was acknowledged, checked again as a
// recorded history (package test/history).
//
//	go test ./test/chaos          # the short profile, on both table layouts (part of make test)
//	make chaos                        # the long runs, 300 keys each
//
// # What runs
//
// [Run] creates a queue with a redrive policy to a dead-letter queue and a
// table (keyed by id, or with [Profile.SortKey] by a partition key and a
// sort key, as a table shared with Powertools' sortKeyAttr), starts Workers poller processes (the worker command, built by
// [BuildWorker]) and a producer. Each worker receives batches, runs the
// real batch handler (package batch) around the real guard (package
// idempotency) on the real store (package dynamostore), under an invocation
// deadline, and deletes the records that did not fail; the event and the
// settling of the batch are package internal/testenv/esm's. With
// [Profile.Invocations] each worker process runs that many invocations at
// once, each polling its own batches through the one handler and guard, as
// aws-lambda-go does under AWS_LAMBDA_MAX_CONCURRENCY (the concurrent
// profile: four). The operation
// records its start and end in the worker's history and returns its run id,
// which becomes the stored result. The producer sends every key
// once, some twice byte for byte (a broker duplicate), and some again with a
// new message id (a producer's re-send).
//
// With [Profile.Pacing] the handler paces redelivery (batch.Options.Pacing):
// the visibility of each failed record's message is changed on the queue
// through package sqsvisibility, so that it comes back just after the
// holder's lease can end, or after a backoff. The profiles differ in timing
// and faults (see [Profiles]); the lambda profile has the shipped stack's
// proportions, a visibility timeout six times the invocation deadline, and
// is the one to compare pacing off and on. With pacing on the handler also
// keeps the messages of running records invisible (batch.KeepVisible).
//
// # Keep-alive
//
// With [Profile.KeepAlive] the guards keep their claims' leases alive
// (their default; the other profiles turn it off, as they ran before the
// recording store passed Extend through). The keepalive profile runs
// operations of 5 to 8 s without an invocation deadline on a 2 s lease,
// with store faults and no kills: every owner lives, and the report counts
// taken-over live owners (a claim taken over while its worker lived and its
// call had not returned), which must be 0, and the extensions per run.
//
// # The mixed fleet
//
// With [Profile.Mix] the slots run different kinds of worker on one table in
// Powertools for AWS Lambda (TypeScript)'s format: sqsonce guards in default
// and strict mode, and Powertools workers, each a Go process (receive,
// deadline, delete, as for sqsonce) handing its batches to one long-lived
// node process running internal/testenv/powertools/testdata/worker.mjs:
// BatchProcessor around makeIdempotent, the pinned package, which records
// its own history. The mixed profile keeps Powertools' runs inside their
// lease (no slow operations, no kill between an operation and its
// completion on its workers, one clock) and holds every property across the
// three readers; mixed-peer gives Powertools every fault. A violation whose
// breaking write ([history.Violation.Breaker]) is Powertools' own (its
// completion and delete are not conditional) is reported as a finding about
// Powertools ([Report.Findings]), apart from the violations of sqsonce's
// promise; a violation beside a Powertools write that sqsonce's write broke
// is a violation.
//
// # Faults
//
//   - SIGKILL of a random worker at random moments; a worker SIGKILLs itself
//     between an operation and its completion; a worker whose batch overruns
//     its deadline is SIGKILLed, as Lambda ends an invocation. A killed
//     worker is restarted as a new process.
//   - Operations slower than the visibility timeout: the message comes back
//     while its run goes on.
//   - A proxy in front of DynamoDB answers 5xx and ThrottlingException and
//     resets connections, before forwarding a request and after the write
//     was applied.
//   - Batches with short deadlines.
//
// Faults stop after [Profile.FaultsFor]; then the queue must drain.
//
// # The history
//
// Every run writes a history (package test/history) to Dir/history: one
// file per worker incarnation, fsync'd at every write, with each delivery,
// the guard's outcome, the operation's start and end, the acknowledgement or
// failure of each record, each visibility change, and every call to the
// store with its answer, recorded by a store wrapped around dynamostore
// (recordstore.go) that implements every optional interface of package
// driver dynamostore does; the proxy's file with each store fault; the
// harness's with each kill, each clock offset and every key's record at the
// end. history.Check judges it: each violation fails the run, and so does a
// property the profile requires ([Profile.Require]) that the run gave no
// case to check. The header's replay command repeats the run with the same
// seed: the same keys, sends, faults and draws.
//
// # The account
//
// From the histories, the table and the DLQ, per key: the runs begun and
// finished, the stored result, every acknowledgement and the result it saw,
// the DLQ messages and the last failure of each. The run fails (see
// [Report.Violations]) on
//
//   - a finished run whose result is not the stored one, unless its worker
//     was killed between the operation and its completion, or its completion
//     failed with a store error: the two exceptions of the promise (see
//     package github.com/sqsonce/sqsonce/middleware/idempotency);
//   - an acknowledged delivery that saw another result than the stored one;
//   - an acknowledgement of a key that is not COMPLETED;
//   - a key neither COMPLETED nor in the DLQ with a logged reason, or a queue
//     that does not drain;
//   - in strict mode ([Profile.Strict]), a key whose operation started again
//     after a run that was not released, or a key neither COMPLETED nor
//     quarantined; without it, any quarantined record.
//
// [WriteTable] prints the reports side by side, then each run's verdict.
//
// # Processes
//
// Every worker runs in its own process group and dies with the harness
// (Pdeathsig on Linux); [Run] stops them all before it returns, SIGTERM first
// and SIGKILL after a grace period. Every loop is bounded in time.
package chaos
