package matrix

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

// One server per store for the whole matrix; each row and case has its own
// namespace.
var (
	moto        = motoserver.New()
	redisServer = redisserver.New()
	pgServer    = pgserver.New()
)

func TestMain(m *testing.M) {
	code := moto.Run(m)
	_ = redisServer.Close()
	_ = pgServer.Close()
	os.Exit(code)
}

// The dimensions, in the order of a Row.
const (
	dWrapper = iota
	dTenancy
	dKeepAlive
	dStrict
	dCache
	dPayload
	dStore
	dFormat
	dFullBatch
	dConcurrency
	dPacing
	dSealer
	dDeadLetter
	dTrace
	dHook
	dStoreOpts
	dExpiry
)

var dims = []Dim{
	// json_checked: WrapJSON with WithCheck (a check every request
	// passes) and DisallowUnknownFields.
	{"wrapper", []string{"wrap", "json", "do", "json_checked"}},
	{"tenancy", []string{"off", "invocation", "group"}},
	// Config.KeepAliveEvery: -1, zero (a third of the lease), 400 ms.
	{"keepalive", []string{"off", "default", "every_400ms"}},
	// Strict: off, the wrapper's option Strict(), or Config.Strict (the
	// guard's every call).
	{"strict", []string{"off", "option", "config"}},
	// Config.CacheBytes: zero (no cache), 1 KiB (two records: the cases'
	// keys evict each other), 1 MiB.
	{"cache", []string{"off", "1kib", "1mib"}},
	{"payload", []string{"off", "on"}},
	// dynamodb_sort_key: dynamostore.WithSortKey, on a table with a
	// partition and a sort key, as Powertools' sort_key_attr.
	{"store", []string{"memstore", "dynamodb", "dynamodb_sort_key", "redis", "postgres"}},
	// Config.Format, with dynamostore.WithDataFormat of the same runtime:
	// FormatNative (DataJSON), FormatPowertoolsPython
	// (DataPowertoolsPython), FormatPowertoolsTypeScript
	// (DataPowertoolsTypeScript).
	{"format", []string{"native", "powertools_python", "powertools_typescript"}},
	// batch.Options' full-batch error: the zero value (unless every
	// failure is a retry), AlwaysFullBatchError (Powertools'),
	// NoFullBatchError.
	{"fullbatch", []string{"unless_retry", "always", "never"}},
	// batch.Options.Concurrency: the zero value (10), or 1 (a batch in
	// event order).
	{"concurrency", []string{"default", "1"}},
	// batch.Options.Pacing and KeepVisible: off; on with the queue's
	// QueueTimeout (18 s), or one as short as Lambda accepts (the
	// function's 3 s); or KeepVisible.Every 100 ms, each change to 20 s,
	// beyond the queue's 18 s (so every tick changes).
	{"pacing", []string{"off", "queue_18s", "queue_3s", "every_100ms"}},
	// Config.Sealer: none, or package kmsseal on moto's KMS (one key for
	// the matrix), with its data key cache or WithoutCache.
	{"sealer", []string{"off", "on", "on_nocache"}},
	// batch.Options.DeadLetter: none, or a Mover that takes every move.
	{"deadletter", []string{"off", "on"}},
	// oteltrace.Instrument and oteltrace.SQS: off; with an SDK tracer
	// provider that samples every invocation; with one that samples none.
	{"trace", []string{"off", "sampled", "unsampled"}},
	// OnReplay: none, or a hook that counts its calls and returns the
	// result as it is: every replay (from the store, the cache, or a run
	// shared in the process) calls it once, and nothing else does.
	{"hook", []string{"off", "on"}},
	// The store's own options: its defaults, or tuned: dynamostore
	// WithCompressAbove(0) (every result compressed; DataJSON only) or,
	// in a Powertools data format, WithAttributes of other names;
	// redisstore WithKeyPrefix and WithCompressAbove(0); pgstore
	// WithTable; memstore has none.
	{"storeopts", []string{"default", "tuned"}},
	// The guard's clock and retry fields: their defaults; or
	// ExpiresAfter 1 min, Lease 20 s, KeepAliveLimit 30 s, SkewMargin a
	// nanosecond (none) and CompleteAttempts 1.
	{"expiry", []string{"default", "short"}},
}

// exclusions are the pairs no row holds.
var exclusions = func() []Exclusion {
	var out []Exclusion
	for _, f := range []string{"powertools_python", "powertools_typescript"} {
		format := Value{"format", f}
		for _, s := range []string{"memstore", "redis", "postgres"} {
			out = append(out, Exclusion{A: format, B: Value{"store", s},
				Why: "a Powertools format is for a DynamoDB table shared with Powertools: its data format is dynamostore's option"})
		}
		out = append(out,
			Exclusion{A: format, B: Value{"sealer", "on"}, Refused: true,
				Why: "New refuses a Sealer with a Powertools format: Powertools would replay the sealed text"},
			Exclusion{A: format, B: Value{"sealer", "on_nocache"}, Refused: true,
				Why: "New refuses a Sealer with a Powertools format: Powertools would replay the sealed text"},
			Exclusion{A: format, B: Value{"tenancy", "group"}, Refused: true,
				Why: "New refuses TenancyMessageGroup with a Powertools format: Powertools does not scope ids by group"})
	}
	out = append(out, Exclusion{A: Value{"storeopts", "tuned"}, B: Value{"store", "memstore"},
		Why: "memstore has no options"})
	return out
}()

// val is the name of row's value of dimension d.
func val(row Row, d int) string { return dims[d].Values[row[d]] }

func describe(r Row) string {
	var parts []string
	for i, v := range r {
		parts = append(parts, dims[i].Name+"="+dims[i].Values[v])
	}
	return strings.Join(parts, " ")
}

