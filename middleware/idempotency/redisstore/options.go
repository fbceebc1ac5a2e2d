package redisstore

import (
	"errors"
	"fmt"
	"log/slog"
)

// Defaults of the options.
const (
	// DefaultCompressAbove is the size of a result, in bytes, above which
	// it is stored gzip-compressed (when that makes it smaller), as
	// dynamostore does.
	DefaultCompressAbove = 64 << 10

	// DefaultMaxData is the most bytes of a result the store writes, after
	// compression: 960 KiB. A server refuses a longer argument than its
	// proto-max-bulk-len, or a longer command than its
	// client-query-buffer-limit, and accepts neither below 1 MiB; this
	// leaves 64 KiB for the rest of the command, so the default fits every
	// server.
	DefaultMaxData = 960 << 10

	// maxMaxData is Redis's largest string, 512 MB.
	maxMaxData = 512 << 20
)

// Option configures a [Store] made by [New].
type Option func(*options)

// options are what the Options set.
type options struct {
	prefix        string
	compressAbove int
	maxData       int
	logger        *slog.Logger
}

func defaults() options {
	return options{compressAbove: DefaultCompressAbove, maxData: DefaultMaxData}
}

// WithKeyPrefix puts prefix and a "#" before every record id to make its
// Redis key, for example "idempotency" on a server shared with other data
// gives "idempotency#{namespace}#{digest}". Default none: the key is the
// record id, "{namespace}#{digest}". A namespace never holds a "#", so two
// stores with different prefixes or namespaces never share a key. A prefix
// holding a hash tag ("{...}") puts every record on one Cluster slot: leave
// braces out unless that is what you want.
//
// Releases before v0.10.0 joined the prefix and the record id with no
// separator; records written by them are found with
// [WithUnseparatedKeyPrefix].
func WithKeyPrefix(prefix string) Option {
	return func(o *options) {
		o.prefix = ""
		if prefix != "" {
			o.prefix = prefix + "#"
		}
	}
}

// WithUnseparatedKeyPrefix puts prefix before every record id with no
// separator, as [WithKeyPrefix] did before v0.10.0: it keeps finding the
// records an earlier release wrote. With it, prefix "a" and namespace "bc"
// share keys with prefix "ab" and namespace "c": give each store on a
// server a prefix that is not the start of another's, or move to
// [WithKeyPrefix] once the queue's window has passed (see docs/upgrading.md).
func WithUnseparatedKeyPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithCompressAbove stores results longer than n bytes gzip-compressed,
// when that makes them smaller. Default [DefaultCompressAbove]; 0
// compresses every result. A result longer than [WithMaxData] is
// compressed whatever n.
func WithCompressAbove(n int) Option {
	return func(o *options) { o.compressAbove = n }
}

// WithMaxData sets the most bytes of a result the store writes, after
// compression. Default [DefaultMaxData]. A result that does not fit even
// compressed completes the record without it (see the package
// documentation). Above the default, New reads the server's
// proto-max-bulk-len and client-query-buffer-limit where the server lets
// it (CONFIG GET) and refuses a limit they would not accept; where it
// cannot read them, making sure they accept n bytes is yours.
func WithMaxData(n int) Option {
	return func(o *options) { o.maxData = n }
}

// WithLogger sets the logger that reports results too large to store (at
// level Error). Default [slog.Default]; nil restores the default.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// validate fills in defaults and reports every problem of the options.
func (o *options) validate() error {
	var errs []error
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.compressAbove < 0 {
		errs = append(errs, fmt.Errorf("redisstore: WithCompressAbove(%d) is negative", o.compressAbove))
	}
	if o.maxData <= 0 || o.maxData > maxMaxData {
		errs = append(errs, fmt.Errorf("redisstore: WithMaxData(%d) is outside (0, %d], Redis's largest string", o.maxData, maxMaxData))
	}
	return errors.Join(errs...)
}
