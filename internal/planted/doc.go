// Package planted switches on defects planted in the library, to prove
// that the tests catch them: each site is one line,
//
//	if planted.On(planted.CompleteUnfenced) { ... }
//
// and [On] is a constant false unless the build has the tag
// sqsonceplanted, so that the compiler removes the branch and its name: no
// planted defect ships (TestNoPlantedInBuild holds a built binary to it).
// With the tag, Enable turns defects on for a test; package test/sim runs
// each one and must catch it.
package planted

// The planted defects, one per site. Each name says what breaks.
const (
	// CompleteUnfenced: memstore's Complete skips the owner check.
	CompleteUnfenced = "complete-unfenced"
	// EarlyTakeover: memstore's Acquire takes a claim over 6 s before its
	// lease ends (more than the default skew margin).
	EarlyTakeover = "early-takeover"
	// NoSkewMargin: the guard writes a claim's lease without
	// Config.SkewMargin.
	NoSkewMargin = "no-skew-margin"
	// CompleteNotIdempotent: memstore's Complete refuses its own owner's
	// completed record (a retry of an applied completion) with
	// ErrLeaseLost.
	CompleteNotIdempotent = "complete-not-idempotent"
	// InProgressReplayed: the guard takes a record found in progress for a
	// replay, without an error.
	InProgressReplayed = "in-progress-replayed"
	// StrictLeaseReadable: a strict claim keeps its lease in LeaseUntil,
	// where a default guard reads it, instead of the record's expiry.
	StrictLeaseReadable = "strict-lease-readable"
	// FlightIgnoresPayload: calls of one key in one process share a run
	// whatever their payloads.
	FlightIgnoresPayload = "flight-ignores-payload"
	// QuarantineLapses: memstore's Acquire lets a default claim take a
	// quarantined record over.
	QuarantineLapses = "quarantine-lapses"
	// ReleaseUnfenced: memstore's Release skips the owner check.
	ReleaseUnfenced = "release-unfenced"
	// LostAsClaimed: the guard reports a completion that found its lease
	// taken over as its own claimed run.
	LostAsClaimed = "lost-as-claimed"
	// LoggedAsSuccess: package batch counts a record whose error was
	// logged already as a success.
	LoggedAsSuccess = "logged-as-success"

	// The defects where two features cross.

	// JSONGroupUnscoped: WrapJSON does not scope a message's record id by
	// its MessageGroupId under TenancyMessageGroup (typed bodies × fair
	// queues).
	JSONGroupUnscoped = "json-group-unscoped"
	// JSONIgnoresPayload: WrapJSON does not validate the payload of
	// WithPayload (typed bodies × payload validation).
	JSONIgnoresPayload = "json-ignores-payload"
	// JSONDropsStrict: WrapJSON claims in default mode whatever Strict
	// says (typed bodies × strict mode).
	JSONDropsStrict = "json-drops-strict"
	// CacheIgnoresPayload: a record served from the cache is replayed
	// whatever its payload (cache × payload validation).
	CacheIgnoresPayload = "cache-ignores-payload"
	// TenantUnscoped: under TenancyInvocation the record id is not scoped
	// by the invocation's tenant (tenant isolation × record ids).
	TenantUnscoped = "tenant-unscoped"
	// StrictExtendReadable: memstore's Extend of a strict claim moves its
	// LeaseUntil too, where a default guard reads a lapsing lease (strict
	// mode × keep-alive).
	StrictExtendReadable = "strict-extend-readable"
	// DLQDropsGroup: package sqsdlq's mover sends a message to a standard
	// dead-letter queue without its MessageGroupId (dead-letter path ×
	// message-group tenancy).
	DLQDropsGroup = "dlq-drops-group"
	// KeepAliveToExpiry: the keep-alive keeps an owner's lease up to the
	// record's expiry, without Config.SkewMargin (keep-alive limit × a
	// short ExpiresAfter × clock skew).
	KeepAliveToExpiry = "keepalive-to-expiry"
	// CacheKeepsSealed: the guard caches a result it completed as the
	// store keeps it, sealed, and a replay from the cache returns the
	// sealed text unopened (sealed results × the cache).
	CacheKeepsSealed = "cache-keeps-sealed"
	// NoSealerReplays: a guard without a Sealer takes a sealed result for
	// a plain one and replays the sealed text (sealed results × a reader
	// without the Sealer).
	NoSealerReplays = "no-sealer-replays"
)
