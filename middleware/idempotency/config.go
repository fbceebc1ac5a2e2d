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
	// completed (the table's TTL); default 15 days. New refuses one below
	// MinExpiry, the longest a message lives in its queue
	// (batch.QueueWindow); zero checks nothing.
	ExpiresAfter, MinExpiry time.Duration

	// Lease is how long a claim is held when the context has no deadline,
	// counted from before the claim is written; with one (inside Lambda)
	// the lease ends at the deadline. Default 15 minutes.
	Lease time.Duration

	// KeepAliveEvery is how often, while an operation runs, the guard
	// extends its lease by the claimed length (on a [driver.Extender], one
	// write fenced on the owner): a live owner is never taken over within
	// KeepAliveLimit. If an extension is refused or late, the context ends
	// a reserve before the lease lapses ([ErrLeaseNotExtended]). Default a
	// third of the lease, at most half; negative turns keep-alive off.
	KeepAliveEvery time.Duration

	// KeepAliveLimit bounds how long after its claim a lease is kept
	// alive (never below the claimed lease); the context then ends as for
	// a refused extension. Default 12 h, the longest SQS keeps a message
	// invisible; it never reaches past ExpiresAfter less SkewMargin.
	KeepAliveLimit time.Duration

	// SkewMargin is added to every stored lease end, so that workers whose
	// clocks disagree by less never take over a live claim. Default 5 s;
	// for none, set a nanosecond.
	SkewMargin time.Duration

	// CacheBytes bounds the completed records served from memory (each
	// counts its result, id, digests and 256 bytes); zero: no cache.
	CacheBytes int

	Format Format // the record id's recipe; default FormatNative

	// Sealer, if set, encrypts each stored result bound to its record id
	// (package kmsseal); a sealed result it cannot open fails its call
	// with [driver.ErrUnsealed], never replayed or run. Default none. New
	// refuses it with a Powertools Format, whose records Powertools reads.
	Sealer driver.Sealer

	// Tenancy scopes record ids to a tenant; by default, to the
	// invocation's TenantID (see [Tenancy]).
	Tenancy Tenancy

	// CompleteAttempts bounds the tries of a completion that fails with an
	// error that may pass (not a lost lease, a cancellation or a
	// [failure.PermanentError]), within the deadline. Default 3.
	CompleteAttempts int

	// Strict puts every call in strict mode (the option [Strict] puts one
	// wrapper's): a claim whose lease lapsed with the operation's outcome
	// unknown is never taken over, but quarantined: every call of the key
	// fails with a [*QuarantinedError] until an operator releases or
	// resolves it, or it expires. For operations where running twice is
	// worse than not running: a payment, an e-mail.
	Strict bool

	Now func() time.Time // the clock; default time.Now

	Logger *slog.Logger // one line per call at its outcome's level; default slog.Default()

	// OnOutcome, if set, gets every call's Report after its log line (for
	// metrics); it must be safe for concurrent use.
	OnOutcome func(context.Context, Report)

	// OnRun, if set, is called each time the operation is about to run
	// under a claim: the operation runs under the context it returns, and
	// done gets its error. For tracing (package oteltrace); it must be
	// safe for concurrent use. A panic in OnRun releases the claim, the
	// operation not run; a panic in done fails the call, and a result the
	// operation returned is stored.
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
	powertools := c.Format != FormatNative && c.Format.valid() // ids Powertools computes
	if c.Tenancy == TenancyMessageGroup && powertools {
		// Every message of a fair or FIFO queue has a group: no id would
		// be Powertools', and a key would run once on each side.
		errs = append(errs, fmt.Errorf("idempotency: Config.Tenancy TenancyMessageGroup with Config.Format %v: Powertools does not scope its ids by message group, so a key would run once in Powertools and once here; use TenancyOff to share its records", c.Format))
	}
	if c.Sealer != nil && powertools {
		// Its record ids are Powertools': a Powertools function on the same
		// keys would return the sealed text as its handler's result.
		errs = append(errs, fmt.Errorf("idempotency: Config.Sealer with Config.Format %v: the record ids are Powertools', and Powertools cannot open a sealed result (it would return the sealed text); seal only with FormatNative", c.Format))
	}
	if c.Sealer != nil && c.Store != nil {
		if v, ok := c.Store.(driver.SealValidator); ok {
			if err := v.ValidateSealed(); err != nil {
				errs = append(errs, fmt.Errorf("idempotency: Config.Sealer: %w", err))
			}
		}
	}
	if c.CompleteAttempts < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.CompleteAttempts %d is negative", c.CompleteAttempts))
	}
	return errors.Join(errs...)
}
