package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Defaults of the zero values of [Config], stated on its fields.
const (
	defaultExpiresAfter = 15 * 24 * time.Hour // above SQS's longest retention, 14 days
	defaultLease        = 15 * time.Minute    // a lease when the context has no deadline
	defaultSkewMargin   = 5 * time.Second     // added to every lease
)

// Config configures a [Guard]. Store and Namespace are required; every
// other zero value is the default its field names. [New] validates the
// whole once.
type Config struct {
	Store driver.Store // persists the records

	// Namespace begins every record id, "{Namespace}#{digest}": a fixed
	// string (not a generated function name, which a redeploy changes),
	// without a "#".
	Namespace string

	// ExpiresAfter is how long a record counts after it is claimed or
	// completed (the table's TTL). Default 15 days (above SQS's longest retention). New
	// refuses one below MinExpiry: the longest a message lives in its
	// queue (batch.QueueWindow); zero checks nothing.
	ExpiresAfter, MinExpiry time.Duration

	// Lease is how long a claim is held when the context has no deadline,
	// counted from before the claim is written; with one (inside Lambda)
	// the lease ends at the deadline. Default 15 minutes.
	Lease time.Duration

	// KeepAliveEvery is how often, while an operation runs, the guard
	// extends its claim's lease on a store that implements
	// [driver.Extender] (every store of this module does), each time to
	// the claimed lease's length from then (plus SkewMargin): one write
	// fenced on the claim's owner, which Powertools sees as a later
	// in_progress_expiration (a strict claim's strict lease moves
	// instead, so it is never quarantined while its owner lives). A
	// live owner is then never taken over, however long its operation
	// runs within KeepAliveLimit. If an extension is refused (the claim
	// was lost) or none is applied in time, the operation's context ends
	// a reserve before the lease would lapse, with a cause wrapping
	// [ErrLeaseNotExtended]. Default: a third of the lease (1 s at
	// Lambda's default 3 s timeout, 5 minutes with the default lease); an
	// operation shorter than that makes no extra write. A value above
	// half the lease counts as half. Negative turns keep-alive off: the
	// operation's context then ends a reserve before the claimed lease,
	// as it does on a store without Extend.
	KeepAliveEvery time.Duration

	// KeepAliveLimit bounds how long after its claim a lease is kept
	// alive: the operation's context ends a reserve before it, with a
	// cause wrapping ErrLeaseNotExtended (never before the claimed
	// lease). Default 12 h, the longest SQS keeps a received message
	// invisible; at most ExpiresAfter. Whatever the limit, the context
	// ends a reserve before ExpiresAfter less SkewMargin after the claim
	// (and so does a claimed lease that would reach past it): a worker
	// whose clock runs SkewMargin ahead takes the record as expired from
	// then, and may claim it.
	KeepAliveLimit time.Duration

	// SkewMargin is added to every stored lease end, so that workers whose
	// clocks disagree by less never take over a live claim; a dead holder's
	// key waits that much longer. Default 5 s; for none, set
	// a nanosecond.
	SkewMargin time.Duration

	// CacheBytes bounds the completed records served from memory until they
	// expire, least recently used out first (a record counts for its result,
	// id and digests, and 256 bytes). Zero turns the cache off.
	CacheBytes int

	Format Format // the record id's recipe; default FormatNative

	// Tenancy scopes record ids to a tenant: by default, to the
	// invocation's TenantID, so that a tenant never replays another's
	// result (see [Tenancy]); calls without a tenant keep their ids.
	// TenancyOff shares a table with Powertools, at a risk its doc states.
	Tenancy Tenancy

	// CompleteAttempts bounds the tries of a completion that fails with an
	// error that may pass (not one wrapping [driver.ErrLeaseLost],
	// [driver.ErrAttachUnsupported], [context.Canceled] or a
	// [failure.PermanentError] that reports true), within the context's
	// deadline. Default 3.
	CompleteAttempts int

	// Strict puts every call in strict mode (the option [Strict] puts one
	// wrapper's): a claim whose lease lapsed with the operation's outcome
	// unknown is never taken over. The call that finds it quarantines the
	// record and fails with a [*QuarantinedError], and so does every call of
	// the key, strict or not, until an operator releases it (the next
	// delivery runs the operation) or resolves it with a result, or it
	// expires. For operations where running twice is worse than not running:
	// a payment, an e-mail. A strict claim is written so that no reader
	// takes it over (see [driver.Record.StrictLease]).
	Strict bool

	Now func() time.Time // the clock; default time.Now

	// Logger gets one line per call, at its outcome's level (see [Outcome]).
	// Default slog.Default().
	Logger *slog.Logger

	// OnOutcome, if set, gets every call's Report after its log line, for
	// metrics. It must be safe for concurrent use.
	OnOutcome func(context.Context, Report)

	// OnRun, if set, is called each time the operation is about to run
	// under this call's claim (never for a replay, a key in progress or a
	// call that failed before its claim), with the operation's context: the
	// operation runs under the context it returns, and done gets the
	// operation's error (a panic as a *failure.PanicError) once it returned.
	// For tracing (package oteltrace). It must be safe for concurrent use.
	OnRun func(ctx context.Context) (_ context.Context, done func(error))
}