// TestPairs holds the generator to covering every pair not excluded, and
// to no excluded pair.
func TestPairs(t *testing.T) {
	rows := Pairs(dims, exclusions)
	if m := Missing(dims, exclusions, rows); len(m) > 0 {
		t.Fatalf("%d pairs not covered, e.g. %s", len(m), m[0])
	}
	if v := Violations(dims, exclusions, rows); len(v) > 0 {
		t.Fatalf("%d excluded pairs in rows, e.g. %s", len(v), v[0])
	}
	small := []Dim{{"a", []string{"1", "2"}}, {"b", []string{"1", "2"}}, {"c", []string{"1", "2"}}}
	if got := Pairs(small, nil); len(got) > 6 || len(Missing(small, nil, got)) > 0 {
		t.Errorf("three binary dimensions: %d rows, missing %v", len(got), Missing(small, nil, got))
	}
	excl := []Exclusion{{A: Value{"a", "2"}, B: Value{"b", "2"}}, {A: Value{"a", "2"}, B: Value{"c", "1"}}}
	got := Pairs(small, excl)
	if m, v := Missing(small, excl, got), Violations(small, excl, got); len(m) > 0 || len(v) > 0 {
		t.Errorf("three binary dimensions with two exclusions: missing %v, excluded pairs held %v", m, v)
	}
	if m := Missing(small, nil, got); len(m) != 2 {
		t.Errorf("three binary dimensions with two exclusions: the pairs not covered are %v, want the two excluded", m)
	}
}

// TestRefused holds the library to refusing each pair the matrix excludes
// as refused: the first row with one of its values, the other put in,
// must fail idempotency.New.
func TestRefused(t *testing.T) {
	rows := Pairs(dims, exclusions)
	st := &stores{opened: map[string]driver.Store{}}
	for _, e := range exclusions {
		if !e.Refused {
			continue
		}
		s := newSpace(dims, exclusions)
		a, b := s.index(e.A), s.index(e.B)
		var row Row
		for _, r := range rows {
			if s.value(r, s.dim[a]) == a {
				row = append(Row{}, r...)
				break
			}
		}
		if row == nil {
			t.Fatalf("no row holds %s=%s", e.A.Dim, e.A.Value)
		}
		row[s.dim[b]] = b - s.off[s.dim[b]]
		if v := Violations(dims, exclusions, []Row{row}); len(v) != 1 {
			t.Fatalf("%s=%s & %s=%s: the row (%s) holds the excluded pairs %v, want only that one", e.A.Dim, e.A.Value, e.B.Dim, e.B.Value, describe(row), v)
		}
		var sealer driver.Sealer
		if val(row, dSealer) != "off" {
			sealer = st.sealer(t, row)
		}
		cfg := guardConfig(row, st.get(t, row), "refused", sealer)
		if _, err := idempotency.New(cfg); err == nil {
			t.Errorf("%s=%s & %s=%s (%s): New accepted the configuration; the matrix excludes it as refused (%s)", e.A.Dim, e.A.Value, e.B.Dim, e.B.Value, describe(row), e.Why)
		}
	}
}

// stores opens each store once, and the KMS key of the rows with a
// Sealer.
type stores struct {
	mu     sync.Mutex
	opened map[string]driver.Store
	kms    *kms.Client
	keyID  string
}

// sealer returns a new kmsseal.Sealer (a process's own, with its own data
// key cache) on moto's KMS, under the matrix's key.
func (s *stores) sealer(t *testing.T, row Row) driver.Sealer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kms == nil {
		c := kms.NewFromConfig(moto.Config(t))
		out, err := c.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String("sqsonce matrix")})
		if err != nil {
			t.Fatalf("moto KMS CreateKey: %v", err)
		}
		s.kms, s.keyID = c, aws.ToString(out.KeyMetadata.KeyId)
	}
	var opts []kmsseal.Option
	if val(row, dSealer) == "on_nocache" {
		opts = append(opts, kmsseal.WithoutCache())
	}
	sl, err := kmsseal.New(s.kms, s.keyID, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return sl
}

// get returns the store of row: its store, in its format's data format
// (dynamostore's only).
func (s *stores) get(t *testing.T, row Row) driver.Store {
	name, format, tuned := val(row, dStore), val(row, dFormat), val(row, dStoreOpts) == "tuned"
	s.mu.Lock()
	defer s.mu.Unlock()
	opened := name + "/" + format + "/" + val(row, dStoreOpts)
	if st, ok := s.opened[opened]; ok {
		return st
	}
	var st driver.Store
	var err error
	ctx := context.Background()
	switch name {
	case "memstore":
		st = memstore.New()
	case "dynamodb", "dynamodb_sort_key":
		db := moto.DynamoDB(t)
		var opts []dynamostore.Option
		switch format {
		case "powertools_python":
			opts = append(opts, dynamostore.WithDataFormat(dynamostore.DataPowertoolsPython))
		case "powertools_typescript":
			opts = append(opts, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
		}
		if tuned && format == "native" {
			opts = append(opts, dynamostore.WithCompressAbove(0))
		} else if tuned {
			opts = append(opts, dynamostore.WithAttributes(dynamostore.Attributes{Status: "st", Expiration: "exp", LeaseExpiry: "lease",
				Data: "result", Validation: "digest", Owner: "own"}))
		}
		table := ""
		if name == "dynamodb_sort_key" {
			table = motoserver.NewTableWithSortKey(t, db, "pk", "sk")
			attrs := dynamostore.Attributes{ID: "pk"}
			if tuned && format != "native" {
				attrs = dynamostore.Attributes{ID: "pk", Status: "st", Expiration: "exp", LeaseExpiry: "lease", Data: "result", Validation: "digest", Owner: "own"}
			}
			opts = append(opts, dynamostore.WithAttributes(attrs),
				dynamostore.WithSortKey(dynamostore.SortKey{Attr: "sk", FunctionName: "matrix"}))
		} else {
			table = motoserver.NewTable(t, db)
		}
		st, err = dynamostore.New(db, table, opts...)
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: redisServer.Addr(t), ContextTimeoutEnabled: true})
		var opts []redisstore.Option
		if tuned {
			opts = append(opts, redisstore.WithKeyPrefix("mx"), redisstore.WithCompressAbove(0))
		}
		st, err = redisstore.New(ctx, rdb, opts...)
	case "postgres":
		var pool *pgxpool.Pool
		if pool, err = pgxpool.New(ctx, pgServer.NewDatabase(t)); err == nil {
			var ps *pgstore.Store
			var opts []pgstore.Option
			if tuned {
				opts = append(opts, pgstore.WithTable("mx_Records"))
			}
			if ps, err = pgstore.New(pool, opts...); err == nil {
				err = ps.CreateSchema(ctx)
				st = ps
			}
		}
	}
	if err != nil {
		t.Fatalf("%s (%s): %v", name, format, err)
	}
	s.opened[opened] = st
	return st
}

