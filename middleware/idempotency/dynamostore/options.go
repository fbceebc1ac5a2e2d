package dynamostore

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
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

// AttrDataFormat is the default name of the attribute that marks the data
// format of a stored result (S: "json", "powertools-python" or
// "powertools-typescript"). Only this store writes it; Powertools ignores it.
const AttrDataFormat = "data_format"

// AttrReleaseCall is the default name of the attribute that marks a
// released claim (S: a token of the Release call). Only this store writes
// it; Powertools ignores it.
const AttrReleaseCall = "release_call"

// Attributes names the attributes of a stored record. An empty field takes
// its default, the [idempotency] Attr constant of the same meaning
// ([AttrDataFormat] for DataFormat, [AttrReleaseCall] for ReleaseCall).
type Attributes struct {
	ID           string // default [driver.AttrID]; the table's partition key (S): the record id, or with [WithSortKey] the partition value
	Status       string // default [driver.AttrStatus]
	Expiration   string // default [driver.AttrExpiration]; the table's TTL attribute
	LeaseExpiry  string // default [driver.AttrLeaseExpiry]
	Data         string // default [driver.AttrData]
	Validation   string // default [driver.AttrValidation]
	Owner        string // default [driver.AttrOwner]
	DataEncoding string // default [driver.AttrDataEncoding]
	DataOmitted  string // default [driver.AttrDataOmitted]
	DataFormat   string // default [AttrDataFormat]
	ReleaseCall  string // default [AttrReleaseCall]
	Quarantined  string // default [driver.AttrQuarantined]
	StrictLease  string // default [driver.AttrStrictLease]
}

