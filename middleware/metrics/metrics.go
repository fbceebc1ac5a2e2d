package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// DefaultNamespace is the CloudWatch namespace of [Config.Namespace]'s zero
// value, and the one infra's construct watches by default.
const DefaultNamespace = "sqsonce"

// Dimension is the one dimension of every metric: its value is
// [Config.Service].
const Dimension = "Service"

// Unit is the unit of every metric.
const Unit = "Count"

// The library's metrics, one count per invocation each (see the package
// doc for what moves each one). Infra's construct alarms on them by these
// names.
const (
	DuplicatesSuppressed = "DuplicatesSuppressed" // a delivery answered with a stored result, without a run
	InProgressRetried    = "InProgressRetried"    // a delivery handed back to SQS: its key is in progress elsewhere
	TakenOver            = "TakenOver"            // a run that took over a lapsed lease or an expired record
	Failed               = "Failed"               // a delivery the guard failed
	DoubleRuns           = "DoubleRuns"           // a run whose lease passed while it ran, and whose key another worker ran too
	Quarantined          = "Quarantined"          // a delivery whose key strict mode quarantined, or found quarantined
	RecordsFailed        = "RecordsFailed"        // a record that failed, for any reason (moved to the dead-letter queue or not)
	RecordsNotStarted    = "RecordsNotStarted"    // a record the batch handler reported failed without starting it
)

// Names returns the library's metric names, in the order a line lists
// them.
func Names() []string {
	return []string{DuplicatesSuppressed, InProgressRetried, TakenOver, Failed, DoubleRuns, Quarantined, RecordsFailed, RecordsNotStarted}
}

// Config configures a [Recorder].
type Config struct {
	// Writer receives the EMF lines. Inside Lambda, standard output:
	// CloudWatch Logs turns the lines into metrics. Required.
	Writer io.Writer
	// Namespace is the CloudWatch namespace. Default [DefaultNamespace].
	Namespace string
	// Service is the value of the [Dimension] dimension, such as the
	// guard's Namespace. Required: an alarm finds the metrics by it.
	Service string
	// Counters are metrics of the function's own, counted with
	// [Recorder.Add] and written in the same lines after the library's.
	// Each must be a name unlike the others and the library's, and
	// none of the line's own members: Service, Records, request_id, _aws.
	Counters []string
	// Now is the clock of the lines' timestamps. Nil means [time.Now].
	Now func() time.Time
}

// Recorder counts outcomes and writes them as CloudWatch Embedded Metric
// Format lines: one per invocation of a handler wrapped by
// [Recorder.Batch], else one per event counted. It is safe for concurrent
// use, by overlapping invocations too; build one at start-up.
type Recorder struct {
	cfg   Config
	names []string       // the library's, then Counters
	index map[string]int // name → position in names
	mu    sync.Mutex     // one line at a time
}

