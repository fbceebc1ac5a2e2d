package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
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
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/test/history"
)

// KeyField is the body field that carries the producer's idempotency key.
const KeyField = "idempotency_key"

// KeyJMESPath takes the producer's key from a message as Powertools users
// write it: the key of the workers on a table shared with Powertools.
const KeyJMESPath = "powertools_json(body).idempotency_key"

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
	DynamoEndpoint string // the fault proxy in front of DynamoDB, this incarnation's own port
	QueueURL       string
	QueueARN       string
	Table          string
	Namespace      string // the guard's namespace; Powertools' keyPrefix on a shared table
	Seed           uint64

	// Reader is the kind of worker: a sqsonce guard in default or strict
	// mode, or Powertools for AWS Lambda (TypeScript), whose records
	// worker.mjs in the Powertools directory handles (see RunWorker).
	Reader     history.Reader
	Powertools string // the directory of the pinned Powertools packages and worker.mjs
	Shared     bool   // the table is shared with Powertools: its record format, the key by KeyJMESPath
	PeerFaults bool   // a Powertools worker's operations may be slow, and its worker die after one (see Profile.PeerFaults)

	// History is the run's history directory: this incarnation writes
	// Name.jsonl there (a Powertools worker's node process Name-node.jsonl),
	// each under Header with its own process name.
	History string
	Header  history.Header

	// Timeout is the invocation's deadline after a batch is received; the
	// worker SIGKILLs itself if the handler has not returned by then, as
	// Lambda ends an invocation that overruns.
	Timeout time.Duration
	// NoDeadline runs invocations without a deadline (a worker outside
	// Lambda, or Managed Instances with an operation that outlives it):
	// the guard's lease is Lease from the claim, and no watchdog kills.
	NoDeadline bool
	// Lease is the guard's Config.Lease (zero: its default).
	Lease time.Duration
	// KeepAlive lets the guard keep its claims' leases alive (its default);
	// without it Config.KeepAliveEvery is negative, as the chaos runs were
	// before the recording store passed Extend through.
	KeepAlive    bool
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
	MaxLife time.Duration // the process exits after this long whatever happens

	// Invocations is how many invocations a sqsonce worker process runs at
	// once, each polling on its own with the one guard and handler (see
	// Profile.Invocations); 0 means 1. A Powertools worker runs one.
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

// keySelector is how the workers take a message's key: the body field, or
// on a table shared with Powertools its JMESPath expression, which gives
// Powertools' key material.
func keySelector(shared bool) idempotency.Selector {
	if shared {
		return jmespath.MustCompile(KeyJMESPath).Selector()
	}
	return idempotency.BodyField(KeyField)
}

// guardConfig is the configuration every sqsonce worker's guard shares
// (and the account's, which names record ids as they do).
func guardConfig(cfg WorkerConfig) idempotency.Config {
	c := idempotency.Config{Namespace: cfg.Namespace, SkewMargin: cfg.SkewMargin, Strict: cfg.Reader.Strict(), Lease: cfg.Lease}
	if !cfg.KeepAlive {
		c.KeepAliveEvery = -1
	}
	if cfg.Shared {
		c.Format = idempotency.FormatPowertoolsTypeScript
	}
	return c
}

// payloadDigest is the digest of what a body asks for, the same for every
// send of one request (its key and document, not the attempt): what the
// history's payload_validated holds acknowledged deliveries to.
func payloadDigest(body string) string {
	var b Body
	_ = json.Unmarshal([]byte(body), &b)
	sum := sha256.Sum256([]byte(b.Key + "\x00" + b.Doc))
	return hex.EncodeToString(sum[:8])
}

// worker is one poller process: the event source mapping's loop around the
// real batch handler, or around a Powertools node process.
type worker struct {
	cfg   WorkerConfig
	hist  *history.Writer
	sqs   *sqs.Client
	slog  *slog.Logger
	runs  atomic.Int64
	invs  atomic.Int64
	dels  atomic.Int64
	calls sync.RWMutex // held for reading by each recorded store call; kill takes it
	rngMu sync.Mutex
	rng   *rand.Rand
	// handle runs one batch: the sqsonce batch handler, or the Powertools
	// node process. ok false: the invocation failed as a whole.
	handle func(ctx context.Context, ev events.SQSEvent, inv *invocation) (resp events.SQSEventResponse, ok bool)
}