type req struct {
	K string `json:"k"`
	P string `json:"p"`
}

// worker is one process of a row's function: its guard and handler, what
// its guard reported (Config.OnOutcome), and each record's result and
// error (batch.Options.OnRecord).
type worker struct {
	where   string // the row and case, for errors
	row     Row
	guard   *idempotency.Guard
	handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	mover   *mover   // with deadletter=on
	changer *changer // with pacing on

	mu      sync.Mutex
	reports []idempotency.Report
	replays int               // reports of a replay (replayed or double_run, no error)
	hooked  int               // calls of the OnReplay hook (hook=on)
	results map[string]string // by message id, at its last success
	recErr  map[string]error  // by message id, at its last delivery
}

// result is the result of message id's last delivery that succeeded.
func (w *worker) result(id string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.results[id]
}

// takeReports returns the reports since the last call.
func (w *worker) takeReports() []idempotency.Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.reports
	w.reports = nil
	return r
}

func (w *worker) recordErr(id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.recErr[id]
}

// mover is a batch.DeadLetterMover that records the messages it moves.
type mover struct {
	mu    sync.Mutex
	moved map[string]bool
}

func (m *mover) MoveToDeadLetter(_ context.Context, moves []batch.DeadLetterMove) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mv := range moves {
		m.moved[mv.Message.MessageId] = true
	}
	return nil
}

// wasMoved reports whether the worker moved message id to its dead-letter
// queue.
func (w *worker) wasMoved(id string) bool {
	if w.mover == nil {
		return false
	}
	w.mover.mu.Lock()
	defer w.mover.mu.Unlock()
	return w.mover.moved[id]
}

// runs counts the operation's runs per key, and can hold a key's run; with
// tracing, it holds the case's tracer provider, which all its workers use.
type runs struct {
	mu      sync.Mutex
	n       map[string]int
	hold    map[string]chan struct{}
	started chan string
	delay   map[string]time.Duration    // how long a key's run takes
	tp      *sdktrace.TracerProvider    // with trace on
	sampled bool                        // tp samples every invocation (else none)
	spans   *tracetest.InMemoryExporter // what tp exported
}

// newRuns returns the runs of one case of row, with its tracer provider.
func newRuns(t *testing.T, row Row) *runs {
	r := &runs{n: map[string]int{}}
	if s := val(row, dTrace); s != "off" {
		r.sampled = s == "sampled"
		sampler := sdktrace.AlwaysSample()
		if !r.sampled {
			sampler = sdktrace.NeverSample()
		}
		r.spans = tracetest.NewInMemoryExporter()
		r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans), sdktrace.WithSampler(sampler))
		t.Cleanup(func() { _ = r.tp.Shutdown(context.Background()) })
	}
	return r
}

func (r *runs) op(ctx context.Context, key string) (string, error) {
	r.mu.Lock()
	r.n[key]++
	n, hold, delay := r.n[key], r.hold[key], r.delay[key]
	r.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if hold != nil {
		r.started <- key
		select {
		case <-hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return fmt.Sprintf("r-%s-%d", key, n), nil
}

func (r *runs) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[key]
}

func (r *runs) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.n {
		n += k
	}
	return n
}

// checkSpans holds the case's spans to tracing's contract: sampled, one
// operation span per run of the operation and no span attribute or event
// holding a message body; unsampled, no span at all.
func (r *runs) checkSpans(t *testing.T, where string) {
	t.Helper()
	if r.spans == nil {
		return
	}
	spans := r.spans.GetSpans()
	if !r.sampled {
		if len(spans) > 0 {
			t.Errorf("%s: %d spans exported under a provider that samples nothing", where, len(spans))
		}
		return
	}
	ops := 0
	for _, s := range spans {
		if s.Name == "sqsonce.operation" {
			ops++
		}
		attrs := s.Attributes
		for _, ev := range s.Events {
			attrs = append(attrs, ev.Attributes...)
		}
		for _, a := range attrs {
			if v := a.Value.String(); strings.Contains(v, `"k":`) || strings.Contains(v, `"p":`) || strings.Contains(v, "not json") {
				t.Errorf("%s: span %q: attribute %s holds a message body", where, s.Name, a.Key)
			}
		}
	}
	if n := r.total(); ops != n {
		t.Errorf("%s: %d sqsonce.operation spans for %d runs of the operation", where, ops, n)
	}
}