// New checks cfg and returns a Recorder.
func New(cfg Config) (*Recorder, error) {
	var errs []error
	if cfg.Writer == nil {
		errs = append(errs, errors.New("metrics: Config.Writer is required"))
	}
	if cfg.Service == "" {
		errs = append(errs, errors.New("metrics: Config.Service is required: the value of the Service dimension that alarms match"))
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Recorder{cfg: cfg, names: append(Names(), cfg.Counters...), index: map[string]int{}}
	for i, n := range r.names {
		switch _, dup := r.index[n]; {
		case n == "":
			errs = append(errs, errors.New("metrics: Config.Counters holds an empty name"))
		case dup || n == Dimension || n == recordsProperty || n == requestIDProperty || n == "_aws":
			errs = append(errs, fmt.Errorf("metrics: Config.Counters holds %q, a name taken already", n))
		}
		r.index[n] = i
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// The line's properties besides the metrics: the batch size, and the
// invocation's Lambda request id. A counter may take neither name: a line
// would hold the member twice, and a JSON reader keeps one of them.
const (
	recordsProperty   = "Records"
	requestIDProperty = "request_id"
)

// countsKey finds the counts of the invocation running in a context, per
// Recorder: two of them (two namespaces) around one handler count apart.
type countsKey struct{ r *Recorder }

// counts are one invocation's counts, by position in Recorder.names,
// updated concurrently.
type counts []atomic.Int64

// count adds n to the metric at position i: to the invocation's counts in
// ctx, or, outside one, in a line of its own at once.
func (r *Recorder) count(ctx context.Context, i int, n int64) {
	if c, _ := ctx.Value(countsKey{r}).(*counts); c != nil {
		(*c)[i].Add(n)
		return
	}
	values := make([]int64, len(r.names))
	values[i] = n
	_ = r.write(values, -1, "")
}

// Observe counts the guard's report ev; use it as
// idempotency.Config.OnOutcome (or call it from yours), or let
// [Recorder.Instrument] set it. It moves at most one metric:
//
//	claimed                 (none)
//	taken_over              TakenOver
//	replayed                DuplicatesSuppressed, unless the call ran the operation itself (Ran)
//	in_progress             InProgressRetried
//	failed, released,
//	mismatch                Failed
//	double_run              DoubleRuns
//	quarantined             Quarantined
func (r *Recorder) Observe(ctx context.Context, ev idempotency.Report) {
	name := ""
	switch ev.Outcome {
	case idempotency.OutcomeReplayed:
		if !ev.Ran {
			name = DuplicatesSuppressed
		}
	case idempotency.OutcomeInProgress:
		name = InProgressRetried
	case idempotency.OutcomeTakenOver:
		name = TakenOver
	case idempotency.OutcomeFailed, idempotency.OutcomeReleased, idempotency.OutcomeMismatch:
		name = Failed
	case idempotency.OutcomeDoubleRun:
		name = DoubleRuns
	case idempotency.OutcomeQuarantined:
		name = Quarantined
	}
	if name != "" {
		r.count(ctx, r.index[name], 1)
	}
}

// OnRecord counts a record's outcome in the batch handler: RecordsFailed
// for every failure, and RecordsNotStarted too for a record not started
// ([batch.NotStarted]). Use it as batch.Options.OnRecord (or call it from
// yours), or let [Recorder.Instrument] set it.
func (r *Recorder) OnRecord(ctx context.Context, _ events.SQSMessage, err error) {
	if err == nil {
		return
	}
	r.count(ctx, r.index[RecordsFailed], 1)
	if batch.NotStarted(err) {
		r.count(ctx, r.index[RecordsNotStarted], 1)
	}
}

// Add adds n to the function's own metric name, one of [Config.Counters],
// in the invocation running in ctx. A name that is not one of them is
// ignored.
func (r *Recorder) Add(ctx context.Context, name string, n int64) {
	if i, ok := r.index[name]; ok && i >= len(Names()) {
		r.count(ctx, i, n)
	}
}

// Instrument sets cfg's OnOutcome to [Recorder.Observe] and opts's
// OnRecord to [Recorder.OnRecord], each after the hook already set: the one
// line that turns the metrics on. Wrap the handler with [Recorder.Batch]
// to have one line per invocation rather than one per event.
func (r *Recorder) Instrument(cfg *idempotency.Config, opts *batch.Options) {
	if cfg != nil {
		if prev := cfg.OnOutcome; prev != nil {
			cfg.OnOutcome = func(ctx context.Context, ev idempotency.Report) { prev(ctx, ev); r.Observe(ctx, ev) }
		} else {
			cfg.OnOutcome = r.Observe
		}
	}
	if opts != nil {
		if prev := opts.OnRecord; prev != nil {
			opts.OnRecord = func(ctx context.Context, m events.SQSMessage, err error) { prev(ctx, m, err); r.OnRecord(ctx, m, err) }
		} else {
			opts.OnRecord = r.OnRecord
		}
	}
}

// Batch returns next with the counts of each invocation gathered and
// written as one line, every metric included (zeros too), with the batch
// size as the "Records" property and the invocation's Lambda request id as
// the "request_id" property (invocations that run at once in one process
// share its output), when next returns. A failed write is ignored: metrics
// never fail a batch.
func (r *Recorder) Batch(next func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		c := make(counts, len(r.names))
		resp, err := next(context.WithValue(ctx, countsKey{r}, &c), ev)
		values := make([]int64, len(c))
		for i := range c {
			values[i] = c[i].Load()
		}
		var requestID string
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			requestID = lc.AwsRequestID
		}
		_ = r.write(values, len(ev.Records), requestID)
		return resp, err
	}
}

// Line returns one EMF line, ending in a newline, with values[i] for the
// i-th metric (the library's in [Names] order, then [Config.Counters]),
// and records as the "Records" property unless it is negative.
func (r *Recorder) Line(values []int64, records int) ([]byte, error) {
	return r.line(values, records, "")
}

// line is [Recorder.Line] with the request_id property when requestID is
// not empty.
func (r *Recorder) line(values []int64, records int, requestID string) ([]byte, error) {
	if len(values) != len(r.names) {
		return nil, fmt.Errorf("metrics: %d values for %d metrics", len(values), len(r.names))
	}
	defs := make([]metricDef, len(r.names))
	for i, n := range r.names {
		defs[i] = metricDef{n, Unit}
	}
	head, err := json.Marshal(metadata{
		Timestamp:         r.cfg.Now().UnixMilli(),
		CloudWatchMetrics: []directive{{r.cfg.Namespace, [][]string{{Dimension}}, defs}},
	})
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	service, _ := json.Marshal(r.cfg.Service)
	b := slices.Concat([]byte(`{"_aws":`), head, []byte(`,"`+Dimension+`":`), service)
	if records >= 0 {
		b = append(append(b, `,"`+recordsProperty+`":`...), strconv.Itoa(records)...)
	}
	if requestID != "" {
		id, _ := json.Marshal(requestID)
		b = append(append(b, `,"`+requestIDProperty+`":`...), id...)
	}
	for i, n := range r.names {
		name, _ := json.Marshal(n)
		b = append(append(append(append(b, ','), name...), ':'), strconv.FormatInt(values[i], 10)...)
	}
	return append(b, '}', '\n'), nil
}

// The "_aws" member of an EMF line.
type (
	metricDef struct {
		Name string `json:"Name"`
		Unit string `json:"Unit"`
	}
	directive struct {
		Namespace  string      `json:"Namespace"`
		Dimensions [][]string  `json:"Dimensions"`
		Metrics    []metricDef `json:"Metrics"`
	}
	metadata struct {
		Timestamp         int64       `json:"Timestamp"`
		CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
	}
)

// write writes one line.
func (r *Recorder) write(values []int64, records int, requestID string) error {
	b, err := r.line(values, records, requestID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err = r.cfg.Writer.Write(b)
	return err
}
