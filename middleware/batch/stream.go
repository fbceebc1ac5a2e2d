package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// StreamOptions configures the handlers built by [Kinesis] and
// [DynamoDBStream]. The zero value of every field is a documented default,
// so StreamOptions{} is a valid configuration. The fields shared with
// [Options] mean the same.
type StreamOptions struct {
	// Concurrency is the largest number of keys in flight at once (each
	// key runs one record at a time). 1 runs the whole batch sequentially,
	// in event order. Default [DefaultConcurrency]; negative is invalid.
	Concurrency int

	// MinRemaining is the time that must be left before the records'
	// deadline for a record to start, as in [Options.MinRemaining]: zero
	// follows the invocation ([MinRemainingFor]); negative is invalid.
	MinRemaining time.Duration

	// Reserve is the time kept free before the invocation's deadline for
	// the handler to return, as in [Options.Reserve]. Default
	// [DefaultReserve]; negative is invalid.
	Reserve time.Duration

	// Logger receives at most one line per failed record, with its
	// sequence number and event id and the error, never its data, as in
	// [Options.Logger]. Nil means [slog.Default].
	Logger *slog.Logger

	// NoFullBatchError, when true, makes a batch in which every record
	// failed return its response like any other, without an error. By
	// default such a batch returns a [*FullBatchFailureError] (which Lambda
	// bisects when BisectBatchOnFunctionError is on), unless every failure
	// is a retry ([IsRetry]), as in [Options.NoFullBatchError].
	NoFullBatchError bool

	// AlwaysFullBatchError, when true, returns a [*FullBatchFailureError]
	// whenever every record failed, retries included, as Powertools for
	// AWS Lambda does. It must not be set with NoFullBatchError.
	AlwaysFullBatchError bool

	// OnRecord, if set, is called exactly once for every record of every
	// event, after the record finished or was reported failed without
	// starting: err is nil on success and otherwise the reason the record
	// failed. It is called from the goroutines that run the records, so it
	// must be safe for concurrent use; a panic inside it is recovered and
	// logged.
	OnRecord func(ctx context.Context, rec StreamRecord, err error)
}

// StreamRecord names a record of a stream for [StreamOptions.OnRecord].
type StreamRecord struct {
	EventSourceARN string // the stream
	EventID        string // the record's eventID
	SequenceNumber string // what BatchItemFailures reports
	Key            string // its ordering key: the Kinesis partition key, or the DynamoDB item's key attributes as JSON ("" when they cannot be encoded)
}

// Validate reports whether o is a valid configuration, with every problem
// at once. [Kinesis] and [DynamoDBStream] call it and panic on the error it
// returns.
func (o StreamOptions) Validate() error {
	errs := validateSettings("StreamOptions", o.Concurrency, o.MinRemaining, o.Reserve)
	if o.NoFullBatchError && o.AlwaysFullBatchError {
		errs = append(errs, errors.New("batch: StreamOptions.NoFullBatchError and StreamOptions.AlwaysFullBatchError are both set: choose one"))
	}
	return errors.Join(errs...)
}

// Kinesis returns a Lambda handler for Kinesis Data Streams events that runs
// fn once per record and reports the records that failed as a partial
// batch response, by sequence number. The event source mapping must have
// ReportBatchItemFailures turned on.
//
// The records of one partition key run one after another, in event order;
// different keys run concurrently, at most [StreamOptions.Concurrency] at a
// time. After a record fails, the later records of its key are reported
// failed without starting ([ErrGroupFailed]); the other keys carry on.
// BatchItemFailures lists the sequence numbers of every record that failed
// or did not start, in event order; Lambda resumes the shard from the
// lowest of them and delivers every record after it again, those of other
// keys that succeeded included (see the package doc, "Streams"). It is
// never nil. The handler returns an error only when every record failed and
// not every failure is a retry ([IsRetry]): a [*FullBatchFailureError] (see
// [StreamOptions.NoFullBatchError]).
//
// Kinesis panics if fn is nil or opts is invalid. The returned handler is
// safe for concurrent use.
func Kinesis[T any](fn func(context.Context, events.KinesisEventRecord) (T, error), opts StreamOptions) func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	p := newStream(fn, opts, time.Now, "Kinesis",
		func(r *events.KinesisEventRecord) (string, string) { return r.Kinesis.SequenceNumber, r.EventID },
		func(r *events.KinesisEventRecord) (StreamRecord, error) {
			// A partition key is a string: every record has one, "" included.
			return StreamRecord{EventSourceARN: r.EventSourceArn, EventID: r.EventID, SequenceNumber: r.Kinesis.SequenceNumber, Key: r.Kinesis.PartitionKey}, nil
		})
	return func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		failed, err := p.handle(ctx, ev.Records)
		return events.KinesisEventResponse{BatchItemFailures: itemFailures[events.KinesisBatchItemFailure](failed)}, err
	}
}