// guardConfig is row's guard configuration on store under namespace ns,
// with sealer (nil: none): zero-value options but the row's.
func guardConfig(row Row, store driver.Store, ns string, sealer driver.Sealer) idempotency.Config {
	cfg := idempotency.Config{Store: store, Namespace: ns, Sealer: sealer}
	switch val(row, dTenancy) {
	case "off":
		cfg.Tenancy = idempotency.TenancyOff
	case "group":
		cfg.Tenancy = idempotency.TenancyMessageGroup
	}
	switch val(row, dKeepAlive) {
	case "off":
		cfg.KeepAliveEvery = -1
	case "every_400ms":
		cfg.KeepAliveEvery = 400 * time.Millisecond
	}
	switch val(row, dCache) {
	case "1kib":
		cfg.CacheBytes = 1 << 10
	case "1mib":
		cfg.CacheBytes = 1 << 20
	}
	switch val(row, dFormat) {
	case "powertools_python":
		cfg.Format = idempotency.FormatPowertoolsPython
	case "powertools_typescript":
		cfg.Format = idempotency.FormatPowertoolsTypeScript
	}
	cfg.Strict = val(row, dStrict) == "config"
	if val(row, dExpiry) == "short" {
		cfg.ExpiresAfter, cfg.Lease, cfg.KeepAliveLimit = time.Minute, 20*time.Second, 30*time.Second
		cfg.SkewMargin, cfg.CompleteAttempts = time.Nanosecond, 1
	}
	return cfg
}

// newWorker builds a worker of row on store under namespace ns, with
// zero-value options but the row's and sealer (nil: none), traced with the
// case's provider.
func newWorker(t *testing.T, where string, row Row, store driver.Store, ns string, r *runs, sealer driver.Sealer) *worker {
	wk := &worker{where: where, row: row, results: map[string]string{}, recErr: map[string]error{}}
	cfg := guardConfig(row, store, ns, sealer)
	cfg.OnOutcome = func(_ context.Context, rep idempotency.Report) {
		wk.mu.Lock()
		defer wk.mu.Unlock()
		wk.reports = append(wk.reports, rep)
		if rep.Err == nil && (rep.Outcome == idempotency.OutcomeReplayed || rep.Outcome == idempotency.OutcomeDoubleRun) {
			wk.replays++
		}
	}
	if r.tp != nil {
		cfg = oteltrace.Instrument(cfg, oteltrace.WithTracerProvider(r.tp))
	}
	g, err := idempotency.New(cfg)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	wk.guard = g
	var opts []idempotency.Option
	payload := val(row, dPayload) == "on"
	wrapper := val(row, dWrapper)
	if payload && wrapper != "do" {
		opts = append(opts, idempotency.WithPayload(idempotency.BodyField("p")))
	}
	if val(row, dStrict) == "option" {
		opts = append(opts, idempotency.Strict())
	}
	if val(row, dHook) == "on" {
		opts = append(opts, idempotency.OnReplay(func(_ context.Context, v string, rep idempotency.Report) (string, error) {
			wk.mu.Lock()
			defer wk.mu.Unlock()
			wk.hooked++
			if rep.Outcome != idempotency.OutcomeReplayed && rep.Outcome != idempotency.OutcomeDoubleRun {
				return "", fmt.Errorf("the hook was called for a %s call", rep.Outcome)
			}
			return v, nil
		}))
	}
	var h func(context.Context, events.SQSMessage) (string, error)
	switch wrapper {
	case "wrap":
		h = idempotency.Wrap(g, idempotency.BodyField("k"), func(ctx context.Context, m events.SQSMessage) (string, error) {
			var q req
			_ = json.Unmarshal([]byte(m.Body), &q)
			return r.op(ctx, q.K)
		}, opts...)
	case "json":
		h = idempotency.WrapJSON(g, idempotency.BodyField("k"), func(ctx context.Context, q req, _ events.SQSMessage) (string, error) {
			return r.op(ctx, q.K)
		}, opts...)
	case "json_checked":
		check := func(q req) error {
			if q.K == "" {
				return errors.New("k: empty") // the key was taken first: never
			}
			return nil
		}
		opts = append(opts, idempotency.WithCheck(check), idempotency.DisallowUnknownFields())
		h = idempotency.WrapJSON(g, idempotency.BodyField("k"), func(ctx context.Context, q req, _ events.SQSMessage) (string, error) {
			return r.op(ctx, q.K)
		}, opts...)
	case "do":
		h = func(ctx context.Context, m events.SQSMessage) (string, error) {
			var q req
			if err := json.Unmarshal([]byte(m.Body), &q); err != nil {
				return "", batch.Permanent(errors.New("the body is not JSON")) // no error quotes the body
			}
			var key idempotency.Selection
			if q.K != "" {
				k := q.K
				if grp := m.Attributes["MessageGroupId"]; grp != "" && cfg.Tenancy == idempotency.TenancyMessageGroup {
					k = grp + "/" + k // Do reads no group: the key carries it
				}
				key.Selector, key.Value = `body ["k"]`, mustJSON(k)
			}
			o := opts
			if payload {
				o = append(append([]idempotency.Option{}, opts...), idempotency.WithPayload(idempotency.Selection{Selector: `body ["p"]`, Value: mustJSON(q.P)}))
			}
			return idempotency.Do(ctx, g, key, func(ctx context.Context) (string, error) { return r.op(ctx, q.K) }, o...)
		}
	}
	run := h
	h = func(ctx context.Context, m events.SQSMessage) (string, error) {
		v, err := run(ctx, m)
		if err == nil {
			wk.mu.Lock()
			wk.results[m.MessageId] = v
			wk.mu.Unlock()
		}
		return v, err
	}
	bo := batch.Options{OnRecord: func(_ context.Context, m events.SQSMessage, err error) {
		wk.mu.Lock()
		defer wk.mu.Unlock()
		wk.recErr[m.MessageId] = err
	}}
	switch val(row, dFullBatch) {
	case "always":
		bo.AlwaysFullBatchError = true
	case "never":
		bo.NoFullBatchError = true
	}
	if val(row, dConcurrency) == "1" {
		bo.Concurrency = 1
	}
	if p := val(row, dPacing); p != "off" {
		wk.changer = &changer{changed: map[string]int{}}
		bo.Pacing.Changer = wk.changer
		switch p {
		case "queue_18s":
			bo.KeepVisible.QueueTimeout = queueTimeout
		case "queue_3s":
			bo.KeepVisible.QueueTimeout = 3 * time.Second
		case "every_100ms":
			bo.KeepVisible = batch.KeepVisible{Every: 100 * time.Millisecond, Timeout: queueTimeout + 2*time.Second, QueueTimeout: queueTimeout}
		}
	}
	if val(row, dDeadLetter) == "on" {
		wk.mover = &mover{moved: map[string]bool{}}
		bo.DeadLetter.Mover = wk.mover
	}
	if r.tp != nil {
		wk.handler = oteltrace.SQS(h, bo, oteltrace.WithTracerProvider(r.tp))
	} else {
		wk.handler = batch.SQS(h, bo)
	}
	return wk
}