// withDefaults is c with the default of every zero optional field.
func (c Config) withDefaults() Config {
	if c.ExpiresAfter == 0 {
		c.ExpiresAfter = defaultExpiresAfter
	}
	if c.Lease == 0 {
		c.Lease = defaultLease
	}
	if c.SkewMargin == 0 {
		c.SkewMargin = defaultSkewMargin
	}
	if c.KeepAliveLimit == 0 {
		c.KeepAliveLimit = defaultKeepAliveLimit
		if c.ExpiresAfter > 0 {
			c.KeepAliveLimit = min(c.KeepAliveLimit, c.ExpiresAfter)
		}
	}
	if c.CompleteAttempts == 0 {
		c.CompleteAttempts = 3
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate reports every problem of c, a Config with its defaults filled.
func (c Config) validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("idempotency: Config.Store is required"))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("idempotency: Config.Namespace is required"))
	}
	if strings.Contains(c.Namespace, "#") {
		errs = append(errs, fmt.Errorf("idempotency: Config.Namespace %q holds a \"#\", which ends the namespace in a record id: "+
			"its ids would read as those of the namespace before it", c.Namespace))
	}
	if c.ExpiresAfter < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.ExpiresAfter %v is negative", c.ExpiresAfter))
	} else if c.ExpiresAfter < c.MinExpiry {
		errs = append(errs, fmt.Errorf("idempotency: Config.ExpiresAfter %v is shorter than the queue's window %v: "+
			"a late redelivery would find no record and run the operation again", c.ExpiresAfter, c.MinExpiry))
	}
	if c.Lease < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.Lease %v is negative", c.Lease))
	} else if c.ExpiresAfter > 0 && c.Lease > c.ExpiresAfter {
		errs = append(errs, fmt.Errorf("idempotency: Config.Lease %v is longer than Config.ExpiresAfter %v", c.Lease, c.ExpiresAfter))
	}
	if c.KeepAliveLimit < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.KeepAliveLimit %v is negative", c.KeepAliveLimit))
	} else if c.ExpiresAfter > 0 && c.KeepAliveLimit > c.ExpiresAfter {
		errs = append(errs, fmt.Errorf("idempotency: Config.KeepAliveLimit %v is longer than Config.ExpiresAfter %v: "+
			"a record past its expiry is not extended", c.KeepAliveLimit, c.ExpiresAfter))
	}
	if c.SkewMargin < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.SkewMargin %v is negative", c.SkewMargin))
	} else if c.ExpiresAfter > 0 && c.ExpiresAfter <= c.SkewMargin {
		errs = append(errs, fmt.Errorf("idempotency: Config.ExpiresAfter %v is not longer than Config.SkewMargin %v: "+
			"a worker whose clock runs ahead would take a claim as expired when it is made", c.ExpiresAfter, c.SkewMargin))
	}
	if c.CacheBytes < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.CacheBytes %d is negative", c.CacheBytes))
	}
	if !c.Format.valid() {
		errs = append(errs, fmt.Errorf("idempotency: unknown Config.Format %d", int(c.Format)))
	}
	if !c.Tenancy.valid() {
		errs = append(errs, fmt.Errorf("idempotency: unknown Config.Tenancy %d", int(c.Tenancy)))
	}
	if c.CompleteAttempts < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.CompleteAttempts %d is negative", c.CompleteAttempts))
	}
	return errors.Join(errs...)
}
