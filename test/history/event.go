package history

// Version is the format version a [Writer] writes in every header.
const Version = 1

// Kind says what an [Event] records.
type Kind string

// The kinds of events. Each names the fields it uses; every event has Seq,
// T, Proc and Ev, and an event about one delivery has D (its key is the
// delivery's when Key is empty).
const (
	// KindHeader is the first line of every file (see [Header]).
	KindHeader Kind = "header"
	// KindProc: a process started. Reader is the kind of reader it runs,
	// Off its guard's clock offset from T, in nanoseconds, Sealer whether
	// its guard seals and opens results (idempotency.Config.Sealer).
	KindProc Kind = "proc"
	// KindExit: a process stopped cleanly.
	KindExit Kind = "exit"
	// KindDeliver: a message was received. D is the delivery (unique in
	// the run), Msg the message id, Rc its receive count, Key its key,
	// Payload the digest of its validated payload, Inv the invocation (the
	// batch) it came in, Deadline that invocation's deadline (unix ns, the
	// recorder's clock; 0 for none).
	KindDeliver Kind = "deliver"
	// KindClaim: a claim attempt and the store's answer, recorded at the
	// store: Resp is a claim response (RespClaimed ... RespError), Reader
	// the claimer's kind, Owner the owner token written, Lease and Exp
	// the lease end and expiry written (epoch ms, the claimer's clock),
	// Payload the validation digest written,
	// Clock the claimer's clock when it sent the claim. Prev is the owner
	// of the record found (refused) or replaced (taken over), Expired
	// whether the record replaced had expired, Result the found record's
	// result (replayed), opened if it is sealed, and Sealed whether it is
	// stored sealed.
	KindClaim Kind = "claim"
	// KindOpStart: the operation began a run for delivery D under the
	// claim of Owner.
	KindOpStart Kind = "op_start"
	// KindOpEnd: the run ended. Resp is RespOK (Result: the result's
	// digest) or RespError (the operation failed).
	KindOpEnd Kind = "op_end"
	// KindComplete: one completion attempt, fenced on Owner. Resp is
	// RespOK (Result: the result as stored), RespLeaseLost, RespRefused (the
	// store refused it for good: an attached write's condition failed) or
	// RespError; Clock the guard's clock when it was sent.
	KindComplete Kind = "complete"
	// KindRelease: a release of Owner's claim (the operation failed).
	// Resp: RespOK, RespLeaseLost or RespError.
	KindRelease Kind = "release"
	// KindQuarantine: a quarantine of the lapsed claim found (Owner, Exp,
	// Lease: the record as found). Resp: RespOK, RespLeaseLost (the record
	// was no longer the claim found; Status, Result and Sealed: the record
	// that refused it, when the store returned one COMPLETED) or RespError.
	KindQuarantine Kind = "quarantine"
	// KindExtend: an extension of Owner's lease to Lease (epoch ms). Resp:
	// RespOK, RespLeaseLost or RespError.
	KindExtend Kind = "extend"
	// KindOutcome: what the guard reported for D's call: Outcome, Ran,
	// Source ("store", "cache" or "shared" when the outcome is not this
	// call's own claim's), Class (why a call failed; [ClassUnsealed] for a
	// sealed result the guard could not open).
	KindOutcome Kind = "outcome"
	// KindAck: D is acknowledged (it was not a batch item failure and is
	// deleted); Result is the result the record function returned.
	KindAck Kind = "ack"
	// KindFail: D was reported as a batch item failure; Class says why.
	KindFail Kind = "fail"
	// KindVisibility: the visibility of D's message was changed to Dur
	// (ns); Err if the change failed.
	KindVisibility Kind = "visibility"
	// KindMove: a message went to the dead-letter queue: D's (Op
	// "sqsdlq": the handler's mover sent it there and deleted it; D is
	// neither acknowledged nor failed), or Msg (Op "redrive_policy": SQS
	// moved it after MaxReceiveCount receives). Key is its key.
	KindMove Kind = "move"
	// KindRedrive: an operator sent message Target from the dead-letter
	// queue into the queue again, as the new message Msg (Key its key).
	KindRedrive Kind = "redrive"
	// KindFault: a fault was injected: Fault, Target (the process it hit,
	// when it hit one), Op (the store call it hit), Dur (a delay), Off (a
	// clock skew: the target's new offset).
	KindFault Kind = "fault"
	// KindOperator: an operator acted on Key's record: Resp "release" (the
	// record is gone; the next delivery runs the operation) or "resolve"
	// (the record is COMPLETED with Result).
	KindOperator Kind = "operator"
	// KindFinal: Key's record as read from the store after the run:
	// Status ("" for none), Result, Owner, Exp, Quarantined.
	KindFinal Kind = "final"
)

