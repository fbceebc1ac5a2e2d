package ptinterop_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	ptinterop "github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// The configuration both sides share: the same key prefix and the same
// JMESPath expressions, as a Powertools user writes them.
const (
	keyPrefix      = "pt-interop"
	keyJMESPath    = "powertools_json(body).idempotency_key"
	validationPath = "powertools_json(body).payload"
	driverDir      = "../../internal/testenv/powertools/testdata"
)

// table is one moto table with both runtimes configured on it.
type table struct {
	endpoint, name string
	store          *dynamostore.Store
	db             *dynamodb.Client
	layout         layout // the key settings of both sides
}

// newTable is a table with Powertools' default key: partition key "id".
func newTable(t *testing.T) table {
	t.Helper()
	return newLayoutTable(t, layout{})
}

func newLayoutTable(t *testing.T, l layout) table {
	t.Helper()
	if err := ptinterop.Available(driverDir); err != nil {
		testproc.Unavailable(t, "Powertools TS", err, "run make test, which installs the pinned packages")
	}
	db := moto.DynamoDB(t)
	name := l.create(t, db)
	store, err := dynamostore.New(db, name, append(l.options(), dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))...)
	if err != nil {
		t.Fatal(err)
	}
	return table{endpoint: moto.Endpoint(t), name: name, store: store, db: db, layout: l}
}

// guardOptions adjust the sqsonce side's configuration.
type guardOption func(*guardConfig)

// guardConfig is the sqsonce side's configuration: the guard's, and the
// payload validated beside the key (none when nil).
type guardConfig struct {
	idempotency.Config
	payload *idempotency.Selector
}

func withValidation(c *guardConfig) {
	p := jmespath.MustCompile(validationPath).Selector()
	c.payload = &p
}

func withClock(offset time.Duration) guardOption {
	return func(c *guardConfig) {
		c.Now = func() time.Time { return time.Now().Add(offset) }
		c.ExpiresAfter, c.Lease = time.Hour, time.Minute
	}
}

// sqsonce is the Go side: the guard on the shared table with Powertools
// TypeScript's key format, the record function behind the batch handler.
type sqsonce struct {
	handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	mu      sync.Mutex
	ran     []string
	results map[string]result
	block   chan struct{}                 // when set, the operation waits for it to close
	started chan struct{}                 // closed when the operation starts, with block set
	events  map[string]idempotency.Report // the guard's outcome, by message id
}

type result struct {
	val any
	err error
}

func newSqsonce(t *testing.T, tb table, opts ...guardOption) *sqsonce {
	t.Helper()
	cfg := guardConfig{Config: idempotency.Config{
		Store:     tb.store,
		Namespace: keyPrefix,
		Format:    idempotency.FormatPowertoolsTypeScript,
		Logger:    slog.New(slog.DiscardHandler),
	}}
	s := &sqsonce{results: map[string]result{}, events: map[string]idempotency.Report{}}
	cfg.OnOutcome = func(_ context.Context, ev idempotency.Report) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.events[ev.InputID] = ev
	}
	for _, o := range opts {
		o(&cfg)
	}
	g, err := idempotency.New(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	var wrapOpts []idempotency.Option
	if cfg.payload != nil {
		wrapOpts = append(wrapOpts, idempotency.WithPayload(*cfg.payload))
	}
	op := idempotency.Wrap(g, jmespath.MustCompile(keyJMESPath).Selector(), func(ctx context.Context, m events.SQSMessage) (any, error) {
		s.mu.Lock()
		s.ran = append(s.ran, m.MessageId)
		block, started := s.block, s.started
		s.mu.Unlock()
		if block != nil {
			close(started)
			<-block
		}
		var b body
		if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(b.Result, &v); err != nil {
			return nil, err
		}
		return v, nil
	}, wrapOpts...)
	s.handler = batch.SQS(func(ctx context.Context, m events.SQSMessage) (any, error) {
		v, err := op(ctx, m)
		s.mu.Lock()
		s.results[m.MessageId] = result{v, err}
		s.mu.Unlock()
		return v, err
	}, batch.Options{Logger: slog.New(slog.DiscardHandler), NoFullBatchError: true}) // as the driver's throwOnFullBatchFailure: false
	return s
}

