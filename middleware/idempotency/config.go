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

// Defaults for the zero values of [Config].
const (
	// DefaultExpiresAfter is above SQS's longest message retention (14 days).
	DefaultExpiresAfter = 15 * 24 * time.Hour

	// DefaultLease is the lease taken when the context has no deadline. Inside
	// Lambda the lease ends at the invocation's deadline instead.
	DefaultLease = 15 * time.Minute

	// DefaultSkewMargin is added to every lease (see [Config.SkewMargin]).
	DefaultSkewMargin = 5 * time.Second
)

// Config configures a [Guard]. The zero value of every optional field is a
// documented default; [New] validates the whole once.
type Config struct {
	// Store persists the records. Required.
	Store driver.Store

	// Namespace prefixes every record id ("{Namespace}#{digest}"): a fixed
	// string, not a generated function name, which a redeploy would change.
	// Required; it may not hold a "#", which ends it in a record id.
	Namespace string

	// ExpiresAfter is how long a record counts after it is written or
	// completed (the table's TTL). Default [DefaultExpiresAfter].
	ExpiresAfter time.Duration

	// MinExpiry is the shortest safe ExpiresAfter: the longest a message can
	// live in the queue, as computed by [QueueWindow]. New refuses an
	// ExpiresAfter below it. Zero disables the check.
	MinExpiry time.Duration

	// Lease is how long a claim is held when the context has no deadline,
	// counted from before the claim is written; with a deadline (inside
	// Lambda) the lease ends at the deadline. The stored lease end adds
	// SkewMargin. Default [DefaultLease].
	Lease time.Duration

	// SkewMargin is added to the end of every lease, so that workers whose
	// clocks disagree by less than it never take over a live claim; a dead
	// holder's key waits that much longer. Default [DefaultSkewMargin];
	// negative is invalid; for practically none, set [time.Nanosecond].
	SkewMargin time.Duration

	// CacheBytes bounds the completed records served from memory, without a
	// store round trip, until they expire: a record counts for its result,
	// id and digests, and 256 bytes; the least recently used go first, and
	// a larger record is not cached. Zero (the default) turns the cache off.
	CacheBytes int

	// Format is the recipe that turns keys and validated payloads into
	// digests: [FormatNative] (the default, RFC 8785 and SHA-256), or a
	// Powertools format to share a table with Powertools for AWS Lambda
	// (Python or TypeScript).
	Format Format

	// CompleteAttempts bounds the tries of a Complete that fails with an
	// error that may pass: not one that wraps [driver.ErrLeaseLost],
	// [driver.ErrAttachUnsupported], [context.Canceled] or a [batch.PermanentError]
	// reporting true, which are not retried. Tries also stop at the context's
	// deadline. Default 3.
	CompleteAttempts int

	// Strict turns strict mode on for every call of the guard ([Guard.Strict]
	// turns it on for some): a claim whose lease lapsed with the
	// operation's outcome unknown (its worker died, or outlived its lease)
	// is never taken over. The call that finds it quarantines the record
	// instead (see [driver.Store.Quarantine]) and fails with a [*QuarantinedError], and
	// so does every later call of the key, in strict mode or not, until an
	// operator releases the record (the next delivery runs the operation)
	// or resolves it with a result (later deliveries replay it), or the
	// record expires. For operations where running twice is worse than not
	// running: a payment, an e-mail. A strict call's own claim is stored
	// with its lease at the record's expiry and its lease end in
	// [driver.Record.StrictLease], so that no reader takes it over while the
	// record lives (a default guard, an earlier release, Powertools: all
	// see it in progress); a guard of this package, strict or not, that
	// finds it lapsed quarantines it. Default false: a lapsed claim is taken over and the
	// operation runs again (the promise's first exception).
	Strict bool

	// Now is the clock. Default [time.Now].
	Now func() time.Time

	// Logger receives at most one line per call, its outcome's, at the
	// outcome's level (see [Outcome]); a slog handler filters the lines.
	// Default [slog.Default].
	Logger *slog.Logger

	// OnOutcome, if set, is called once per outcome, after the log line
	// (for metrics). It must be safe for concurrent use.
	OnOutcome func(context.Context, Report)
}

// withDefaults is c with the default of every zero optional field.
func (c Config) withDefaults() Config {
	if c.ExpiresAfter == 0 {
		c.ExpiresAfter = DefaultExpiresAfter
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.SkewMargin == 0 {
		c.SkewMargin = DefaultSkewMargin
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
	if c.SkewMargin < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.SkewMargin %v is negative", c.SkewMargin))
	}
	if c.CacheBytes < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.CacheBytes %d is negative", c.CacheBytes))
	}
	if !c.Format.valid() {
		errs = append(errs, fmt.Errorf("idempotency: unknown Config.Format %d", int(c.Format)))
	}
	if c.CompleteAttempts < 0 {
		errs = append(errs, fmt.Errorf("idempotency: Config.CompleteAttempts %d is negative", c.CompleteAttempts))
	}
	return errors.Join(errs...)
}

// QueueWindow is the longest an SQS message can keep being delivered: its
// retention, plus one visibility timeout for each receive it may get before
// it moves to the dead-letter queue. An idempotency record must live at least
// this long; set [Config.MinExpiry] to it and [Config.ExpiresAfter] above it.
//
// QueueWindow(4*24*time.Hour, 5, 18*time.Minute) is 4 days and 90 minutes.
func QueueWindow(retention time.Duration, maxReceiveCount int, visibilityTimeout time.Duration) time.Duration {
	if maxReceiveCount < 0 {
		maxReceiveCount = 0
	}
	return retention + time.Duration(maxReceiveCount)*visibilityTimeout
}
