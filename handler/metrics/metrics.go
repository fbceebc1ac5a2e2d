package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// The metric names, one per counter of [Counts]. Every metric is a Count,
// per batch, in [Config.Namespace] with the dimension Service; the package
// doc says when each moves.
const (
	ProviderCalls        = "ProviderCalls"
	DuplicatesSuppressed = "DuplicatesSuppressed"
	InProgressRetried    = "InProgressRetried"
	TakenOver            = "TakenOver"
	Failed               = "Failed"
	DoubleRuns           = "DoubleRuns"
	Quarantined          = "Quarantined"
)

// Counts are the outcomes of one batch.
type Counts struct {
	// ProviderCalls counts requests sent to the model provider through
	// [Recorder.Provider], whether they succeed or fail (a failed request
	// may still be billed). A run that fails before its request (a document
	// not found, a request log that cannot be written) adds nothing.
	ProviderCalls int64
	// DuplicatesSuppressed counts deliveries answered with a stored result
	// without running the operation (outcome replayed with Ran unset: from
	// the store, the cache, or another call's run shared in process). A
	// replay after a run of its own (Ran set: the lease was lost and the
	// winner's result stands) suppressed nothing and is not counted.
	DuplicatesSuppressed int64
	// InProgressRetried counts deliveries that found the key in progress
	// elsewhere and were handed back to SQS (outcome in_progress, including
	// calls that shared a run which found it so).
	InProgressRetried int64
	// TakenOver counts runs that took over a lapsed lease or an expired
	// record (outcome taken_over).
	TakenOver int64
	// Failed counts deliveries the guard failed (outcomes failed, released
	// and mismatch): a key or store error, a failed operation whose claim
	// was released, a key reused with another payload, and a call that
	// shared a run that failed. Records the batch never started (not
	// enough time left) reach no guard and are not counted.
	Failed int64
	// DoubleRuns counts runs of the operation whose lease passed while they
	// ran and whose key another worker took over and ran too (outcome
	// double_run): the one case in which a key's operation ran twice, which
	// the promise allows when a worker outlives its lease. Alarm on it.
	DoubleRuns int64
	// Quarantined counts deliveries that found their key quarantined in
	// strict mode, or quarantined it (outcome quarantined): nothing ran,
	// and an operator must release or resolve the record. Alarm on it.
	Quarantined int64
}

// Config configures a [Recorder].
type Config struct {
	// Writer receives one EMF line per batch. Inside Lambda, standard
	// output: CloudWatch Logs turns the lines into metrics. Required.
	Writer io.Writer
	// Namespace is the CloudWatch namespace. Default "sqsonce".
	Namespace string
	// Service is the value of the "Service" dimension, e.g. the app's
	// idempotency namespace. Default "summarise".
	Service string
	// Now is the clock. Nil means [time.Now].
	Now func() time.Time
}

// Recorder counts idempotency outcomes per batch and writes each batch's
// counts as one CloudWatch Embedded Metric Format line. It is safe for
// concurrent use; build one at start-up.
type Recorder struct {
	cfg Config
	mu  sync.Mutex // one line at a time
}

