package dynamostore

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// Defaults of the options.
const (
	// DefaultCompressAbove is the size of a result, in bytes of JSON, above
	// which it is stored gzip-compressed. Results up to it stay plain JSON
	// strings, readable by Powertools for AWS Lambda and in the console, and
	// cost at most 64 write units; above it compression pays for itself
	// (DynamoDB bills writes per KB and reads per 4 KB), and it is what lets
	// results near or beyond the item limit be stored at all.
	DefaultCompressAbove = 64 << 10

	// DefaultItemLimit is DynamoDB's item size limit, 400 KB.
	DefaultItemLimit = 400 << 10

	// sizeMargin is kept free below the item limit, beyond the attributes
	// the store writes: for attributes other writers may add, and for
	// emulators that count sizes a little differently (moto caps items at
	// 405,000 bytes).
	sizeMargin = 8 << 10
)

// Attributes names the attributes of a stored record. An empty field takes
// its default, the [idempotency] Attr constant of the same meaning.
type Attributes struct {
	ID           string // default [idempotency.AttrID]; the table's partition key (S)
	Status       string // default [idempotency.AttrStatus]
	Expiration   string // default [idempotency.AttrExpiration]; the table's TTL attribute
	LeaseExpiry  string // default [idempotency.AttrLeaseExpiry]
	Data         string // default [idempotency.AttrData]
	Validation   string // default [idempotency.AttrValidation]
	Owner        string // default [idempotency.AttrOwner]
	DataEncoding string // default [idempotency.AttrDataEncoding]
	DataOmitted  string // default [idempotency.AttrDataOmitted]
}

func (a *Attributes) fill() error {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&a.ID, idempotency.AttrID)
	def(&a.Status, idempotency.AttrStatus)
	def(&a.Expiration, idempotency.AttrExpiration)
	def(&a.LeaseExpiry, idempotency.AttrLeaseExpiry)
	def(&a.Data, idempotency.AttrData)
	def(&a.Validation, idempotency.AttrValidation)
	def(&a.Owner, idempotency.AttrOwner)
	def(&a.DataEncoding, idempotency.AttrDataEncoding)
	def(&a.DataOmitted, idempotency.AttrDataOmitted)
	seen := map[string]bool{}
	var errs []error
	for _, n := range []string{a.ID, a.Status, a.Expiration, a.LeaseExpiry, a.Data, a.Validation, a.Owner, a.DataEncoding, a.DataOmitted} {
		if seen[n] {
			errs = append(errs, fmt.Errorf("dynamostore: attribute name %q is used twice", n))
		}
		seen[n] = true
	}
	return errors.Join(errs...)
}

// Option configures a [Store].
type Option func(*options)

type options struct {
	attrs         Attributes
	logger        *slog.Logger
	compressAbove int
	itemLimit     int
}

// WithAttributes sets the attribute names of the records. Empty fields keep
// their defaults; New refuses names used twice.
func WithAttributes(a Attributes) Option {
	return func(o *options) { o.attrs = a }
}

// WithLogger sets the logger that reports results too large to store (at
// level Error) and records read with problems (at level Warn). Default
// [slog.Default]; nil restores the default.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithCompressAbove stores results longer than n bytes gzip-compressed.
// Default [DefaultCompressAbove]; 0 compresses every result. A result is also
// compressed, whatever n, when it would not fit in the item plain.
func WithCompressAbove(n int) Option {
	return func(o *options) { o.compressAbove = n }
}

// WithItemLimit sets the largest item, in bytes, the store writes. Default
// [DefaultItemLimit], DynamoDB's limit; set a lower one for a
// DynamoDB-compatible store with a smaller limit. A result that does not fit
// even compressed is left out of the record (see the package documentation).
func WithItemLimit(n int) Option {
	return func(o *options) { o.itemLimit = n }
}

func (o *options) validate() error {
	var errs []error
	if err := o.attrs.fill(); err != nil {
		errs = append(errs, err)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.compressAbove < 0 {
		errs = append(errs, fmt.Errorf("dynamostore: WithCompressAbove(%d) is negative", o.compressAbove))
	}
	if o.itemLimit <= sizeMargin || o.itemLimit > DefaultItemLimit {
		errs = append(errs, fmt.Errorf("dynamostore: WithItemLimit(%d) is outside (%d, %d]", o.itemLimit, sizeMargin, DefaultItemLimit))
	}
	return errors.Join(errs...)
}