func (s *sqsonce) run(t *testing.T, msgs ...events.SQSMessage) events.SQSEventResponse {
	t.Helper()
	resp, err := s.handler(context.Background(), events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatalf("batch handler: %v", err)
	}
	return resp
}

func (s *sqsonce) didRun(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.ran, id)
}

func (s *sqsonce) result(id string) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.results[id]
}

func (s *sqsonce) outcome(id string) idempotency.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events[id]
}

// body is the message both sides read: the key, the payload that
// validation covers, and the result the handler returns.
type body struct {
	Key     string          `json:"idempotency_key,omitempty"`
	Payload any             `json:"payload,omitempty"`
	Result  json.RawMessage `json:"result"`
}

func message(key string, payload any, result string) events.SQSMessage {
	b, err := json.Marshal(body{Key: key, Payload: payload, Result: json.RawMessage(result)})
	if err != nil {
		panic(err)
	}
	return events.SQSMessage{
		MessageId:      "m-" + rand.Text()[:12],
		Body:           string(b),
		EventSource:    "aws:sqs",
		EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:pt-interop",
		AWSRegion:      "us-east-1",
		Attributes:     map[string]string{"ApproximateReceiveCount": "1"},
	}
}

// powertools runs msgs as one event through Powertools TypeScript.
func powertools(t *testing.T, tb table, mod func(*ptinterop.Request), msgs ...events.SQSMessage) ptinterop.Report {
	t.Helper()
	req := ptinterop.Request{
		Endpoint: tb.endpoint, Table: tb.name, KeyPrefix: keyPrefix, EventKeyJMESPath: keyJMESPath,
		RemainingMs: 60_000, Events: []events.SQSEvent{{Records: msgs}},
	}
	tb.layout.request(&req)
	if mod != nil {
		mod(&req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := ptinterop.Run(ctx, driverDir, req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func failed(resp []events.SQSBatchItemFailure) []string {
	ids := []string{}
	for _, f := range resp {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// sameJSON reports whether the value v is the JSON text want, type for
// type: the string "123" is not the number 123.
func sameJSON(t *testing.T, v any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(v, w)
}

var completedResults = []struct{ name, json string }{
	{"object", `{"document_id":"d-1","summary":"Zoë's summary","tokens":[1,2],"score":0.75,"final":true,"model":null}`},
	{"string", `"123"`},
	{"number", `1717`},
	{"string that looks like JSON", `"{\"document_id\":\"d-1\"}"`},
	{"null", `null`},
	// The syntax of the sealed form (and of its withheld form) that earlier
	// builds of sqsonce wrote as JSON text: plain results here, replayed.
	{"string like a legacy seal", `"sqsonce:sealed:1:QUJD"`},
	{"string like a legacy withheld seal", `"sqsonce:sealed:1:"`},
}

// TestCompleted: keys completed by one runtime are replayed by the other
// without running, with each result as the writer's handler returned it.
// Each direction runs every result in one batch.
func TestCompleted(t *testing.T) { testCompleted(t, newTable(t)) }

func testCompleted(t *testing.T, tb table) {
	t.Run("powertools writes, sqsonce replays", func(t *testing.T) {
		var first, again []events.SQSMessage
		for _, tc := range completedResults {
			key := "k-" + rand.Text()
			first = append(first, message(key, nil, tc.json))
			// The producer's re-send: a new message id, the same key, another result.
			again = append(again, message(key, nil, `"not this"`))
		}
		rep := powertools(t, tb, nil, first...)
		if len(rep.Ran) != len(first) || len(rep.Events[0].BatchItemFailures) != 0 {
			t.Fatalf("powertools: ran %v, failures %v", rep.Ran, rep.Events[0].BatchItemFailures)
		}
		s := newSqsonce(t, tb)
		if resp := s.run(t, again...); len(resp.BatchItemFailures) != 0 {
			t.Errorf("sqsonce failures %v", resp.BatchItemFailures)
		}
		for i, tc := range completedResults {
			id := again[i].MessageId
			if s.didRun(id) {
				t.Errorf("%s: sqsonce ran the operation for a key Powertools completed", tc.name)
			}
			if r := s.result(id); r.err != nil || !sameJSON(t, r.val, tc.json) {
				t.Errorf("%s: sqsonce replayed %#v (%v), want %s", tc.name, r.val, r.err, tc.json)
			}
		}
	})
	t.Run("sqsonce writes, powertools replays", func(t *testing.T) {
		var first, again []events.SQSMessage
		for _, tc := range completedResults {
			key := "k-" + rand.Text()
			first = append(first, message(key, nil, tc.json))
			again = append(again, message(key, nil, `"not this"`))
		}
		s := newSqsonce(t, tb)
		if resp := s.run(t, first...); len(resp.BatchItemFailures) != 0 || len(s.ran) != len(first) {
			t.Fatalf("sqsonce: failures %v, ran %v", resp.BatchItemFailures, s.ran)
		}
		rep := powertools(t, tb, nil, again...)
		if len(rep.Ran) != 0 || len(rep.Events[0].BatchItemFailures) != 0 {
			t.Errorf("powertools: ran %v, failures %v", rep.Ran, rep.Events[0].BatchItemFailures)
		}
		for i, tc := range completedResults {
			rec := rep.Events[0].Records[i]
			var got any
			if err := json.Unmarshal(rec.Value, &got); rec.Status != "success" || err != nil || !sameJSON(t, got, tc.json) {
				t.Errorf("%s: powertools replayed %+v, want %s", tc.name, rec, tc.json)
			}
		}
	})
}

// TestInProgress: a live lease held by one runtime refuses the other: a
// batch item failure in sqsonce, IdempotencyAlreadyInProgressError in
// Powertools; neither runs.
func TestInProgress(t *testing.T) { testInProgress(t, newTable(t)) }

func testInProgress(t *testing.T, tb table) {
	t.Run("powertools holds, sqsonce reports a batch item failure", func(t *testing.T) {
		key := "k-" + rand.Text()
		first := message(key, nil, `"first"`)
		// The handler exits mid-call: its record stays INPROGRESS, with a
		// lease of the minute the Lambda context reported.
		rep := powertools(t, tb, func(r *ptinterop.Request) { r.Crash = true }, first)
		if rep.Crashed != first.MessageId {
			t.Fatalf("the Powertools handler did not run: %+v", rep)
		}
		again := message(key, nil, `"second"`)
		s := newSqsonce(t, tb)
		resp := s.run(t, again)
		if !slices.Equal(failed(resp.BatchItemFailures), []string{again.MessageId}) {
			t.Errorf("batch item failures %v, want [%s]", resp.BatchItemFailures, again.MessageId)
		}
		if err := s.result(again.MessageId).err; !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("sqsonce error %v, want ErrInProgress", err)
		}
		if s.didRun(again.MessageId) {
			t.Error("sqsonce ran the operation while Powertools held the lease")
		}
	})
	t.Run("sqsonce holds, powertools throws IdempotencyAlreadyInProgressError", func(t *testing.T) {
		key := "k-" + rand.Text()
		first := message(key, nil, `"first"`)
		s := newSqsonce(t, tb)
		s.block, s.started = make(chan struct{}), make(chan struct{})
		done := make(chan events.SQSEventResponse)
		go func() { done <- s.run(t, first) }()
		<-s.started // the claim is written: the operation runs only after it
		again := message(key, nil, `"second"`)
		rep := powertools(t, tb, nil, again)
		close(s.block)
		if resp := <-done; len(resp.BatchItemFailures) != 0 {
			t.Errorf("sqsonce's own call failed: %v", s.result(first.MessageId).err)
		}
		rec := rep.Events[0].Records[0]
		if rec.Status != "fail" || rec.Error != "IdempotencyAlreadyInProgressError" {
			t.Errorf("powertools: %+v, want IdempotencyAlreadyInProgressError", rec)
		}
		if !slices.Equal(failed(rep.Events[0].BatchItemFailures), []string{again.MessageId}) || len(rep.Ran) != 0 {
			t.Errorf("powertools: failures %v, ran %v", rep.Events[0].BatchItemFailures, rep.Ran)
		}
	})
}

// TestReclaim: a record whose lease has passed (its worker died) or whose
// expiry has passed is taken over and run by the other runtime.
func TestReclaim(t *testing.T) { testReclaim(t, newTable(t)) }

func testReclaim(t *testing.T, tb table) {
	t.Run("powertools lease passed, sqsonce takes over", func(t *testing.T) {
		key := "k-" + rand.Text()
		first := message(key, nil, `"first"`)
		rep := powertools(t, tb, func(r *ptinterop.Request) { r.Crash, r.RemainingMs = true, 1 }, first)
		if rep.Crashed != first.MessageId {
			t.Fatalf("the Powertools handler did not run: %+v", rep)
		}
		again := message(key, nil, `"second"`)
		s := newSqsonce(t, tb, withClock(time.Second)) // one second on: the 1 ms lease has passed
		if resp := s.run(t, again); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("sqsonce: %v", s.result(again.MessageId).err)
		}
		if !s.didRun(again.MessageId) || !sameJSON(t, s.result(again.MessageId).val, `"second"`) {
			t.Errorf("sqsonce did not take over: ran %v, result %#v", s.ran, s.result(again.MessageId).val)
		}
	})
	t.Run("powertools record expired, sqsonce takes over", func(t *testing.T) {
		key := "k-" + rand.Text()
		first := message(key, nil, `"first"`)
		rep := powertools(t, tb, func(r *ptinterop.Request) { r.ExpiresAfterSeconds = 1 }, first)
		if len(rep.Ran) != 1 {
			t.Fatalf("powertools: %+v", rep)
		}
		again := message(key, nil, `"second"`)
		s := newSqsonce(t, tb, withClock(time.Minute)) // a minute on: the 1 s record has expired
		if resp := s.run(t, again); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("sqsonce: %v", s.result(again.MessageId).err)
		}
		if !s.didRun(again.MessageId) || !sameJSON(t, s.result(again.MessageId).val, `"second"`) {
			t.Errorf("sqsonce did not take over: ran %v, result %#v", s.ran, s.result(again.MessageId).val)
		}
	})
	t.Run("sqsonce lease passed, powertools takes over, sqsonce's late completion is fenced", func(t *testing.T) {
		key := "k-" + rand.Text()
		first := message(key, nil, `"first"`)
		// Two hours ago, with a one-minute lease: the claim's lease has
		// passed while its operation still runs.
		s := newSqsonce(t, tb, withClock(-2*time.Hour))
		s.block, s.started = make(chan struct{}), make(chan struct{})
		done := make(chan events.SQSEventResponse)
		go func() { done <- s.run(t, first) }()
		<-s.started
		again := message(key, nil, `"second"`)
		rep := powertools(t, tb, nil, again)
		close(s.block)
		resp := <-done
		if !slices.Equal(rep.Ran, []string{again.MessageId}) || rep.Events[0].Records[0].Status != "success" {
			t.Fatalf("Powertools did not take over: %+v", rep)
		}
		// sqsonce's completion found Powertools' record instead of its claim:
		// it did not overwrite it, and returns the result Powertools stored.
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("sqsonce: %v", s.result(first.MessageId).err)
		}
		if got := s.result(first.MessageId).val; !sameJSON(t, got, `"second"`) {
			t.Errorf("sqsonce returned %#v, want Powertools' stored result", got)
		}
		// Both ran: sqsonce says so, with an outcome of its own.
		if ev := s.outcome(first.MessageId); ev.Outcome != idempotency.OutcomeDoubleRun || !ev.Ran {
			t.Errorf("sqsonce's outcome %q (ran %v), want double_run with ran", ev.Outcome, ev.Ran)
		}
		check := message(key, nil, `"third"`)
		rep = powertools(t, tb, nil, check)
		if len(rep.Ran) != 0 || string(rep.Events[0].Records[0].Value) != `"second"` {
			t.Errorf("the stored result is no longer Powertools': %+v", rep.Events[0].Records[0])
		}
	})
	t.Run("sqsonce record expired, powertools takes over", func(t *testing.T) {
		key := "k-" + rand.Text()
		first := message(key, nil, `"first"`)
		s := newSqsonce(t, tb, withClock(-2*time.Hour)) // completed two hours ago, for an hour
		if resp := s.run(t, first); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("sqsonce: %v", s.result(first.MessageId).err)
		}
		again := message(key, nil, `"second"`)
		rep := powertools(t, tb, nil, again)
		if !slices.Equal(rep.Ran, []string{again.MessageId}) || string(rep.Events[0].Records[0].Value) != `"second"` {
			t.Errorf("Powertools did not take over: %+v", rep)
		}
	})
}

// TestValidation: a payload hash written by one runtime is checked by the
// other: the same payload replays, another payload is refused.
func TestValidation(t *testing.T) { testValidation(t, newTable(t)) }

func testValidation(t *testing.T, tb table) {
	payload := map[string]any{"document_id": "d-1", "Version": 3, "model": "m", "prompt": "Résumé"}
	other := map[string]any{"document_id": "d-1", "Version": 4, "model": "m", "prompt": "Résumé"}
	withPath := func(r *ptinterop.Request) { r.PayloadValidationJMESPath = validationPath }
	t.Run("powertools writes", func(t *testing.T) {
		key := "k-" + rand.Text()
		rep := powertools(t, tb, withPath, message(key, payload, `{"summary":"s"}`))
		if len(rep.Ran) != 1 {
			t.Fatalf("powertools: %+v", rep)
		}
		s := newSqsonce(t, tb, withValidation)
		same, diff := message(key, payload, `"x"`), message(key, other, `"x"`)
		resp := s.run(t, same, diff)
		if !slices.Equal(failed(resp.BatchItemFailures), []string{diff.MessageId}) {
			t.Errorf("failures %v, want only the other payload's %s", resp.BatchItemFailures, diff.MessageId)
		}
		if r := s.result(same.MessageId); r.err != nil || !sameJSON(t, r.val, `{"summary":"s"}`) {
			t.Errorf("same payload: %#v, %v; want the stored result", r.val, r.err)
		}
		if err := s.result(diff.MessageId).err; !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Errorf("other payload: %v, want ErrPayloadMismatch", err)
		}
		if s.didRun(same.MessageId) || s.didRun(diff.MessageId) {
			t.Error("sqsonce ran an operation")
		}
	})
	t.Run("sqsonce writes", func(t *testing.T) {
		key := "k-" + rand.Text()
		s := newSqsonce(t, tb, withValidation)
		if resp := s.run(t, message(key, payload, `{"summary":"s"}`)); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("sqsonce: %v", resp.BatchItemFailures)
		}
		same, diff := message(key, payload, `"x"`), message(key, other, `"x"`)
		rep := powertools(t, tb, func(r *ptinterop.Request) {
			withPath(r)
			r.Events = []events.SQSEvent{{Records: []events.SQSMessage{same}}, {Records: []events.SQSMessage{diff}}}
		})
		if len(rep.Ran) != 0 {
			t.Errorf("Powertools ran %v", rep.Ran)
		}
		if r := rep.Events[0].Records[0]; r.Status != "success" || string(r.Value) != `{"summary":"s"}` {
			t.Errorf("same payload: %+v, want the stored result", r)
		}
		if r := rep.Events[1].Records[0]; r.Status != "fail" || r.Error != "IdempotencyValidationError" {
			t.Errorf("other payload: %+v, want IdempotencyValidationError", r)
		}
	})
}

