package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// KeyField is the body field that carries the producer's idempotency key.
const KeyField = "idempotency_key"

// Body is the message body the producer sends.
type Body struct {
	Key     string `json:"idempotency_key"`
	Doc     string `json:"doc"`
	Attempt int    `json:"attempt"` // 1 for the first send, 2 for a re-send
}

// Result is what the operation returns and the store keeps: the run that
// produced it.
type Result struct {
	Run string `json:"run"`
	Key string `json:"key"`
}

// WorkerConfig is a worker process's configuration, passed as a JSON file.
type WorkerConfig struct {
	Name           string // the incarnation, e.g. "w2.5"; run ids start with it
	SQSEndpoint    string
	DynamoEndpoint string // the fault proxy in front of DynamoDB
	QueueURL       string
	QueueARN       string
	Table          string
	Namespace      string
	Seed           uint64

	// Timeout is the invocation's deadline after a batch is received; the
	// worker SIGKILLs itself if the handler has not returned by then, as
	// Lambda ends an invocation that overruns.
	Timeout      time.Duration
	MinRemaining time.Duration // batch.Options.MinRemaining
	BatchSize    int32

	OpMin, OpMax     time.Duration // an ordinary operation's duration
	SlowProb         float64       // the chance that an operation takes SlowMin..SlowMax instead
	SlowMin, SlowMax time.Duration

	// Until FaultsUntil: with ShortProb a batch gets a deadline of
	// ShortMin..ShortMax instead of Timeout, and with KillAfterOpProb the
	// worker SIGKILLs itself after an operation finished and before the
	// guard stored its completion.
	FaultsUntil        time.Time
	ShortProb          float64
	ShortMin, ShortMax time.Duration
	KillAfterOpProb    float64

	SkewMargin  time.Duration // the guard's Config.SkewMargin
	ClockOffset time.Duration // added to the guard's clock

	Pacing  bool          // pace redelivery with visibility changes
	SortKey bool          // the table has a sort key: see TableKey
	Strict  bool          // the guard runs in strict mode
	MaxLife time.Duration // the process exits after this long whatever happens

	// Invocations is how many invocations the process runs at once, each
	// polling on its own (see Profile.Invocations); 0 means 1.
	Invocations int
}

// ReadWorkerConfig reads a WorkerConfig written by the harness.
func ReadWorkerConfig(path string) (WorkerConfig, error) {
	var c WorkerConfig
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("chaos: worker config: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("chaos: worker config %s: %w", path, err)
	}
	return c, nil
}

// awsConfig is a client configuration for a loopback endpoint with static
// credentials, built without reading the environment.
func awsConfig(endpoint string) aws.Config {
	return aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(endpoint),
		RetryMaxAttempts: 3,
	}
}

// worker is one poller process: the event source mapping's loop around the
// real batch handler.
type worker struct {
	cfg  WorkerConfig
	log  *callLog
	sqs  *sqs.Client
	slog *slog.Logger
	runs atomic.Int64
	// invocations numbers the process's invocations, for their request ids.
	invocations atomic.Int64
	rngMu       sync.Mutex
	rng         *rand.Rand
	h           func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

// RunWorker polls the queue until ctx ends (it then finishes the batch in
// hand and returns) or cfg.MaxLife passes, logging every step to logPath.
func RunWorker(ctx context.Context, cfg WorkerConfig, logPath string) error {
	lg, err := openLog(logPath)
	if err != nil {
		return err
	}
	defer lg.close()
	w := &worker{
		cfg:  cfg,
		log:  lg,
		sqs:  sqs.NewFromConfig(awsConfig(cfg.SQSEndpoint)),
		slog: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		rng:  rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
	}
	db := dynamodb.NewFromConfig(awsConfig(cfg.DynamoEndpoint))
	storeOpts := []dynamostore.Option{dynamostore.WithLogger(w.slog)}
	if cfg.SortKey {
		storeOpts = append(storeOpts, dynamostore.WithAttributes(dynamostore.Attributes{ID: TableKey.Partition}),
			dynamostore.WithSortKey(dynamostore.SortKey{Attr: TableKey.Sort, Partition: TableKey.Value}))
	}
	store, err := dynamostore.New(db, cfg.Table, storeOpts...)
	if err != nil {
		return err
	}
	g, err := idempotency.New(idempotency.Config{
		Store:      store,
		Namespace:  cfg.Namespace,
		SkewMargin: cfg.SkewMargin,
		Strict:     cfg.Strict,
		Now:        func() time.Time { return time.Now().Add(cfg.ClockOffset) },
		Logger:     w.slog,
		OnOutcome:  w.onOutcome,
	})
	if err != nil {
		return err
	}
	opts := batch.Options{
		Concurrency:  10,
		MinRemaining: cfg.MinRemaining,
		Logger:       w.slog,
		OnRecord:     w.onRecord,
	}
	if err := w.pace(&opts); err != nil {
		return err
	}
	w.h = batch.SQS(w.record(idempotency.Wrap(g, idempotency.BodyField(KeyField), w.operation)), opts)

	if err := lg.write(entry{Ev: evStart}); err != nil {
		return err
	}
	stop := time.Now().Add(cfg.MaxLife)
	var wg sync.WaitGroup
	for range max(cfg.Invocations, 1) {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(stop) {
				w.poll(ctx)
			}
		})
	}
	wg.Wait()
	return lg.write(entry{Ev: evExit})
}