// New checks cfg and returns a Recorder.
func New(cfg Config) (*Recorder, error) {
	if cfg.Writer == nil {
		return nil, fmt.Errorf("metrics: Config.Writer is required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "sqsonce"
	}
	if cfg.Service == "" {
		cfg.Service = "summarise"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Recorder{cfg: cfg}, nil
}

type countsKey struct{}

// counters are the Counts of one batch, updated concurrently.
type counters struct {
	calls, replayed, inProgress, takenOver, failed, doubleRuns, quarantined atomic.Int64
}

// Observe counts ev into the batch running in ctx; use it as (or from)
// idempotency.Config.OnOutcome. Outside a batch started by [Recorder.Batch]
// it does nothing. It moves every metric but ProviderCalls, which
// [Recorder.Provider] counts where the requests are made.
func (r *Recorder) Observe(ctx context.Context, ev idempotency.Report) {
	c, _ := ctx.Value(countsKey{}).(*counters)
	if c == nil {
		return
	}
	switch ev.Outcome {
	case idempotency.OutcomeReplayed:
		if !ev.Ran {
			c.replayed.Add(1)
		}
	case idempotency.OutcomeInProgress:
		c.inProgress.Add(1)
	case idempotency.OutcomeTakenOver:
		c.takenOver.Add(1)
	case idempotency.OutcomeFailed, idempotency.OutcomeReleased, idempotency.OutcomeMismatch:
		c.failed.Add(1)
	case idempotency.OutcomeDoubleRun:
		c.doubleRuns.Add(1)
	case idempotency.OutcomeQuarantined:
		c.quarantined.Add(1)
	}
}

// Provider returns p with every request counted as ProviderCalls in the
// batch running in its context, before the request is sent; outside a batch
// started by [Recorder.Batch] nothing is counted. Wrap the provider that
// makes the requests, inside handler.LogRequests, so that a call the request
// log refused (and so never made) is not counted:
//
//	handler.LogRequests(rec.Provider(provider), log, nil)
func (r *Recorder) Provider(p handler.Provider) handler.Provider {
	return countedProvider{p}
}

type countedProvider struct{ p handler.Provider }

func (c countedProvider) Name() string { return c.p.Name() }

func (c countedProvider) Complete(ctx context.Context, call handler.Call) (handler.Completion, error) {
	if n, _ := ctx.Value(countsKey{}).(*counters); n != nil {
		n.calls.Add(1)
	}
	return c.p.Complete(ctx, call)
}

// Batch returns next with a fresh count for each invocation, written as one
// EMF line when next returns, with the invocation's Lambda request id as
// the request_id property. A failed write is ignored: metrics never fail a
// batch.
func (r *Recorder) Batch(next func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		c := &counters{}
		resp, err := next(context.WithValue(ctx, countsKey{}, c), ev)
		var requestID string
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			requestID = lc.AwsRequestID
		}
		_ = r.write(requestID, Counts{
			ProviderCalls:        c.calls.Load(),
			DuplicatesSuppressed: c.replayed.Load(),
			InProgressRetried:    c.inProgress.Load(),
			TakenOver:            c.takenOver.Load(),
			Failed:               c.failed.Load(),
			DoubleRuns:           c.doubleRuns.Load(),
			Quarantined:          c.quarantined.Load(),
		}, len(ev.Records))
		return resp, err
	}
}

// Write writes counts as one EMF line, with records (the batch size) as the
// "Records" property.
func (r *Recorder) Write(counts Counts, records int) error {
	return r.write("", counts, records)
}

// write writes counts as one EMF line, naming the invocation's request id
// when it is known: invocations that share a process share its output.
func (r *Recorder) write(requestID string, counts Counts, records int) error {
	b, err := r.line(requestID, counts, records)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err = r.cfg.Writer.Write(b)
	return err
}

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

type line struct {
	AWS                  metadata `json:"_aws"`
	Service              string   `json:"Service"`
	Records              int      `json:"Records"`
	ProviderCalls        int64    `json:"ProviderCalls"`
	DuplicatesSuppressed int64    `json:"DuplicatesSuppressed"`
	InProgressRetried    int64    `json:"InProgressRetried"`
	TakenOver            int64    `json:"TakenOver"`
	Failed               int64    `json:"Failed"`
	DoubleRuns           int64    `json:"DoubleRuns"`
	Quarantined          int64    `json:"Quarantined"`
	RequestID            string   `json:"request_id,omitempty"`
}

// Line returns counts as one EMF JSON line, ending in a newline.
func (r *Recorder) Line(counts Counts, records int) ([]byte, error) {
	return r.line("", counts, records)
}

func (r *Recorder) line(requestID string, counts Counts, records int) ([]byte, error) {
	l := line{
		RequestID: requestID,
		AWS: metadata{
			Timestamp: r.cfg.Now().UnixMilli(),
			CloudWatchMetrics: []directive{{
				Namespace:  r.cfg.Namespace,
				Dimensions: [][]string{{"Service"}},
				Metrics: []metricDef{
					{ProviderCalls, "Count"},
					{DuplicatesSuppressed, "Count"},
					{InProgressRetried, "Count"},
					{TakenOver, "Count"},
					{Failed, "Count"},
					{DoubleRuns, "Count"},
					{Quarantined, "Count"},
				},
			}},
		},
		Service:              r.cfg.Service,
		Records:              records,
		ProviderCalls:        counts.ProviderCalls,
		DuplicatesSuppressed: counts.DuplicatesSuppressed,
		InProgressRetried:    counts.InProgressRetried,
		TakenOver:            counts.TakenOver,
		Failed:               counts.Failed,
		DoubleRuns:           counts.DoubleRuns,
		Quarantined:          counts.Quarantined,
	}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return append(b, '\n'), nil
}