// Resp is a store's answer to one request, as the recorder saw it at the
// store (not as the guard reported it).
type Resp string

// Answers to a claim: what the store returned.
const (
	RespClaimed     Resp = "claimed"     // the key was free (or held by this claim: a re-sent claim)
	RespTakenOver   Resp = "taken_over"  // it replaced an INPROGRESS claim whose lease had ended (or an expired record: Expired)
	RespReplayed    Resp = "replayed"    // it found a COMPLETED record (Result: its result)
	RespInProgress  Resp = "in_progress" // it found an INPROGRESS claim it may not take over
	RespQuarantined Resp = "quarantined" // it found a quarantined claim
	RespMismatch    Resp = "mismatch"    // it found a record of another payload
)

// Answers to a completion, a release, a quarantine, an extension; an
// operation's end. RespError is a claim's answer too.
const (
	RespOK        Resp = "ok"
	RespLeaseLost Resp = "lease_lost" // the fence failed: the record was not the caller's claim
	RespRefused   Resp = "refused"    // refused for good: an attached write's condition failed
	RespError     Resp = "error"      // the store failed, or the call did not get an answer
)

// Answers of an operator ([KindOperator]).
const (
	RespOperatorRelease Resp = "release"
	RespOperatorResolve Resp = "resolve"
)

// The guard's outcomes (the names of the idempotency package's Outcome
// constants, as it logs them).
const (
	OutcomeClaimed     = "claimed"
	OutcomeTakenOver   = "taken_over"
	OutcomeReplayed    = "replayed"
	OutcomeInProgress  = "in_progress"
	OutcomeMismatch    = "mismatch"
	OutcomeReleased    = "released"
	OutcomeFailed      = "failed"
	OutcomeDoubleRun   = "double_run"
	OutcomeQuarantined = "quarantined"
)

// ClassUnsealed is the Class of an outcome whose call failed with
// driver.ErrUnsealed: it found a sealed result it could not open (its guard
// has no Sealer, or the Sealer refused it).
const ClassUnsealed = "unsealed"

// Reader is the kind of a process that reads and writes records; it
// includes the guard's mode.
type Reader string

// The readers of a run.
const (
	ReaderSqsonce       Reader = "sqsonce"        // a guard in default mode
	ReaderSqsonceStrict Reader = "sqsonce-strict" // a guard in strict mode
	ReaderPowertoolsTS  Reader = "powertools-ts"  // Powertools for AWS Lambda (TypeScript)
)

// Strict reports whether r claims without taking lapsed claims over.
func (r Reader) Strict() bool { return r == ReaderSqsonceStrict }

// Fault names an injected fault.
type Fault string

// The faults.
const (
	FaultDropRequest   Fault = "drop_request"   // the request never reached the store
	FaultDropResponse  Fault = "drop_response"  // the store applied the request; its answer was lost
	FaultErrorResponse Fault = "error_response" // answered with an error (5xx, throttling) without forwarding
	FaultDelay         Fault = "delay"          // the request or its answer was held for Dur
	FaultConnKill      Fault = "conn_kill"      // the connection was closed
	FaultProcKill      Fault = "proc_kill"      // Target was killed (SIGKILL, or Lambda ending an invocation)
	FaultClockSkew     Fault = "clock_skew"     // Target's guard clock now runs Off from true time
)