// RunWorker polls the queue until ctx ends (it then finishes the batch in
// hand and returns) or cfg.MaxLife passes, recording every step in its
// history file, fsync'd. A Powertools worker hands each batch to a node
// process running worker.mjs, which records its own steps.
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	hdr := cfg.Header
	hdr.Proc = cfg.Name
	hw, err := history.Create(filepath.Join(cfg.History, cfg.Name+".jsonl"), hdr, history.WriterOptions{Sync: true})
	if err != nil {
		return err
	}
	defer hw.Close()
	w := &worker{
		cfg:  cfg,
		hist: hw,
		sqs:  sqs.NewFromConfig(awsConfig(cfg.SQSEndpoint)),
		slog: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		rng:  rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
	}
	if err := hw.Write(history.Event{Ev: history.KindProc, Reader: cfg.Reader, Off: int64(cfg.ClockOffset)}); err != nil {
		return err
	}
	// The harness's random kill: SIGKILL once the store calls in flight are
	// recorded (see kill).
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		w.kill(killRandom)
	}()
	switch cfg.Reader {
	case history.ReaderSqsonce, history.ReaderSqsonceStrict:
		if err := w.sqsonce(); err != nil {
			return err
		}
	case history.ReaderPowertoolsTS:
		node, err := startNode(w)
		if err != nil {
			return err
		}
		defer node.close()
		w.handle = node.handle
	default:
		return fmt.Errorf("chaos: worker %s: unknown kind %q", cfg.Name, cfg.Reader)
	}
	stop := time.Now().Add(cfg.MaxLife)
	n := max(cfg.Invocations, 1)
	if cfg.Reader == history.ReaderPowertoolsTS {
		n = 1
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(stop) {
				w.poll(ctx)
			}
		})
	}
	wg.Wait()
	return hw.Write(history.Event{Ev: history.KindExit})
}