// TestRecordIDs: the record Powertools writes for a key is at the id
// sqsonce computes for it (the worked example of a UUID key).
func TestRecordIDs(t *testing.T) { testRecordIDs(t, newTable(t)) }

func testRecordIDs(t *testing.T, tb table) {
	g, err := idempotency.New(idempotency.Config{Store: tb.store, Namespace: keyPrefix, Format: idempotency.FormatPowertoolsTypeScript})
	if err != nil {
		t.Fatal(err)
	}
	const key = "059f36b4-87a3-44ab-83d2-661975830a7d"
	msg := message(key, nil, `1`)
	k, err := jmespath.MustCompile(keyJMESPath).Select(msg)
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	if want := keyPrefix + "#BoBEp5J82IUkrcIkQu++2Q=="; id != want {
		t.Errorf("sqsonce id %s, want %s", id, want)
	}
	powertools(t, tb, nil, msg)
	out, err := tb.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(tb.name), Key: tb.layout.key(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := out.Item["status"].(*types.AttributeValueMemberS); st == nil || st.Value != "COMPLETED" {
		t.Errorf("no completed Powertools record at %s: %v", id, out.Item)
	}
}

// TestMissingKey: a message without the key is run unprotected by
// Powertools (its default; throwOnNoIdempotencyKey changes it) and refused by
// sqsonce, which never runs an operation without a claim.
func TestMissingKey(t *testing.T) { testMissingKey(t, newTable(t)) }

func testMissingKey(t *testing.T, tb table) {
	msg := message("", nil, `"unprotected"`)
	rep := powertools(t, tb, nil, msg)
	if !slices.Equal(rep.Ran, []string{msg.MessageId}) || rep.Events[0].Records[0].Status != "success" {
		t.Errorf("Powertools: %+v, want the handler run without idempotency", rep)
	}
	s := newSqsonce(t, tb)
	resp := s.run(t, msg)
	var ke *idempotency.KeyError
	if !slices.Equal(failed(resp.BatchItemFailures), []string{msg.MessageId}) || !errors.As(s.result(msg.MessageId).err, &ke) || s.didRun(msg.MessageId) {
		t.Errorf("sqsonce: failures %v, error %v, ran %v; want a *KeyError and nothing run", resp.BatchItemFailures, s.result(msg.MessageId).err, s.ran)
	}
}

// TestPowertoolsLateCompletion: the lease-owner fence is sqsonce's alone.
// Powertools completes with an unconditional UpdateItem, so a Powertools
// worker whose lease passed while its handler ran overwrites the result of
// the sqsonce worker that took the key over.
func TestPowertoolsLateCompletion(t *testing.T) { testPowertoolsLateCompletion(t, newTable(t)) }

func testPowertoolsLateCompletion(t *testing.T, tb table) {
	key := "k-" + rand.Text()
	slow := message(key, nil, `"powertools"`)
	type outcome struct {
		rep ptinterop.Report
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		req := ptinterop.Request{
			Endpoint: tb.endpoint, Table: tb.name, KeyPrefix: keyPrefix, EventKeyJMESPath: keyJMESPath,
			RemainingMs: 1, ModelMs: 5000, Events: []events.SQSEvent{{Records: []events.SQSMessage{slow}}},
		}
		tb.layout.request(&req)
		rep, err := ptinterop.Run(ctx, driverDir, req)
		done <- outcome{rep, err}
	}()

	g, err := idempotency.New(idempotency.Config{Store: tb.store, Namespace: keyPrefix, Format: idempotency.FormatPowertoolsTypeScript})
	if err != nil {
		t.Fatal(err)
	}
	k, err := jmespath.MustCompile(keyJMESPath).Select(slow)
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	status := func() string {
		out, err := tb.db.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String(tb.name), Key: tb.layout.key(id), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		st, _ := out.Item["status"].(*types.AttributeValueMemberS)
		if st == nil {
			return ""
		}
		return st.Value
	}
	for deadline := time.Now().Add(time.Minute); status() != "INPROGRESS"; {
		select {
		case o := <-done:
			t.Fatalf("the Powertools driver ended before its claim was seen: %+v %v", o.rep, o.err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no Powertools claim within a minute")
		}
	}

	// Its lease (1 ms) has passed: sqsonce takes over and completes.
	again := message(key, nil, `"sqsonce"`)
	s := newSqsonce(t, tb, withClock(time.Second))
	if resp := s.run(t, again); len(resp.BatchItemFailures) != 0 || !sameJSON(t, s.result(again.MessageId).val, `"sqsonce"`) {
		t.Fatalf("sqsonce did not take over: %v, %v", resp.BatchItemFailures, s.result(again.MessageId))
	}
	select {
	case <-done:
		t.Fatal("the Powertools handler finished before sqsonce completed: the machine is too slow for this test's 5 s model call")
	default:
	}
	o := <-done
	if o.err != nil || o.rep.Events[0].Records[0].Status != "success" {
		t.Fatalf("Powertools: %+v %v", o.rep, o.err)
	}
	// Powertools' late completion replaced sqsonce's result.
	check := message(key, nil, `"third"`)
	s = newSqsonce(t, tb)
	s.run(t, check)
	if r := s.result(check.MessageId); s.didRun(check.MessageId) || !sameJSON(t, r.val, `"powertools"`) {
		t.Errorf("replay after both completed: %#v (%v), want Powertools' late result", r.val, r.err)
	}
}
