package matrix

import (
	"context"
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
	dBatch
	dSealer
	dDeadLetter
)

var dims = []Dim{
	{"wrapper", []string{"wrap", "json", "do"}},
	{"tenancy", []string{"off", "invocation", "group"}},
	// Config.KeepAliveEvery: -1, zero (a third of the lease), 400 ms.
	{"keepalive", []string{"off", "default", "every_400ms"}},
	{"strict", []string{"off", "on"}},
	{"cache", []string{"off", "on"}},
	{"payload", []string{"off", "on"}},
	{"store", []string{"memstore", "dynamodb", "redis", "postgres"}},
	// batch.Options: the zero value; AlwaysFullBatchError (Powertools'
	// full-batch error); pacing and KeepVisible with the queue's
	// QueueTimeout (18 s), or one as short as Lambda accepts (the
	// function's 3 s).
	{"batch", []string{"default", "full_batch_error", "keep_visible", "keep_visible_3s"}},
	// Config.Sealer: none, or package kmsseal on moto's KMS (one key for
	// the matrix).
	{"sealer", []string{"off", "on"}},
	// batch.Options.DeadLetter: none, or a Mover that takes every move.
	{"deadletter", []string{"off", "on"}},
}

func describe(r Row) string {
	var parts []string
	for i, v := range r {
		parts = append(parts, dims[i].Name+"="+dims[i].Values[v])
	}
	return strings.Join(parts, " ")
}