// sqsonce sets w up as a sqsonce worker: the real batch handler around the
// real guard on dynamostore, behind the recording store.
func (w *worker) sqsonce() error {
	cfg := w.cfg
	db := dynamodb.NewFromConfig(awsConfig(cfg.DynamoEndpoint))
	storeOpts := []dynamostore.Option{dynamostore.WithLogger(w.slog)}
	if cfg.SortKey {
		storeOpts = append(storeOpts, dynamostore.WithAttributes(dynamostore.Attributes{ID: TableKey.Partition}),
			dynamostore.WithSortKey(dynamostore.SortKey{Attr: TableKey.Sort, Partition: TableKey.Value}))
	}
	if cfg.Shared {
		storeOpts = append(storeOpts, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	}
	store, err := dynamostore.New(db, cfg.Table, storeOpts...)
	if err != nil {
		return err
	}
	gc := guardConfig(cfg)
	gc.Store = &recordStore{next: store, w: w}
	gc.Now = w.now
	gc.Logger = w.slog
	gc.OnOutcome = w.onOutcome
	g, err := idempotency.New(gc)
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
	h := batch.SQS(w.record(idempotency.Wrap(g, keySelector(cfg.Shared), w.operation)), opts)
	w.handle = func(ctx context.Context, ev events.SQSEvent, _ *invocation) (events.SQSEventResponse, bool) {
		resp, _ := h(ctx, ev) // a whole-batch error lists every record as failed too
		return resp, true
	}
	return nil
}

// now is the guard's clock: the host's, off by the worker's offset.
func (w *worker) now() time.Time { return time.Now().Add(w.cfg.ClockOffset) }

// killRandom is the kill of the harness's random killer (SIGUSR1).
const killRandom = "random"

// killGrace is the longest a worker's own kill waits for the store calls
// in flight to be answered and recorded.
const killGrace = 2 * time.Second

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

// write records es in the history; a failure is logged (the record that
// needed it fails where it matters: a delivery, an operation's start, an
// acknowledgement).
func (w *worker) write(es ...history.Event) error {
	err := w.hist.Write(es...)
	if err != nil {
		w.slog.Error("history", "error", err)
	}
	return err
}

// kill records why and SIGKILLs the worker's process group (a Powertools
// worker's node process with it); it does not return.
//
// A store call in flight is let finish and be recorded first (for at most
// killGrace), and no new one starts: a write the store applied is then in
// the history, as the store answered it, rather than applied unseen (a
// release nobody recorded would show the key's next run as a second run).
// The harness's random kills come as SIGUSR1 and go through here too
// (see [fleet.kill]): the kill is recorded when it happens, after the wait.
func (w *worker) kill(why string) {
	locked := make(chan struct{})
	go func() {
		w.calls.Lock() // never unlocked: the process dies holding it
		close(locked)
	}()
	select {
	case <-locked:
	case <-time.After(killGrace):
	}
	_ = w.write(history.Event{Ev: history.KindFault, Fault: history.FaultProcKill, Target: w.cfg.Name, Class: why})
	_ = syscall.Kill(-os.Getpid(), syscall.SIGKILL) // its own group, when the harness started it
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// poll receives one batch, runs it under a deadline and deletes the records
// that did not fail, as Lambda's event source mapping does with
// ReportBatchItemFailures on.
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
			sleepCtx(ctx, 200*time.Millisecond)
		}
		return
	}
	if len(out.Messages) == 0 {
		return
	}
	timeout := w.cfg.Timeout
	if w.faults() && w.chance(w.cfg.ShortProb) {
		timeout = w.between(w.cfg.ShortMin, w.cfg.ShortMax)
	}
	deadline := time.Now().Add(timeout)
	var deadlineNs int64
	if !w.cfg.NoDeadline {
		deadlineNs = deadline.UnixNano()
	}
	ev := esm.Event(w.cfg.QueueARN, out.Messages)
	inv := w.invocation(ev, deadline)
	delivered := make([]history.Event, len(ev.Records))
	for i, r := range ev.Records {
		ref := inv.refs[r.MessageId]
		n, _ := strconv.Atoi(r.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		delivered[i] = history.Event{Ev: history.KindDeliver, Inv: inv.id, D: ref.d, Msg: r.MessageId, Rc: n,
			Key: ref.key, Payload: ref.payload, Deadline: deadlineNs}
	}
	if w.write(delivered...) != nil {
		return // not acknowledged: the messages come back
	}

	// Each invocation has its own Lambda request id, as under
	// AWS_LAMBDA_MAX_CONCURRENCY: the guard's and batch's lines name it.
	lc := &lambdacontext.LambdaContext{AwsRequestID: inv.id}
	ictx := context.WithValue(lambdacontext.NewContext(context.Background(), lc), invocationKey{}, inv)
	if w.cfg.NoDeadline {
		resp, ok := w.handle(ictx, ev, inv)
		w.acknowledge(ev, inv, resp, ok)
		return
	}
	ictx, icancel := context.WithDeadline(ictx, deadline)
	watchdog := time.AfterFunc(time.Until(deadline), func() { w.kill("deadline") })
	resp, ok := w.handle(ictx, ev, inv)
	if !watchdog.Stop() {
		select {} // the watchdog is killing the process
	}
	icancel()
	w.acknowledge(ev, inv, resp, ok)
}