func (a *Attributes) fill() error {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&a.ID, driver.AttrID)
	def(&a.Status, driver.AttrStatus)
	def(&a.Expiration, driver.AttrExpiration)
	def(&a.LeaseExpiry, driver.AttrLeaseExpiry)
	def(&a.Data, driver.AttrData)
	def(&a.Validation, driver.AttrValidation)
	def(&a.Owner, driver.AttrOwner)
	def(&a.DataEncoding, driver.AttrDataEncoding)
	def(&a.DataOmitted, driver.AttrDataOmitted)
	def(&a.DataFormat, AttrDataFormat)
	def(&a.ReleaseCall, AttrReleaseCall)
	def(&a.Quarantined, driver.AttrQuarantined)
	def(&a.StrictLease, driver.AttrStrictLease)
	seen := map[string]bool{}
	var errs []error
	for _, n := range []string{a.ID, a.Status, a.Expiration, a.LeaseExpiry, a.Data, a.Validation, a.Owner, a.DataEncoding, a.DataOmitted, a.DataFormat, a.ReleaseCall, a.Quarantined, a.StrictLease} {
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
	compressSet   bool // WithCompressAbove was given
	itemLimit     int
	format        DataFormat
	sortKey       SortKey // with sortKeySet; Partition filled in by validate
	sortKeySet    bool    // WithSortKey was given
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
// compressed, whatever n, when it would not fit in the item plain. Only
// [DataJSON] compresses: New refuses WithCompressAbove with another format,
// because Powertools cannot read a compressed result.
func WithCompressAbove(n int) Option {
	return func(o *options) { o.compressAbove, o.compressSet = n, true }
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
	if o.sortKeySet {
		if err := o.sortKey.fill(o.attrs); err != nil {
			errs = append(errs, err)
		}
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.compressAbove < 0 {
		errs = append(errs, fmt.Errorf("dynamostore: WithCompressAbove(%d) is negative", o.compressAbove))
	}
	switch o.format {
	case DataJSON:
	case DataPowertoolsPython, DataPowertoolsTypeScript:
		if o.compressSet {
			errs = append(errs, fmt.Errorf("dynamostore: WithCompressAbove with WithDataFormat(%v): Powertools cannot read a compressed result, so results in its formats are never compressed", o.format))
		}
	default:
		errs = append(errs, fmt.Errorf("dynamostore: unknown data format %d", int(o.format)))
	}
	if o.itemLimit <= sizeMargin || o.itemLimit > DefaultItemLimit {
		errs = append(errs, fmt.Errorf("dynamostore: WithItemLimit(%d) is outside (%d, %d]", o.itemLimit, sizeMargin, DefaultItemLimit))
	}
	return errors.Join(errs...)
}

// DefaultPartitionPrefix starts the default partition value of a table with
// a sort key, as in Powertools for AWS Lambda: "idempotency#" and the
// function's name.
const DefaultPartitionPrefix = "idempotency#"

// maxPartitionKey is DynamoDB's limit on a partition key value, in bytes.
const maxPartitionKey = 2048

// SortKey configures a table whose primary key has a sort key, as
// Powertools for AWS Lambda's sort_key_attr / sortKeyAttr does: the
// partition key attribute ([Attributes].ID) holds one value for every
// record of the store, and the sort key attribute holds the record id.
type SortKey struct {
	// Attr is the table's sort key attribute (S). Required; it may not be
	// the partition key attribute, nor another attribute of the record.
	Attr string

	// Partition is the partition key value of every record: Powertools'
	// static_pk_value / staticPkValue. Default [DefaultPartitionPrefix]
	// followed by FunctionName, Powertools' default.
	Partition string

	// FunctionName is the Lambda function's name (AWS_LAMBDA_FUNCTION_NAME,
	// which the store does not read), for the default Partition. One of
	// Partition and FunctionName is required.
	FunctionName string
}

func (k *SortKey) fill(a Attributes) error {
	var errs []error
	switch k.Attr {
	case "":
		errs = append(errs, errors.New("dynamostore: WithSortKey: SortKey.Attr, the sort key attribute, is empty"))
	case a.ID:
		errs = append(errs, fmt.Errorf("dynamostore: WithSortKey: the partition key attribute %q and the sort key attribute %q cannot be the same", a.ID, k.Attr))
	default:
		for _, n := range []string{a.Status, a.Expiration, a.LeaseExpiry, a.Data, a.Validation, a.Owner, a.DataEncoding, a.DataOmitted, a.DataFormat, a.ReleaseCall, a.Quarantined, a.StrictLease} {
			if n == k.Attr {
				errs = append(errs, fmt.Errorf("dynamostore: WithSortKey: the sort key attribute %q is also a record attribute", k.Attr))
			}
		}
	}
	if k.Partition == "" {
		if k.FunctionName == "" {
			errs = append(errs, errors.New("dynamostore: WithSortKey: set SortKey.FunctionName (Powertools' default partition is "+DefaultPartitionPrefix+"{AWS_LAMBDA_FUNCTION_NAME}) or SortKey.Partition"))
		}
		k.Partition = DefaultPartitionPrefix + k.FunctionName
	}
	if len(k.Partition) > maxPartitionKey {
		errs = append(errs, fmt.Errorf("dynamostore: WithSortKey: the partition value is %d bytes, above DynamoDB's %d", len(k.Partition), maxPartitionKey))
	}
	return errors.Join(errs...)
}

// WithSortKey stores records in a table whose primary key is the partition
// key [Attributes].ID and the sort key k.Attr, both strings: the partition
// key holds k.Partition and the sort key the record id, as Powertools for
// AWS Lambda writes them with the same settings. Default: no sort key, the
// record id is the partition key.
func WithSortKey(k SortKey) Option {
	return func(o *options) { o.sortKey, o.sortKeySet = k, true }
}

// DataFormat is how the data attribute holds a result. The store writes and
// reads in the one format it is configured with; set the format of the
// table's other writer. Every result the store writes is marked with its
// format (the DataFormat attribute, default [AttrDataFormat]), and a marked
// record in a format of another encoding is refused, never decoded. A
// record without the mark (written by Powertools) is read in the configured
// format.
type DataFormat int

const (
	// DataJSON stores a result as S holding its JSON text, and results
	// above [WithCompressAbove] gzip-compressed as B, flagged by the
	// data_encoding attribute. The default.
	DataJSON DataFormat = iota

	// DataPowertoolsPython stores a result as Powertools for AWS Lambda
	// (Python) does: S holding its JSON text, never compressed. Use it with
	// the guard's Powertools Python key format to share a table with it.
	DataPowertoolsPython

	// DataPowertoolsTypeScript stores a result as Powertools for AWS Lambda
	// (TypeScript) does, in DynamoDB's native types (the AWS SDK for
	// JavaScript's marshall): an object as M, an array as L, a string as S,
	// a number as N, true and false as BOOL, null as NULL; never compressed.
	// A string result "123" is S "123" and reads back as the string "123".
	// A result holding a number beyond JavaScript's safe integers (±2^53−1),
	// which Powertools' unmarshall cannot read back, is left out as a result
	// too large is (see Large results). Use it with the guard's Powertools
	// TypeScript key format to share a table with it.
	DataPowertoolsTypeScript
)

// String names the format as errors report it.
func (f DataFormat) String() string {
	switch f {
	case DataJSON:
		return "JSON text"
	case DataPowertoolsPython:
		return "JSON text (Powertools Python)"
	case DataPowertoolsTypeScript:
		return "native DynamoDB types (Powertools TypeScript)"
	}
	return fmt.Sprintf("DataFormat(%d)", int(f))
}

// mark is the value of the data format attribute of a result stored in f.
func (f DataFormat) mark() string {
	switch f {
	case DataJSON:
		return "json"
	case DataPowertoolsPython:
		return "powertools-python"
	case DataPowertoolsTypeScript:
		return "powertools-typescript"
	}
	return ""
}

// maxMarkLen is the length of the longest mark.
const maxMarkLen = len("powertools-typescript")

// markedFormat is the format a mark names.
func markedFormat(mark string) (DataFormat, bool) {
	for _, f := range []DataFormat{DataJSON, DataPowertoolsPython, DataPowertoolsTypeScript} {
		if f.mark() == mark {
			return f, true
		}
	}
	return 0, false
}

// native reports whether f stores results in DynamoDB's native types. The
// other formats share one encoding, S holding JSON text, and read each
// other's results.
func (f DataFormat) native() bool { return f == DataPowertoolsTypeScript }

// WithDataFormat sets how results are written and read. Default [DataJSON].
// A record whose data the format cannot have written is not decoded: its
// read fails with a [*FormatError], so the delivery fails and is retried
// instead of replaying a wrong value.
func WithDataFormat(f DataFormat) Option {
	return func(o *options) { o.format = f }
}

// FormatError reports a record whose data is not in the store's data
// format. Have names the format the record is marked with, or, for a record
// without the mark, the format the data appears to be in.
type FormatError struct {
	Have, Want DataFormat // the record's format (as above); the store's format
	Detail     string     // what was found, such as "a value of type M"
}

func (e *FormatError) Error() string {
	have := e.Have.String()
	if e.Have == DataJSON {
		have = "JSON text (sqsonce or Powertools Python)"
	}
	return fmt.Sprintf("dynamostore: data is %s: the record was written in %s, the store reads %v (see WithDataFormat)",
		e.Detail, have, e.Want)
}