// faults reports whether worker-side faults are still on.
func (w *worker) faults() bool { return time.Now().Before(w.cfg.FaultsUntil) }

func (w *worker) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.Float64() < p
}

func (w *worker) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

// kill logs why and SIGKILLs the process; it does not return.
func (w *worker) kill(why string) {
	_ = w.log.write(entry{Ev: evKill, Class: why})
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// poll receives one batch, runs the handler on it under a deadline and
// deletes the records that did not fail, as Lambda's event source mapping
// does with ReportBatchItemFailures on.
func (w *worker) poll(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	out, err := w.sqs.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(w.cfg.QueueURL),
		MaxNumberOfMessages:         w.cfg.BatchSize,
		WaitTimeSeconds:             1,
		MessageSystemAttributeNames: esm.SystemAttributes,
	})
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			w.slog.Error("receive", "error", err)
			_ = w.log.write(entry{Ev: evRecvErr, Err: err.Error()})
			sleepCtx(ctx, 200*time.Millisecond)
		}
		return
	}
	if len(out.Messages) == 0 {
		return
	}
	ev := esm.Event(w.cfg.QueueARN, out.Messages)
	logged := make([]entry, len(ev.Records))
	for i, r := range ev.Records {
		n, _ := strconv.Atoi(r.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		logged[i] = entry{Ev: evRecv, Msg: r.MessageId, Key: keyOf(r.Body), N: n}
	}
	if err := w.log.write(logged...); err != nil {
		w.slog.Error("call log", "error", err)
		return // not acknowledged: the messages come back
	}

	timeout := w.cfg.Timeout
	if w.faults() && w.chance(w.cfg.ShortProb) {
		timeout = w.between(w.cfg.ShortMin, w.cfg.ShortMax)
	}
	inv := &invocation{results: make(map[string]Result, len(ev.Records))}
	lc := &lambdacontext.LambdaContext{AwsRequestID: fmt.Sprintf("%s-%d", w.cfg.Name, w.invocations.Add(1))}
	ictx, icancel := context.WithTimeout(context.WithValue(lambdacontext.NewContext(context.Background(), lc), invocationKey{}, inv), timeout)
	watchdog := time.AfterFunc(timeout, func() { w.kill("deadline") })
	resp, _ := w.h(ictx, ev)
	if !watchdog.Stop() {
		select {} // the watchdog is killing the process
	}
	icancel()

	acked, err := esm.Acknowledged(ev, resp)
	if err != nil {
		w.slog.Error("batch response", "error", err)
		return // Lambda fails the whole batch: the messages come back
	}
	// The acknowledgement is decided here: log it (with the result the
	// record saw) before deleting, so that a kill during the delete cannot
	// hide it from the accounting.
	acks := make([]entry, len(acked))
	for i, r := range acked {
		acks[i] = entry{Ev: evAck, Msg: r.MessageId, Key: keyOf(r.Body), Run: inv.result(r.MessageId).Run}
	}
	if len(acks) > 0 {
		if err := w.log.write(acks...); err != nil {
			w.slog.Error("call log", "error", err)
			return // not acknowledged: the messages come back
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := esm.Delete(dctx, w.sqs, w.cfg.QueueURL, acked); err != nil {
		w.slog.Error("delete", "error", err) // the messages come back
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// invocation collects the results the record function returned in one
// batch, by message id, for the acknowledgement log.
type invocation struct {
	mu      sync.Mutex
	results map[string]Result
}

type invocationKey struct{}

func (inv *invocation) set(id string, r Result) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.results[id] = r
}

func (inv *invocation) result(id string) Result {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.results[id]
}

// runRef ties a record's call to the run its operation started, so that the
// guard's outcome can name the run.
type runRef struct {
	key string
	mu  sync.Mutex
	run string
}

type runRefKey struct{}

func (r *runRef) set(run string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.run = run
}

func (r *runRef) get() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.run
}

// record wraps the idempotent record function: it gives each call a runRef
// and keeps the result for the acknowledgement log.
func (w *worker) record(fn func(context.Context, events.SQSMessage) (Result, error)) func(context.Context, events.SQSMessage) (Result, error) {
	return func(ctx context.Context, m events.SQSMessage) (Result, error) {
		ctx = context.WithValue(ctx, runRefKey{}, &runRef{key: keyOf(m.Body)})
		r, err := fn(ctx, m)
		if err == nil {
			if inv, _ := ctx.Value(invocationKey{}).(*invocation); inv != nil {
				inv.set(m.MessageId, r)
			}
		}
		return r, err
	}
}

// operation is the expensive call the guard protects: it logs its start,
// takes its time, logs that it is done and returns its run id. It gives up
// when its context ends, as a model call would.
func (w *worker) operation(ctx context.Context, m events.SQSMessage) (Result, error) {
	key := keyOf(m.Body)
	run := w.cfg.Name + "-" + strconv.FormatInt(w.runs.Add(1), 10)
	if ref, _ := ctx.Value(runRefKey{}).(*runRef); ref != nil {
		ref.set(run)
	}
	if err := w.log.write(entry{Ev: evOpStart, Msg: m.MessageId, Key: key, Run: run}); err != nil {
		return Result{}, err
	}
	d := w.between(w.cfg.OpMin, w.cfg.OpMax)
	if w.chance(w.cfg.SlowProb) {
		d = w.between(w.cfg.SlowMin, w.cfg.SlowMax)
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		_ = w.log.write(entry{Ev: evOpFail, Msg: m.MessageId, Key: key, Run: run, Err: context.Cause(ctx).Error()})
		return Result{}, fmt.Errorf("chaos: operation: %w", context.Cause(ctx))
	}
	if err := w.log.write(entry{Ev: evOpDone, Msg: m.MessageId, Key: key, Run: run}); err != nil {
		return Result{}, err
	}
	if w.faults() && w.chance(w.cfg.KillAfterOpProb) {
		w.kill("after_op")
	}
	return Result{Run: run, Key: key}, nil
}

// onOutcome logs the guard's outcome of every call.
func (w *worker) onOutcome(ctx context.Context, ev idempotency.Report) {
	e := entry{Ev: evOutcome, Msg: ev.InputID, Outcome: string(ev.Outcome), Ran: ev.Ran}
	if ref, _ := ctx.Value(runRefKey{}).(*runRef); ref != nil {
		e.Key = ref.key
		if ev.Ran {
			e.Run = ref.get()
		}
	}
	if ev.Err != nil {
		e.Err = ev.Err.Error()
		e.Class = classify(ev.Err)
	}
	_ = w.log.write(e)
}

// onRecord logs how the batch handler finished each record.
func (w *worker) onRecord(_ context.Context, m events.SQSMessage, err error) {
	e := entry{Ev: evRecord, Msg: m.MessageId, Key: keyOf(m.Body)}
	if err != nil {
		e.Err = err.Error()
		e.Class = classify(err)
	}
	_ = w.log.write(e)
}

// classify names the reason a record failed, for the DLQ accounting.
func classify(err error) string {
	var se *idempotency.StoreError
	switch {
	case errors.Is(err, idempotency.ErrInProgress):
		return "in_progress"
	case errors.Is(err, idempotency.ErrQuarantined):
		return "quarantined"
	case errors.Is(err, batch.ErrDeadline):
		return "not_started"
	case errors.As(err, &se):
		return "store_" + se.Op
	case errors.Is(err, idempotency.ErrPayloadMismatch):
		return "mismatch"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "deadline"
	default:
		return "other"
	}
}

// keyOf returns the producer's key in a body, or "" if it has none.
func keyOf(body string) string {
	var b Body
	_ = json.Unmarshal([]byte(body), &b)
	return b.Key
}