// acknowledge deletes the messages of the records that succeeded, as the
// event source mapping does with the handler's response (ok false: the
// invocation failed, nothing is deleted).
func (w *worker) acknowledge(ev events.SQSEvent, inv *invocation, resp events.SQSEventResponse, ok bool) {
	if !ok {
		return // the invocation failed: nothing is deleted, the messages come back
	}
	acked, err := esm.Acknowledged(ev, resp)
	if err != nil {
		w.slog.Error("batch response", "error", err)
		return // Lambda fails the whole batch: the messages come back
	}
	// The acknowledgement is decided here: record it (with the result the
	// record saw) before deleting, so that a kill during the delete cannot
	// hide it from the history.
	acks := make([]history.Event, len(acked))
	for i, r := range acked {
		acks[i] = history.Event{Ev: history.KindAck, Inv: inv.id, D: inv.refs[r.MessageId].d, Result: inv.result(r.MessageId).Run}
	}
	if len(acks) > 0 && w.write(acks...) != nil {
		return // not acknowledged: the messages come back
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

// invocation is one batch: its deliveries by message id, and the results
// the record function returned, for the acknowledgements.
type invocation struct {
	id   string
	refs map[string]*delivery // by message id; set before the batch runs, read only after

	mu      sync.Mutex
	results map[string]Result
}

type invocationKey struct{}

// invocation names the batch ev and each of its deliveries.
func (w *worker) invocation(ev events.SQSEvent, deadline time.Time) *invocation {
	inv := &invocation{
		id:      w.cfg.Name + "/i" + strconv.FormatInt(w.invs.Add(1), 10),
		refs:    make(map[string]*delivery, len(ev.Records)),
		results: make(map[string]Result, len(ev.Records)),
	}
	for _, r := range ev.Records {
		inv.refs[r.MessageId] = &delivery{
			d:       w.cfg.Name + "/" + strconv.FormatInt(w.dels.Add(1), 10),
			key:     keyOf(r.Body),
			payload: payloadDigest(r.Body),
		}
	}
	return inv
}

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

// delivery is one receive of a message, as the history names it, carried
// in the record call's context to the guard's hooks, the operation and the
// recording store.
type delivery struct {
	d, key, payload string

	mu    sync.Mutex
	owner string // the owner of its last successful claim
}

type deliveryKey struct{}

// deliveryOf returns the delivery of a record call's context, or an empty
// one (whose events the checker cannot tie to a delivery).
func deliveryOf(ctx context.Context) *delivery {
	if d, _ := ctx.Value(deliveryKey{}).(*delivery); d != nil {
		return d
	}
	return &delivery{}
}

func (d *delivery) setOwner(owner string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owner = owner
}

func (d *delivery) getOwner() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.owner
}

// record wraps the idempotent record function: it puts the record's
// delivery in its context and keeps the result for the acknowledgement.
func (w *worker) record(fn func(context.Context, events.SQSMessage) (Result, error)) func(context.Context, events.SQSMessage) (Result, error) {
	return func(ctx context.Context, m events.SQSMessage) (Result, error) {
		inv, _ := ctx.Value(invocationKey{}).(*invocation)
		if inv != nil {
			if d := inv.refs[m.MessageId]; d != nil {
				ctx = context.WithValue(ctx, deliveryKey{}, d)
			}
		}
		r, err := fn(ctx, m)
		if err == nil && inv != nil {
			inv.set(m.MessageId, r)
		}
		return r, err
	}
}

// operation is the expensive call the guard protects: it records its start,
// takes its time, records that it is done and returns its run id. It gives
// up when its context ends, as a model call would.
func (w *worker) operation(ctx context.Context, m events.SQSMessage) (Result, error) {
	d := deliveryOf(ctx)
	key := keyOf(m.Body)
	run := w.cfg.Name + "-" + strconv.FormatInt(w.runs.Add(1), 10)
	if err := w.write(history.Event{Ev: history.KindOpStart, D: d.d, Owner: d.getOwner()}); err != nil {
		return Result{}, err
	}
	dur := w.between(w.cfg.OpMin, w.cfg.OpMax)
	if w.chance(w.cfg.SlowProb) {
		dur = w.between(w.cfg.SlowMin, w.cfg.SlowMax)
	}
	t := time.NewTimer(dur)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		_ = w.write(history.Event{Ev: history.KindOpEnd, D: d.d, Resp: history.RespError, Err: context.Cause(ctx).Error()})
		return Result{}, fmt.Errorf("chaos: operation: %w", context.Cause(ctx))
	}
	if err := w.write(history.Event{Ev: history.KindOpEnd, D: d.d, Resp: history.RespOK, Result: run}); err != nil {
		return Result{}, err
	}
	if w.faults() && w.chance(w.cfg.KillAfterOpProb) {
		w.kill("after_op")
	}
	return Result{Run: run, Key: key}, nil
}

// onOutcome records the guard's outcome of every call.
func (w *worker) onOutcome(ctx context.Context, r idempotency.Report) {
	e := history.Event{Ev: history.KindOutcome, D: deliveryOf(ctx).d, Outcome: string(r.Outcome), Ran: r.Ran, Source: r.Source}
	if r.Err != nil {
		e.Err, e.Class = r.Err.Error(), classify(r.Err)
	}
	_ = w.write(e)
}

// onRecord records each record the batch handler failed, with why.
func (w *worker) onRecord(ctx context.Context, m events.SQSMessage, err error) {
	if err == nil {
		return // acknowledged in poll, after the batch
	}
	d := ""
	if inv, _ := ctx.Value(invocationKey{}).(*invocation); inv != nil && inv.refs[m.MessageId] != nil {
		d = inv.refs[m.MessageId].d
	}
	_ = w.write(history.Event{Ev: history.KindFail, D: d, Class: classify(err)})
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