// DynamoDBStream returns a Lambda handler for DynamoDB Streams events that
// runs fn once per record and reports the records that failed as a partial
// batch response, by sequence number, as [Kinesis] does; the records of one
// item (the same key attributes, dynamodb.Keys, in the same stream) run one
// after another, in event order.
//
// A record whose key attributes cannot be encoded (an attribute value that
// holds no value of its type, such as the zero
// events.DynamoDBAttributeValue, a list or map nested deeper than DynamoDB
// allows, or one that holds itself) fails without running, with a permanent error
// ([Permanent]) that names no attribute and quotes no value; the other
// records run as usual. The handler never panics on a record's content.
//
// DynamoDBStream panics if fn is nil or opts is invalid. The returned
// handler is safe for concurrent use.
func DynamoDBStream[T any](fn func(context.Context, events.DynamoDBEventRecord) (T, error), opts StreamOptions) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	p := newStream(fn, opts, time.Now, "DynamoDBStream",
		func(r *events.DynamoDBEventRecord) (string, string) { return r.Change.SequenceNumber, r.EventID },
		func(r *events.DynamoDBEventRecord) (StreamRecord, error) {
			key, err := itemKey(r)
			return StreamRecord{EventSourceARN: r.EventSourceArn, EventID: r.EventID, SequenceNumber: r.Change.SequenceNumber, Key: key}, err
		})
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		failed, err := p.handle(ctx, ev.Records)
		return events.DynamoDBEventResponse{BatchItemFailures: itemFailures[events.DynamoDBBatchItemFailure](failed)}, err
	}
}

// itemFailures is a response's BatchItemFailures: one a sequence number.
func itemFailures[F ~struct {
	ItemIdentifier string `json:"itemIdentifier"`
}](seqs []string) []F {
	out := make([]F, len(seqs))
	for i, seq := range seqs {
		out[i] = F{ItemIdentifier: seq}
	}
	return out
}

// streamKey is the ordering key of a stream record: its stream and its
// partition key or item key.
type streamKey struct {
	stream, key string
}

// itemKey returns the JSON of a DynamoDB stream record's key attributes,
// in the order of their names: "" for a record without any, which puts it
// in one lane with every other such record of its stream. It never panics:
// for key attributes that cannot be encoded it returns "" and an error
// (see keyEncodable) that quotes none of them.
//
// Such a record fails without running rather than run in the lane of "":
// its item is unknown, so no lane is known to be its item's. Failing it
// keeps the order of every item: a record that does not run runs neither
// before nor beside an earlier record of its item, and Lambda delivers it
// and every later record again from its sequence number, as after any
// failure. Running it in the lane of "" would order it only against the
// records without key attributes, and hand the record function a record
// that it cannot encode either.
func itemKey(r *events.DynamoDBEventRecord) (key string, err error) {
	if len(r.Change.Keys) == 0 {
		return "", nil
	}
	budget := maxKeyValues
	for _, v := range r.Change.Keys {
		if err := keyEncodable(v, 0, &budget); err != nil {
			return "", err
		}
	}
	// keyEncodable found every value one json.Marshal encodes; the
	// recover is for a value that aws-lambda-go encodes otherwise one day.
	defer func() {
		if recover() != nil {
			key, err = "", Permanent(errors.New(errKeyPrefix+"encoding them panicked"))
		}
	}()
	b, err := json.Marshal(r.Change.Keys)
	if err != nil {
		// The error would quote the value: name its type only.
		return "", Permanent(fmt.Errorf("%sencoding them failed with a %T", errKeyPrefix, err))
	}
	return string(b), nil
}

// The bounds of the key attributes keyEncodable walks: DynamoDB nests
// values at most 32 levels deep (a key attribute is a string, number or
// binary, not nested at all), and maxKeyValues bounds the walk of a list
// or map that holds itself many times over.
const (
	maxKeyDepth  = 32
	maxKeyValues = 10000
)

// errKeyPrefix begins the error of a record whose key attributes cannot be
// encoded.
const errKeyPrefix = "batch: DynamoDB stream record not run: its key attributes (dynamodb.Keys) cannot be encoded: "