// queueTimeout is the matrix's queue's visibility timeout: six times
// Lambda's default 3 s, the construct's minimum.
const queueTimeout = 18 * time.Second

// changer is a batch.VisibilityChanger that applies nothing and counts
// the changes of each message: the matrix holds the cases to their outcome
// with KeepVisible and pacing on (the held duplicate's invocation makes
// changes), not the timeouts (package batch's tests and the simulation
// do).
type changer struct {
	mu      sync.Mutex
	changed map[string]int
}

func (c *changer) ChangeVisibility(_ context.Context, changes []batch.VisibilityChange) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range changes {
		c.changed[ch.MessageID]++
	}
	return nil
}

func (c *changer) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed[id]
}

// recordID is the record id of the body field "k" holding key under
// namespace ns, as row's format spells it, computed here from the formats'
// documented recipes: FormatNative's SHA-256 of the canonical JSON of
// {"selector", "value"} in hex; Powertools Python's md5 of json.dumps of
// the value in hex, and Powertools TypeScript's in base64 (a string is
// spelled alike by both).
func recordID(row Row, ns, key string) string {
	v := mustJSON(key)
	switch val(row, dFormat) {
	case "powertools_python":
		sum := md5.Sum(v)
		return ns + "#" + hex.EncodeToString(sum[:])
	case "powertools_typescript":
		sum := md5.Sum(v)
		return ns + "#" + base64.StdEncoding.EncodeToString(sum[:])
	}
	sum := sha256.Sum256([]byte(`{"selector":"body [\"k\"]","value":` + string(v) + `}`))
	return ns + "#" + hex.EncodeToString(sum[:])
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

type msg struct {
	id, body, group, tenant string
	fifo                    bool // from a FIFO queue (else a standard or fair one)
}

// invoke runs one invocation of one message and reports whether its record
// succeeded (or was moved to the dead-letter queue).
func (w *worker) invoke(t *testing.T, m msg) bool {
	t.Helper()
	return w.invokeBatch(t, m)[m.id]
}

// invokeBatch runs one invocation of the messages (with the first one's
// tenant) at Lambda's default 3 s deadline and reports, by message id,
// whether each record succeeded (or was moved to the dead-letter queue).
// The handler must return before the deadline (a response after it is
// lost), and return a *batch.FullBatchFailureError exactly when its
// full-batch option says.
func (w *worker) invokeBatch(t *testing.T, ms ...msg) map[string]bool {
	t.Helper()
	start := time.Now()
	ctx := context.Background()
	if ms[0].tenant != "" {
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-" + ms[0].id, TenantID: ms[0].tenant})
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var ev events.SQSEvent
	for _, m := range ms {
		sm := events.SQSMessage{MessageId: m.id, ReceiptHandle: "rh-" + m.id, Body: m.body,
			EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:matrix", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
		if m.fifo {
			sm.EventSourceARN += ".fifo"
		}
		if m.group != "" {
			sm.Attributes["MessageGroupId"] = m.group
		}
		ev.Records = append(ev.Records, sm)
	}
	resp, err := w.handler(ctx, ev)
	if val(w.row, dHook) == "on" {
		w.mu.Lock()
		if w.hooked != w.replays {
			t.Errorf("%s: message %s: the OnReplay hook was called %d times for %d replays", w.where, ms[0].id, w.hooked, w.replays)
		}
		w.mu.Unlock()
	}
	if took := time.Since(start); took >= 3*time.Second {
		t.Errorf("%s: message %s: the handler returned %v after the invocation began, past Lambda's 3 s deadline", w.where, ms[0].id, took)
	}
	acked := map[string]bool{}
	for _, m := range ms {
		acked[m.id] = true
	}
	for _, f := range resp.BatchItemFailures {
		acked[f.ItemIdentifier] = false
	}
	failed, retries := 0, 0
	for _, m := range ms {
		if !acked[m.id] {
			failed++
			if e := w.recordErr(m.id); batch.IsRetry(e) || errors.Is(e, batch.ErrGroupFailed) {
				retries++
			}
		}
	}
	var want bool
	switch all := failed == len(ms); val(w.row, dFullBatch) {
	case "unless_retry":
		want = all && retries < failed
	case "always":
		want = all
	}
	if (err != nil) != want {
		t.Errorf("%s: message %s: %d of %d records failed (%d retries): the handler returned %v, want a full-batch error %v", w.where, ms[0].id, failed, len(ms), retries, err, want)
	}
	if _, ok := errors.AsType[*batch.FullBatchFailureError](err); err != nil && !ok {
		t.Errorf("%s: message %s: the handler returned %T, not a *batch.FullBatchFailureError", w.where, ms[0].id, err)
	}
	return acked
}

// TestMatrix runs the redelivery cases in every row of the all-pairs
// matrix, on the real stores.
func TestMatrix(t *testing.T) {
	rows := Pairs(dims, exclusions)
	if m := Missing(dims, exclusions, rows); len(m) > 0 {
		t.Fatalf("the matrix misses %d pairs, e.g. %s", len(m), m[0])
	}
	st := &stores{opened: map[string]driver.Store{}}
	for i, row := range rows {
		t.Logf("row %2d: %s", i+1, describe(row))
		store := st.get(t, row)
		ns := func(c string) string { return fmt.Sprintf("mx%02d%s", i+1, c) }
		where := func(c string) string { return fmt.Sprintf("row %d (%s), %s", i+1, describe(row), c) }
		body := func(k, p string) string { return fmt.Sprintf(`{"k":%q,"p":%q}`, k, p) }
		tenancy := val(row, dTenancy)
		seal := func() driver.Sealer { // each worker's own, as each process has
			if val(row, dSealer) != "off" {
				return st.sealer(t, row)
			}
			return nil
		}

		// Several keys, each delivered twice: each runs once. The second
		// round replays from the cache when it holds them all (1 MiB),
		// from the store without one, and at 1 KiB from the store too for
		// the keys the others evicted.
		{
			c := where("several keys, each twice")
			r := newRuns(t, row)
			w := newWorker(t, c, row, store, ns("twice"), r, seal())
			keys := []string{"a", "b", "c", "d"}
			for round := range 2 {
				for n, k := range keys {
					id := fmt.Sprint("m", n)
					if !w.invoke(t, msg{id: id, body: body(k, "x")}) {
						t.Errorf("%s: round %d: the delivery of key %s failed", c, round+1, k)
					} else if got, want := w.result(id), "r-"+k+"-1"; got != want {
						t.Errorf("%s: round %d: key %s's result is %q, want %q", c, round+1, k, got, want)
					}
				}
				if round == 0 {
					w.takeReports()
				}
			}
			for _, k := range keys {
				if n := r.count(k); n != 1 {
					t.Errorf("%s: the operation ran %d times for key %s, want 1", c, n, k)
				}
			}
			fromCache, fromStore := 0, 0
			for _, rep := range w.takeReports() {
				if rep.Outcome != idempotency.OutcomeReplayed {
					t.Errorf("%s: a redelivery's outcome is %s (%v), want replayed", c, rep.Outcome, rep.Err)
				}
				switch rep.Source {
				case "cache":
					fromCache++
				case "store":
					fromStore++
				}
			}
			switch val(row, dCache) {
			case "off":
				if fromCache > 0 {
					t.Errorf("%s: %d replays from a cache that is off", c, fromCache)
				}
			case "1kib":
				if fromStore == 0 {
					t.Errorf("%s: every replay came from the cache (%d), though 1 KiB holds at most two of the %d records", c, fromCache, len(keys))
				}
			case "1mib":
				if fromCache != len(keys) {
					t.Errorf("%s: %d of %d replays from the cache, want all", c, fromCache, len(keys))
				}
			}
			r.checkSpans(t, c)
		}
		// A re-send with a new message id (and, with payload validation,
		// one with another payload, which must fail).
		{
			c := where("a re-send")
			r := newRuns(t, row)
			w := newWorker(t, c, row, store, ns("resend"), r, seal())
			if !w.invoke(t, msg{id: "m1", body: body("a", "x")}) || !w.invoke(t, msg{id: "m2", body: body("a", "x")}) {
				t.Errorf("%s: a delivery failed", c)
			} else if got := w.result("m2"); got != "r-a-1" {
				t.Errorf("%s: the re-send's result is %q, want the first's, %q", c, got, "r-a-1")
			}
			if val(row, dPayload) == "on" {
				// A mismatch is permanent: failed, or moved to the
				// dead-letter queue, never acknowledged otherwise.
				if acked := w.invoke(t, msg{id: "m3", body: body("a", "y")}); acked != w.wasMoved("m3") {
					t.Errorf("%s: a re-send with another payload: acknowledged %v, moved %v", c, acked, w.wasMoved("m3"))
				}
			}
			if n := r.count("a"); n != 1 {
				t.Errorf("%s: the operation ran %d times, want 1", c, n)
			}
			// A request without the validated field, twice: the payload is
			// null (as Powertools hashes it), never a refused message.
			noP := `{"k":"b"}`
			if !w.invoke(t, msg{id: "m4", body: noP}) || !w.invoke(t, msg{id: "m5", body: noP}) || w.wasMoved("m4") || w.wasMoved("m5") {
				t.Errorf("%s: a request without the payload field failed or was moved", c)
			} else if got := w.result("m5"); got != "r-b-1" {
				t.Errorf("%s: the request without the payload field: the re-send's result is %q, want %q", c, got, "r-b-1")
			}
			if n := r.count("b"); n != 1 {
				t.Errorf("%s: the operation ran %d times for the request without the payload field, want 1", c, n)
			}
			r.checkSpans(t, c)
		}
		// Two tenants with one key: each runs, unless tenancy is off.
		{
			c := where("two tenants with one key")
			r := newRuns(t, row)
			w := newWorker(t, c, row, store, ns("tenants"), r, seal())
			m1, m2 := msg{id: "m1", body: body("a", "x")}, msg{id: "m2", body: body("a", "x")}
			switch tenancy {
			case "invocation", "off":
				m1.tenant, m2.tenant = "t1", "t2"
			case "group":
				m1.group, m2.group = "g1", "g2"
			}
			if !w.invoke(t, m1) || !w.invoke(t, m2) {
				t.Errorf("%s: a delivery failed", c)
			}
			want := 2
			if tenancy == "off" {
				want = 1
			}
			if n := r.count("a"); n != want {
				t.Errorf("%s: the operation ran %d times, want %d", c, n, want)
			}
			if got, want := w.result("m2"), fmt.Sprintf("r-a-%d", want); got != want {
				t.Errorf("%s: the second tenant's result is %q, want %q", c, got, want)
			}
			r.checkSpans(t, c)
		}
		// A duplicate while the first runs (in another worker): it fails,
		// as a retry, and comes again after the first completed to get its
		// result. With KeepVisible every 100 ms, the first's message is
		// kept invisible while it runs.
		func() {
			c := where("a duplicate while the first runs")
			r := newRuns(t, row)
			r.hold, r.started = map[string]chan struct{}{"a": make(chan struct{})}, make(chan string, 1)
			w1 := newWorker(t, c, row, store, ns("dup"), r, seal())
			w2 := newWorker(t, c, row, store, ns("dup"), r, seal())
			done := make(chan bool, 1)
			go func() { done <- w1.invoke(t, msg{id: "m1", body: body("a", "x")}) }()
			select {
			case <-r.started:
			case ok := <-done:
				t.Errorf("%s: the first delivery ended (acknowledged %v) before its operation ran", c, ok)
				return
			}
			if w2.invoke(t, msg{id: "m2", body: body("a", "x")}) {
				t.Errorf("%s: the duplicate succeeded while the first ran", c)
			} else if err := w2.recordErr("m2"); !batch.IsRetry(err) {
				t.Errorf("%s: the duplicate failed with %v, not a retry", c, err)
			}
			if w2.wasMoved("m2") {
				t.Errorf("%s: the duplicate of a key in progress was moved to the dead-letter queue", c)
			}
			every := val(row, dPacing) == "every_100ms"
			if every {
				time.Sleep(300 * time.Millisecond) // two ticks at least
			}
			r.mu.Lock()
			close(r.hold["a"])
			r.hold["a"] = nil
			r.mu.Unlock()
			if !<-done {
				t.Errorf("%s: the first delivery failed", c)
			}
			if every && w1.changer.count("m1") == 0 {
				t.Errorf("%s: KeepVisible.Every 100 ms made no change of the first's message in 300 ms", c)
			}
			if !w2.invoke(t, msg{id: "m2", body: body("a", "x")}) {
				t.Errorf("%s: the duplicate failed after the first completed", c)
			} else if got := w2.result("m2"); got != "r-a-1" {
				t.Errorf("%s: the duplicate's result is %q, want the first's, %q", c, got, "r-a-1")
			}
			if n := r.count("a"); n != 1 {
				t.Errorf("%s: the operation ran %d times, want 1", c, n)
			}
			r.checkSpans(t, c)
		}()
		// A batch holding a key twice (a re-send), and another key: each
		// key runs once. In event order (Concurrency 1, or one message
		// group of a FIFO queue, with tenancy=group) the re-send replays in
		// the same invocation, after the first's 100 ms run (never sharing
		// it); otherwise it may share the run, or fail as a retry and then
		// come again.
		{
			c := where("a batch holding a key twice")
			r := newRuns(t, row)
			r.delay = map[string]time.Duration{"a": 100 * time.Millisecond}
			w := newWorker(t, c, row, store, ns("batch"), r, seal())
			ms := []msg{{id: "m1", body: body("a", "x")}, {id: "m2", body: body("a", "x")}, {id: "m3", body: body("b", "x")}}
			if tenancy == "group" {
				ms[0].group, ms[1].group, ms[2].group = "g1", "g1", "g2"
				for i := range ms {
					ms[i].fifo = true
				}
			}
			ordered := val(row, dConcurrency) == "1" || tenancy == "group"
			for attempt := 1; len(ms) > 0; attempt++ {
				if attempt > 3 {
					t.Errorf("%s: %d messages still failing after 3 deliveries", c, len(ms))
					break
				}
				acked := w.invokeBatch(t, ms...)
				for _, rep := range w.takeReports() {
					if ordered && (rep.Source == "shared" || rep.Outcome != idempotency.OutcomeClaimed && rep.Outcome != idempotency.OutcomeReplayed) {
						t.Errorf("%s: delivery %d in event order: a record's outcome is %s (source %q, %v), want claimed, or replayed after the run", c, attempt, rep.Outcome, rep.Source, rep.Err)
					}
				}
				var again []msg
				for _, m := range ms {
					if w.wasMoved(m.id) {
						t.Errorf("%s: message %s was moved to the dead-letter queue", c, m.id)
					}
					if acked[m.id] {
						continue
					}
					if err := w.recordErr(m.id); !batch.IsRetry(err) || ordered {
						t.Errorf("%s: delivery %d: message %s failed with %v; want it acknowledged, or a retry out of event order", c, attempt, m.id, err)
					}
					again = append(again, m)
				}
				ms = again
			}
			if a, b := r.count("a"), r.count("b"); a != 1 || b != 1 {
				t.Errorf("%s: the operation ran %d times for key a and %d for key b, want once each", c, a, b)
			}
			for id, want := range map[string]string{"m1": "r-a-1", "m2": "r-a-1", "m3": "r-b-1"} {
				if got := w.result(id); got != want {
					t.Errorf("%s: message %s's result is %q, want %q", c, id, got, want)
				}
			}
			r.checkSpans(t, c)
		}
		// With a Sealer: the result is stored sealed, and a worker
		// without the Sealer (a process of the previous version) fails
		// the duplicate with ErrUnsealed: it neither replays the sealed
		// text nor runs the operation.
		if val(row, dSealer) != "off" {
			c := where("a reader without the Sealer")
			r := newRuns(t, row)
			w := newWorker(t, c, row, store, ns("unsealed"), r, seal())
			m := msg{id: "m1", body: body("a", "x"), tenant: "t1", group: "g1"}
			if tenancy != "invocation" {
				m.tenant = ""
			}
			if tenancy != "group" {
				m.group = ""
			}
			if !w.invoke(t, m) {
				t.Errorf("%s: the first delivery failed", c)
			}
			old := newWorker(t, c, row, store, ns("unsealed"), r, nil)
			if old.invoke(t, m) {
				t.Errorf("%s: a worker without the Sealer acknowledged a sealed result", c)
			}
			reps := old.takeReports()
			if len(reps) != 1 || !errors.Is(reps[0].Err, driver.ErrUnsealed) || reps[0].Ran {
				t.Errorf("%s: the worker without the Sealer reported %+v, want ErrUnsealed and no run", c, reps)
			}
			if n := r.count("a"); n != 1 {
				t.Errorf("%s: the operation ran %d times, want 1", c, n)
			}
			if !w.invoke(t, m) {
				t.Errorf("%s: the duplicate failed in a worker with the Sealer", c)
			} else if got := w.result("m1"); got != "r-a-1" {
				t.Errorf("%s: the duplicate's result in a worker with the Sealer is %q, want %q", c, got, "r-a-1")
			}
			r.checkSpans(t, c)
		}
		// A claim whose lease lapsed with its outcome unknown (its worker
		// died), under the id its format's recipe gives (Powertools' own,
		// with a Powertools format): taken over and run, or in strict mode
		// (the wrapper's option or the guard's Config.Strict) quarantined,
		// never run.
		{
			c := where("a claim whose worker died")
			r := newRuns(t, row)
			w := newWorker(t, c, row, store, ns("lapsed"), r, seal())
			id := recordID(row, ns("lapsed"), "a")
			if got, err := w.guard.ID(idempotency.Selection{Selector: `body ["k"]`, Value: mustJSON("a")}); got != id || err != nil {
				t.Errorf("%s: the guard's record id is %q (%v), the format's recipe gives %q", c, got, err, id)
			}
			now := time.Now()
			dead := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(-time.Minute), Owner: "dead-worker"}
			if _, loaded, err := store.Acquire(context.Background(), dead, now.Add(-2*time.Minute), driver.Takeover); err != nil || loaded {
				t.Fatalf("%s: seed the dead worker's claim: loaded %v, %v", c, loaded, err)
			}
			strict := val(row, dStrict) != "off"
			for _, id := range []string{"m1", "m2"} {
				acked := w.invoke(t, msg{id: id, body: body("a", "x")})
				reps := w.takeReports()
				switch {
				case len(reps) != 1:
					t.Errorf("%s: message %s: %d reports, want 1", c, id, len(reps))
				case strict && (reps[0].Outcome != idempotency.OutcomeQuarantined || !errors.Is(reps[0].Err, idempotency.ErrQuarantined)):
					t.Errorf("%s: message %s: outcome %s (%v), want quarantined", c, id, reps[0].Outcome, reps[0].Err)
				case strict && acked != w.wasMoved(id):
					t.Errorf("%s: message %s of a quarantined key: acknowledged %v, moved %v", c, id, acked, w.wasMoved(id))
				case !strict && !acked:
					t.Errorf("%s: message %s failed (%s, %v); want the lapsed claim taken over, or its result replayed", c, id, reps[0].Outcome, reps[0].Err)
				case !strict && id == "m1" && reps[0].Outcome != idempotency.OutcomeTakenOver:
					t.Errorf("%s: message %s: outcome %s, want taken_over", c, id, reps[0].Outcome)
				}
			}
			want := 1
			if strict {
				want = 0
			}
			if n := r.count("a"); n != want {
				t.Errorf("%s: the operation ran %d times, want %d", c, n, want)
			}
			r.checkSpans(t, c)
		}
		// A poison message: no key, or not JSON. It fails, and nothing runs.
		{
			c := where("a poison message")
			r := newRuns(t, row)
			w := newWorker(t, c, row, store, ns("poison"), r, seal())
			for i, b := range []string{`{"p":"x"}`, `not json`} {
				id := fmt.Sprint("m", i)
				acked := w.invoke(t, msg{id: id, body: b})
				switch moved := w.wasMoved(id); {
				case val(row, dDeadLetter) == "on" && (!moved || !acked):
					t.Errorf("%s: the poison message %q: moved %v, acknowledged %v; want moved to the dead-letter queue", c, b, moved, acked)
				case val(row, dDeadLetter) == "off" && acked:
					t.Errorf("%s: the poison message %q succeeded", c, b)
				}
			}
			if n := r.count(""); n != 0 {
				t.Errorf("%s: the operation ran %d times for a poison message", c, n)
			}
			r.checkSpans(t, c)
		}
	}
	t.Logf("%d rows, every pair of %d dimensions' values covered but %d excluded, on memstore, moto's DynamoDB (with and without a sort key), redis-server and PostgreSQL", len(rows), len(dims), len(exclusions))
}