// Header is the first line of every history file: which run it belongs to
// and how to repeat it. Every file of one run has the same Run, Seed and
// Profile.
type Header struct {
	Ev      Kind   `json:"ev"` // KindHeader
	Version int    `json:"version"`
	Run     string `json:"run"`     // the run's id: the same in every file of the run
	Seed    uint64 `json:"seed"`    // what every random draw of the run comes from
	Profile string `json:"profile"` // the fault profile
	Proc    string `json:"proc"`    // the process that writes this file
	T       int64  `json:"t"`       // when the file was started, unix ns
	// SkewMargin is the guards' Config.SkewMargin, in ns: the clock
	// disagreement the promise allows for.
	SkewMargin int64 `json:"skew_margin"`
	// LeaseExtension says the guards keep a live owner's lease alive; then
	// outliving a lease explains a double run only for an owner cut off
	// from the store (a fault hit it).
	LeaseExtension bool `json:"lease_extension,omitempty"`
	// Replay is the command that repeats the run.
	Replay string `json:"replay,omitempty"`
}

// Event is one line of a history. Which fields an event uses depends on its
// kind (see [Kind]); unused fields are left zero and not written. Times are
// unix nanoseconds of the recorder's clock (T, Clock, Dur, Off), except
// lease ends and expiries, which are epoch milliseconds of the writer's
// clock, as records store them (Lease, Exp).
type Event struct {
	Seq  uint64 `json:"seq"`  // the writer's sequence number: 1, 2, ...
	T    int64  `json:"t"`    // when it was recorded
	Proc string `json:"proc"` // the process that recorded it
	Ev   Kind   `json:"ev"`

	Inv      string `json:"inv,omitempty"`      // the invocation (one batch)
	D        string `json:"d,omitempty"`        // the delivery: one receive of one message
	Msg      string `json:"msg,omitempty"`      // the message id
	Rc       int    `json:"rc,omitempty"`       // the message's receive count
	Key      string `json:"key,omitempty"`      // the record's key: the same for every delivery of one request
	Payload  string `json:"payload,omitempty"`  // the digest of the validated payload
	Deadline int64  `json:"deadline,omitempty"` // the invocation's deadline, unix ns
	Reader   Reader `json:"reader,omitempty"`
	Resp     Resp   `json:"resp,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Ran      bool   `json:"ran,omitempty"`
	Source   string `json:"src,omitempty"`
	Class    string `json:"class,omitempty"`
	Sealer   bool   `json:"sealer,omitempty"` // a process's guard has a Sealer
	Sealed   bool   `json:"sealed,omitempty"` // a found record's result is stored sealed

	Owner   string `json:"owner,omitempty"` // a lease owner token
	Prev    string `json:"prev,omitempty"`  // the owner of the record a claim found or replaced
	Expired bool   `json:"expired,omitempty"`
	Lease   int64  `json:"lease,omitempty"` // epoch ms
	Exp     int64  `json:"exp,omitempty"`   // epoch ms
	Clock   int64  `json:"clock,omitempty"` // the guard's clock reading, unix ns
	Result  string `json:"result,omitempty"`

	Status      string `json:"status,omitempty"` // a final record's status: INPROGRESS, COMPLETED, or "" for none
	Quarantined bool   `json:"quarantined,omitempty"`

	Fault  Fault  `json:"fault,omitempty"`
	Target string `json:"target,omitempty"`
	Op     string `json:"op,omitempty"`
	Dur    int64  `json:"dur,omitempty"`
	Off    int64  `json:"off,omitempty"`

	Err string `json:"err,omitempty"` // an error's text; never message content

	// Pos is the event's place in a merged history, from 1; not written.
	Pos int `json:"-"`
}

// The statuses of a final record.
const (
	StatusInProgress = "INPROGRESS"
	StatusCompleted  = "COMPLETED"
)