// keyEncodable returns nil if json.Marshal encodes v, an attribute value
// at the given depth, without panicking and in bounded time, taking from
// budget one value for v and each value it holds. Otherwise it returns a
// permanent error naming the value's type, never the value or its
// attribute: aws-lambda-go's MarshalJSON and accessors panic on a value
// that holds no value of its type (the zero events.DynamoDBAttributeValue
// claims to be binary), and recurse without end into a list or map that
// holds itself.
func keyEncodable(v events.DynamoDBAttributeValue, depth int, budget *int) (err error) {
	if *budget--; *budget < 0 {
		return Permanent(fmt.Errorf("%smore than %d attribute values", errKeyPrefix, maxKeyValues))
	}
	if depth > maxKeyDepth {
		return Permanent(fmt.Errorf("%snested deeper than %d levels", errKeyPrefix, maxKeyDepth))
	}
	t := v.DataType()
	defer func() {
		if recover() != nil {
			err = Permanent(fmt.Errorf("%san attribute value of type %s holds no value of that type", errKeyPrefix, dataTypeName(t)))
		}
	}()
	var held []events.DynamoDBAttributeValue
	switch t {
	case events.DataTypeBinary:
		_ = v.Binary()
	case events.DataTypeBoolean:
		_ = v.Boolean()
	case events.DataTypeBinarySet:
		_ = v.BinarySet()
	case events.DataTypeList:
		held = v.List()
	case events.DataTypeMap:
		for _, e := range v.Map() {
			held = append(held, e)
			if len(held) > *budget {
				break // the walk below runs out of budget
			}
		}
	case events.DataTypeNumber:
		_ = v.Number()
	case events.DataTypeNumberSet:
		_ = v.NumberSet()
	case events.DataTypeNull:
	case events.DataTypeString:
		_ = v.String()
	case events.DataTypeStringSet:
		_ = v.StringSet()
	default:
		return Permanent(fmt.Errorf("%san attribute value of unknown type %d", errKeyPrefix, t))
	}
	for _, e := range held {
		if err := keyEncodable(e, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}

// dataTypeName is the name DynamoDB gives an attribute value's type.
func dataTypeName(t events.DynamoDBDataType) string {
	names := [...]string{
		events.DataTypeBinary: "B", events.DataTypeBoolean: "BOOL", events.DataTypeBinarySet: "BS",
		events.DataTypeList: "L", events.DataTypeMap: "M", events.DataTypeNumber: "N",
		events.DataTypeNumberSet: "NS", events.DataTypeNull: "NULL", events.DataTypeString: "S",
		events.DataTypeStringSet: "SS",
	}
	if int(t) >= 0 && int(t) < len(names) {
		return names[t]
	}
	return fmt.Sprint(int(t))
}

// stream is what Kinesis and DynamoDBStream were built with; it is never
// modified.
type stream[R any] struct {
	fn   func(context.Context, R) error
	cfg  settings
	now  func() time.Time
	kind kind[R]
	id   func(*R) (seq, eventID string)
	// desc describes a record: its Key and EventSourceARN order the
	// records. Its error, when its key cannot be encoded, is the record's.
	desc func(*R) (StreamRecord, error)
}

// newStream validates and builds the processor of a stream handler named
// name: id names a record, desc describes it to OnRecord (and fails a
// record whose key cannot be encoded). desc must never panic.
func newStream[R, T any](fn func(context.Context, R) (T, error), opts StreamOptions, now func() time.Time, name string,
	id func(*R) (seq, eventID string), desc func(*R) (StreamRecord, error)) *stream[R] {
	if fn == nil {
		panic("batch: " + name + ": nil record function")
	}
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	p := &stream[R]{
		fn:   func(ctx context.Context, rec R) error { _, err := fn(ctx, rec); return err },
		cfg:  newSettings(opts.Concurrency, opts.MinRemaining, opts.Reserve, opts.Logger, fullBatchModeOf(opts.NoFullBatchError, opts.AlwaysFullBatchError)),
		now:  now,
		id:   id,
		desc: desc,
		kind: kind[R]{
			ident: func(rec *R) []slog.Attr {
				seq, eventID := id(rec)
				return []slog.Attr{slog.String("sequenceNumber", seq), slog.String("eventID", eventID)}
			},
			hook: "OnRecord",
		},
	}
	if opts.OnRecord != nil {
		p.kind.onRecord = func(ctx context.Context, rec *R, err error) {
			d, _ := desc(rec)
			opts.OnRecord(ctx, d, err)
		}
	}
	return p
}

// handle runs one invocation and returns the sequence numbers of the
// records that failed or did not start, in event order, and the batch's
// error. The records of one key of one stream run in order; a record
// whose key cannot be encoded is a lane by itself and fails with desc's
// error instead of running (see itemKey).
func (p *stream[R]) handle(ctx context.Context, recs []R) ([]string, error) {
	if len(recs) == 0 {
		return []string{}, nil
	}
	keys := make([]streamKey, len(recs))
	keyed := make([]bool, len(recs))
	fn := p.fn
	for i := range recs {
		d, err := p.desc(&recs[i])
		keys[i], keyed[i] = streamKey{d.EventSourceARN, d.Key}, err == nil
		if err != nil {
			fn = p.keyChecked
		}
	}
	group := func(i int) (streamKey, bool) { return keys[i], keyed[i] }
	r := newRun(ctx, &p.cfg, &p.kind, fn, p.now, recs, planLanes(len(recs), group))
	defer r.cancel()
	r.execute()
	failed := make([]string, 0, len(recs))
	for i, err := range r.errs {
		if err != nil {
			seq, _ := p.id(&recs[i])
			failed = append(failed, seq)
		}
	}
	return failed, r.fullFailure(len(failed))
}

// keyChecked is the record function of an invocation in which a record's
// key cannot be encoded: such a record fails with desc's error, the others
// run.
func (p *stream[R]) keyChecked(ctx context.Context, rec R) error {
	if _, err := p.desc(&rec); err != nil {
		return err
	}
	return p.fn(ctx, rec)
}