// TestPairs holds the generator to covering every pair.
func TestPairs(t *testing.T) {
	rows := Pairs(dims)
	if m := Missing(dims, rows); len(m) > 0 {
		t.Fatalf("%d pairs not covered, e.g. %s", len(m), m[0])
	}
	small := []Dim{{"a", []string{"1", "2"}}, {"b", []string{"1", "2"}}, {"c", []string{"1", "2"}}}
	if got := Pairs(small); len(got) > 6 || len(Missing(small, got)) > 0 {
		t.Errorf("three binary dimensions: %d rows, missing %v", len(got), Missing(small, got))
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
func (s *stores) sealer(t *testing.T) driver.Sealer {
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
	sl, err := kmsseal.New(s.kms, s.keyID)
	if err != nil {
		t.Fatal(err)
	}
	return sl
}

func (s *stores) get(t *testing.T, name string) driver.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.opened[name]; ok {
		return st
	}
	var st driver.Store
	var err error
	ctx := context.Background()
	switch name {
	case "memstore":
		st = memstore.New()
	case "dynamodb":
		db := moto.DynamoDB(t)
		st, err = dynamostore.New(db, motoserver.NewTable(t, db))
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: redisServer.Addr(t), ContextTimeoutEnabled: true})
		st, err = redisstore.New(ctx, rdb)
	case "postgres":
		var pool *pgxpool.Pool
		if pool, err = pgxpool.New(ctx, pgServer.NewDatabase(t)); err == nil {
			var ps *pgstore.Store
			if ps, err = pgstore.New(pool); err == nil {
				err = ps.CreateSchema(ctx)
				st = ps
			}
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s.opened[name] = st
	return st
}

type req struct {
	K string `json:"k"`
	P string `json:"p"`
}

// worker is one process of a row's function: its guard and handler, and
// what sees its guard's reports (Config.OnOutcome), if anything.
type worker struct {
	handler   func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	onOutcome func(context.Context, idempotency.Report)
	mover     *mover // with deadletter=on
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

// runs counts the operation's runs per key, and can hold a key's run.
type runs struct {
	mu      sync.Mutex
	n       map[string]int
	hold    map[string]chan struct{}
	started chan string
}

func (r *runs) op(ctx context.Context, key string) (string, error) {
	r.mu.Lock()
	r.n[key]++
	n, hold := r.n[key], r.hold[key]
	r.mu.Unlock()
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

// newWorker builds a worker of row on store under namespace ns, with
// zero-value options but the row's and sealer (nil: none).
func newWorker(t *testing.T, row Row, store driver.Store, ns string, r *runs, sealer driver.Sealer) *worker {
	wk := &worker{}
	cfg := idempotency.Config{Store: store, Namespace: ns, Sealer: sealer, OnOutcome: func(ctx context.Context, rep idempotency.Report) {
		if wk.onOutcome != nil {
			wk.onOutcome(ctx, rep)
		}
	}}
	switch dims[dTenancy].Values[row[dTenancy]] {
	case "off":
		cfg.Tenancy = idempotency.TenancyOff
	case "group":
		cfg.Tenancy = idempotency.TenancyMessageGroup
	}
	switch row[dKeepAlive] {
	case 0:
		cfg.KeepAliveEvery = -1
	case 2:
		cfg.KeepAliveEvery = 400 * time.Millisecond
	}
	if row[dCache] == 1 {
		cfg.CacheBytes = 1 << 20
	}
	g, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var opts []idempotency.Option
	payload := row[dPayload] == 1
	wrapper := dims[dWrapper].Values[row[dWrapper]]
	if payload && wrapper != "do" {
		opts = append(opts, idempotency.WithPayload(idempotency.BodyField("p")))
	}
	if row[dStrict] == 1 {
		opts = append(opts, idempotency.Strict())
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
	var bo batch.Options
	switch dims[dBatch].Values[row[dBatch]] {
	case "full_batch_error":
		bo.AlwaysFullBatchError = true
	case "keep_visible":
		bo.Pacing.Changer = queueChanger{}
		bo.KeepVisible.QueueTimeout = queueTimeout
	case "keep_visible_3s":
		bo.Pacing.Changer = queueChanger{}
		bo.KeepVisible.QueueTimeout = 3 * time.Second
	}
	if row[dDeadLetter] == 1 {
		wk.mover = &mover{moved: map[string]bool{}}
		bo.DeadLetter.Mover = wk.mover
	}
	wk.handler = batch.SQS(h, bo)
	return wk
}

// queueTimeout is the matrix's queue's visibility timeout: six times
// Lambda's default 3 s, the construct's minimum.
const queueTimeout = 18 * time.Second

// queueChanger is a batch.VisibilityChanger that applies nothing: the
// matrix holds the cases to their outcome with KeepVisible and pacing on
// (the held duplicate's invocation makes changes), not the timeouts
// (package batch's tests and the simulation do).
type queueChanger struct{}

func (queueChanger) ChangeVisibility(context.Context, []batch.VisibilityChange) []error { return nil }

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

type msg struct {
	id, body, group, tenant string
}

// invoke runs one invocation of one message at Lambda's default 3 s
// deadline and reports whether its record succeeded (or was moved to the
// dead-letter queue). The handler must return before the deadline: a
// response after it is lost.
func (w *worker) invoke(t *testing.T, m msg) bool {
	t.Helper()
	start := time.Now()
	defer func() {
		if took := time.Since(start); took >= 3*time.Second {
			t.Errorf("message %s: the handler returned %v after the invocation began, past Lambda's 3 s deadline", m.id, took)
		}
	}()
	ctx := context.Background()
	if m.tenant != "" {
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-" + m.id, TenantID: m.tenant})
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	sm := events.SQSMessage{MessageId: m.id, ReceiptHandle: "rh-" + m.id, Body: m.body,
		EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:matrix", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	if m.group != "" {
		sm.Attributes["MessageGroupId"] = m.group
	}
	resp, _ := w.handler(ctx, events.SQSEvent{Records: []events.SQSMessage{sm}})
	return len(resp.BatchItemFailures) == 0
}

// TestMatrix runs the redelivery cases in every row of the all-pairs
// matrix, on the real stores.
func TestMatrix(t *testing.T) {
	rows := Pairs(dims)
	if m := Missing(dims, rows); len(m) > 0 {
		t.Fatalf("the matrix misses %d pairs, e.g. %s", len(m), m[0])
	}
	st := &stores{opened: map[string]driver.Store{}}
	for i, row := range rows {
		t.Logf("row %2d: %s", i+1, describe(row))
		store := st.get(t, dims[dStore].Values[row[dStore]])
		ns := func(c string) string { return fmt.Sprintf("mx%02d%s", i+1, c) }
		where := func(c string) string { return fmt.Sprintf("row %d (%s), %s", i+1, describe(row), c) }
		body := func(k, p string) string { return fmt.Sprintf(`{"k":%q,"p":%q}`, k, p) }
		tenancy := dims[dTenancy].Values[row[dTenancy]]
		seal := func() driver.Sealer { // each worker's own, as each process has
			if row[dSealer] == 1 {
				return st.sealer(t)
			}
			return nil
		}

		// The same message twice.
		{
			r := &runs{n: map[string]int{}}
			w := newWorker(t, row, store, ns("twice"), r, seal())
			m := msg{id: "m1", body: body("a", "x")}
			first, second := w.invoke(t, m), w.invoke(t, m)
			if !first || !second {
				t.Errorf("%s: a delivery failed", where("the same message twice"))
			}
			if n := r.count("a"); n != 1 {
				t.Errorf("%s: the operation ran %d times, want 1", where("the same message twice"), n)
			}
		}
		// A re-send with a new message id (and, with payload validation,
		// one with another payload, which must fail).
		{
			r := &runs{n: map[string]int{}}
			w := newWorker(t, row, store, ns("resend"), r, seal())
			if !w.invoke(t, msg{id: "m1", body: body("a", "x")}) || !w.invoke(t, msg{id: "m2", body: body("a", "x")}) {
				t.Errorf("%s: a delivery failed", where("a re-send"))
			}
			if row[dPayload] == 1 {
				// A mismatch is permanent: failed, or moved to the
				// dead-letter queue, never acknowledged otherwise.
				if acked := w.invoke(t, msg{id: "m3", body: body("a", "y")}); acked != w.wasMoved("m3") {
					t.Errorf("%s: a re-send with another payload: acknowledged %v, moved %v", where("a re-send"), acked, w.wasMoved("m3"))
				}
			}
			if n := r.count("a"); n != 1 {
				t.Errorf("%s: the operation ran %d times, want 1", where("a re-send"), n)
			}
			// A request without the validated field, twice: the payload is
			// null (as Powertools hashes it), never a refused message.
			noP := `{"k":"b"}`
			if !w.invoke(t, msg{id: "m4", body: noP}) || !w.invoke(t, msg{id: "m5", body: noP}) || w.wasMoved("m4") || w.wasMoved("m5") {
				t.Errorf("%s: a request without the payload field failed or was moved", where("a re-send"))
			}
			if n := r.count("b"); n != 1 {
				t.Errorf("%s: the operation ran %d times for the request without the payload field, want 1", where("a re-send"), n)
			}
		}
		// Two tenants with one key: each runs, unless tenancy is off.
		{
			r := &runs{n: map[string]int{}}
			w := newWorker(t, row, store, ns("tenants"), r, seal())
			m1, m2 := msg{id: "m1", body: body("a", "x")}, msg{id: "m2", body: body("a", "x")}
			switch tenancy {
			case "invocation", "off":
				m1.tenant, m2.tenant = "t1", "t2"
			case "group":
				m1.group, m2.group = "g1", "g2"
			}
			if !w.invoke(t, m1) || !w.invoke(t, m2) {
				t.Errorf("%s: a delivery failed", where("two tenants"))
			}
			want := 2
			if tenancy == "off" {
				want = 1
			}
			if n := r.count("a"); n != want {
				t.Errorf("%s: the operation ran %d times, want %d", where("two tenants with one key"), n, want)
			}
		}
		// A duplicate while the first runs (in another worker): it fails,
		// and comes again after the first completed to get its result.
		{
			r := &runs{n: map[string]int{}, hold: map[string]chan struct{}{"a": make(chan struct{})}, started: make(chan string, 1)}
			w1 := newWorker(t, row, store, ns("dup"), r, seal())
			w2 := newWorker(t, row, store, ns("dup"), r, seal())
			done := make(chan bool, 1)
			go func() { done <- w1.invoke(t, msg{id: "m1", body: body("a", "x")}) }()
			<-r.started
			if w2.invoke(t, msg{id: "m2", body: body("a", "x")}) {
				t.Errorf("%s: the duplicate succeeded while the first ran", where("a duplicate while the first runs"))
			}
			if w2.wasMoved("m2") {
				t.Errorf("%s: the duplicate of a key in progress was moved to the dead-letter queue", where("a duplicate while the first runs"))
			}
			r.mu.Lock()
			close(r.hold["a"])
			r.hold["a"] = nil
			r.mu.Unlock()
			if !<-done {
				t.Errorf("%s: the first delivery failed", where("a duplicate while the first runs"))
			}
			if !w2.invoke(t, msg{id: "m2", body: body("a", "x")}) {
				t.Errorf("%s: the duplicate failed after the first completed", where("a duplicate while the first runs"))
			}
			if n := r.count("a"); n != 1 {
				t.Errorf("%s: the operation ran %d times, want 1", where("a duplicate while the first runs"), n)
			}
		}
		// With a Sealer: the result is stored sealed, and a worker
		// without the Sealer (a process of the previous version) fails
		// the duplicate with ErrUnsealed: it neither replays the sealed
		// text nor runs the operation.
		if row[dSealer] == 1 {
			r := &runs{n: map[string]int{}}
			w := newWorker(t, row, store, ns("unsealed"), r, seal())
			m := msg{id: "m1", body: body("a", "x"), tenant: "t1", group: "g1"}
			if tenancy != "invocation" {
				m.tenant = ""
			}
			if tenancy != "group" {
				m.group = ""
			}
			if !w.invoke(t, m) {
				t.Errorf("%s: the first delivery failed", where("a reader without the Sealer"))
			}
			old := newWorker(t, row, store, ns("unsealed"), r, nil)
			var rep idempotency.Report
			old.onOutcome = func(_ context.Context, got idempotency.Report) { rep = got }
			if old.invoke(t, m) {
				t.Errorf("%s: a worker without the Sealer acknowledged a sealed result", where("a reader without the Sealer"))
			}
			if !errors.Is(rep.Err, driver.ErrUnsealed) || rep.Ran {
				t.Errorf("%s: the worker without the Sealer reported %s (ran %v, %v), want ErrUnsealed and no run", where("a reader without the Sealer"), rep.Outcome, rep.Ran, rep.Err)
			}
			if n := r.count("a"); n != 1 {
				t.Errorf("%s: the operation ran %d times, want 1", where("a reader without the Sealer"), n)
			}
			if !w.invoke(t, m) {
				t.Errorf("%s: the duplicate failed in a worker with the Sealer", where("a reader without the Sealer"))
			}
		}
		// A poison message: no key, or not JSON. It fails, and nothing runs.
		{
			r := &runs{n: map[string]int{}}
			w := newWorker(t, row, store, ns("poison"), r, seal())
			for i, b := range []string{`{"p":"x"}`, `not json`} {
				id := fmt.Sprint("m", i)
				acked := w.invoke(t, msg{id: id, body: b})
				switch moved := w.wasMoved(id); {
				case row[dDeadLetter] == 1 && (!moved || !acked):
					t.Errorf("%s: the poison message %q: moved %v, acknowledged %v; want moved to the dead-letter queue", where("a poison message"), b, moved, acked)
				case row[dDeadLetter] == 0 && acked:
					t.Errorf("%s: the poison message %q succeeded", where("a poison message"), b)
				}
			}
			if n := r.count(""); n != 0 {
				t.Errorf("%s: the operation ran %d times for a poison message", where("a poison message"), n)
			}
		}
	}
	t.Logf("%d rows, every pair of %d dimensions' values covered, on memstore, moto's DynamoDB, redis-server and PostgreSQL", len(rows), len(dims))
}
