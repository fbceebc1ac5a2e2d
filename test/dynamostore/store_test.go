package dynamostore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/poll"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

func TestConformanceCustomAttributes(t *testing.T) {
	e := newEnv(t, dynamostore.WithAttributes(dynamostore.Attributes{
		Status: "st", Expiration: "ttl", LeaseExpiry: "lease_ms", Data: "result",
		Validation: "payload", Owner: "who", DataEncoding: "enc", DataOmitted: "omitted", DataFormat: "format",
	}))
	storetest.Run(t, func(t *testing.T) driver.Store { return e.store })
}

func claim(key string, now time.Time, lease time.Duration) driver.Record {
	return driver.Record{
		ID:         key,
		Status:     driver.StatusInProgress,
		ExpiresAt:  now.Add(24 * time.Hour),
		LeaseUntil: now.Add(lease),
		Owner:      rand.Text(),
	}
}

func completed(rec driver.Record, data string) driver.Record {
	rec.Status, rec.Data = driver.StatusCompleted, []byte(data)
	return rec
}

func (e env) raw(t *testing.T, table, key string) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"id": s(key)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func (e env) put(t *testing.T, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// summaryPut is the application's own write: a summary item, written only
// if there is none of the same or a newer version.
func summaryPut(table, doc string, version int64) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			"id": s(doc), "version": n(version), "summary": s(fmt.Sprintf("summary of %s v%d", doc, version)),
		},
		ConditionExpression:       aws.String("attribute_not_exists(id) OR version < :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(version)},
	}}
}

// randomJSON is a JSON string of size bytes that compresses poorly.
func randomJSON(t *testing.T, size int) []byte {
	t.Helper()
	b := make([]byte, size*3/4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return []byte(`"` + base64.StdEncoding.EncodeToString(b) + `"`)
}

// TestRoundTrips counts the HTTP requests of each store path on moto.
func TestRoundTrips(t *testing.T) { testRoundTrips(t, newEnv(t)) }

func testRoundTrips(t *testing.T, e env) {
	ctx := context.Background()
	now := time.Now()
	rec := claim("ns#rt-"+rand.Text(), now, time.Minute)
	other := claim(rec.ID, now, time.Minute)
	freed := claim("ns#rt-"+rand.Text(), now, time.Minute)
	tx := claim("ns#rt-"+rand.Text(), now, time.Minute)
	lapsed := claim("ns#rt-"+rand.Text(), now, -time.Second)
	summaries := motoserver.NewTable(t, e.db)
	if _, _, err := e.store.Acquire(ctx, lapsed, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	e.calls.Reset()

	steps := []struct {
		name string
		want map[string]int
		do   func() error
	}{
		{"Acquire free key", map[string]int{"PutItem": 1}, func() error {
			_, loaded, err := e.store.Acquire(ctx, rec, now, driver.Takeover)
			return want(err, !loaded, "claimed")
		}},
		{"Acquire key in progress", map[string]int{"PutItem": 1}, func() error {
			got, loaded, err := e.store.Acquire(ctx, other, now, driver.Takeover)
			return want(err, loaded && got.Status == driver.StatusInProgress, "loaded in progress")
		}},
		{"Complete", map[string]int{"UpdateItem": 1}, func() error {
			return errOf(e.store.Complete(ctx, completed(rec, `{"summary":"ok"}`)))
		}},
		{"Acquire completed key", map[string]int{"PutItem": 1}, func() error {
			got, loaded, err := e.store.Acquire(ctx, other, now, driver.Takeover)
			return want(err, loaded && string(got.Data) == `{"summary":"ok"}`, "loaded with its data")
		}},
		{"Acquire then Release", map[string]int{"PutItem": 1, "UpdateItem": 1}, func() error {
			if _, _, err := e.store.Acquire(ctx, freed, now, driver.Takeover); err != nil {
				return err
			}
			return e.store.Release(ctx, freed.ID, freed.Owner)
		}},
		// A key with a record the claim may take costs a second PutItem:
		// the first claims only a key with no record.
		{"Acquire a released claim", map[string]int{"PutItem": 2}, func() error {
			got, loaded, err := e.store.Acquire(ctx, claim(freed.ID, now, time.Minute), now, driver.Takeover)
			return want(err, !loaded && got.ID == "", "claimed, replacing nothing")
		}},
		{"Acquire a lapsed lease", map[string]int{"PutItem": 2}, func() error {
			got, loaded, err := e.store.Acquire(ctx, claim(lapsed.ID, now, time.Minute), now, driver.Takeover)
			return want(err, !loaded && got.Owner == lapsed.Owner, "taken over, replacing the lapsed claim")
		}},
		{"Acquire then Complete with an attached write", map[string]int{"PutItem": 1, "TransactWriteItems": 1}, func() error {
			if _, _, err := e.store.Acquire(ctx, tx, now, driver.Takeover); err != nil {
				return err
			}
			done := completed(tx, `1`)
			done.Attached = []any{summaryPut(summaries, "doc-1", 1)}
			return errOf(e.store.Complete(ctx, done))
		}},
	}
	for _, st := range steps {
		e.calls.Reset()
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := e.calls.Calls()
		t.Logf("round trips: %-45s %v", st.name, got)
		if !maps.Equal(got, st.want) {
			t.Errorf("%s: calls %v, want %v", st.name, got, st.want)
		}
	}
}

func want(err error, cond bool, what string) error {
	if err != nil {
		return err
	}
	if !cond {
		return errors.New("not " + what)
	}
	return nil
}

// TestGuardRoundTrips counts the requests of the guard's paths with this
// store: first delivery, replay, cached replay, a duplicate running at the
// same time in the process, and a completion with an attached write.
func TestGuardRoundTrips(t *testing.T) { testGuardRoundTrips(t, newEnv(t)) }

func testGuardRoundTrips(t *testing.T, e env) {
	summaries := motoserver.NewTable(t, e.db)
	ctx := context.Background()
	newGuard := func(cache int) *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: e.store, Namespace: "rt", CacheBytes: cache, Logger: discard()})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	plain, cached := newGuard(0), newGuard(1<<20)
	e.calls.Reset()
	var runs atomic.Int32
	op := func(context.Context) (string, error) { runs.Add(1); return "summary", nil }
	check := func(name string, wantCalls map[string]int, wantRuns int32) {
		t.Helper()
		got := e.calls.Calls()
		t.Logf("round trips: %-40s %v (operation runs: %d)", name, got, runs.Load())
		if !maps.Equal(got, wantCalls) || runs.Load() != wantRuns {
			t.Errorf("%s: calls %v, runs %d; want %v, %d", name, got, runs.Load(), wantCalls, wantRuns)
		}
		e.calls.Reset()
		runs.Store(0)
	}

	if _, err := idempotency.Do(ctx, cached, idempotency.Raw([]byte("k1")), op); err != nil {
		t.Fatal(err)
	}
	check("first delivery", map[string]int{"PutItem": 1, "UpdateItem": 1}, 1)

	if v, err := idempotency.Do(ctx, plain, idempotency.Raw([]byte("k1")), op); err != nil || v != "summary" {
		t.Fatalf("replay = %q, %v", v, err)
	}
	check("replay", map[string]int{"PutItem": 1}, 0)

	if v, err := idempotency.Do(ctx, cached, idempotency.Raw([]byte("k1")), op); err != nil || v != "summary" {
		t.Fatalf("cached replay = %q, %v", v, err)
	}
	check("replay from the guard's cache", map[string]int{}, 0)

	// Two deliveries of one key in one batch: the second joins the first's
	// run in the process.
	release := make(chan struct{})
	started := make(chan struct{})
	slow := func(context.Context) (string, error) {
		runs.Add(1)
		close(started)
		<-release
		return "summary", nil
	}
	var wg sync.WaitGroup
	results := make([]string, 2)
	errs := make([]error, 2)
	wg.Go(func() { results[0], errs[0] = idempotency.Do(ctx, plain, idempotency.Raw([]byte("k2")), slow) })
	<-started
	wg.Go(func() { results[1], errs[1] = idempotency.Do(ctx, plain, idempotency.Raw([]byte("k2")), slow) })
	poll.Goroutines(t, 2, guardRun) // both calls inside the guard: the run and its waiter
	close(release)
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || results[i] != "summary" {
			t.Fatalf("duplicate delivery %d = %q, %v", i, results[i], errs[i])
		}
	}
	check("two deliveries of one key in one batch", map[string]int{"PutItem": 1, "UpdateItem": 1}, 1)

	_, err := idempotency.Do(ctx, plain, idempotency.Raw([]byte("k3")), func(ctx context.Context) (string, error) {
		runs.Add(1)
		return "summary", dynamostore.Attach(ctx, summaryPut(summaries, "doc-3", 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	check("first delivery with an attached write", map[string]int{"PutItem": 1, "TransactWriteItems": 1}, 1)
	if e.raw(t, summaries, "doc-3") == nil {
		t.Error("the attached write was not committed")
	}
}

// TestTakeoverFencing: a worker whose lease lapsed and was taken over can
// neither complete nor release the new owner's record.
func TestTakeoverFencing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	stale := claim("ns#fence-"+rand.Text(), now, time.Second)
	if _, loaded, err := e.store.Acquire(ctx, stale, now, driver.Takeover); err != nil || loaded {
		t.Fatalf("first Acquire: loaded=%v err=%v", loaded, err)
	}
	later := now.Add(2 * time.Second)
	winner := claim(stale.ID, later, time.Minute)
	prev, loaded, err := e.store.Acquire(ctx, winner, later, driver.Takeover)
	if err != nil || loaded || prev.Owner != stale.Owner {
		t.Fatalf("takeover: prev owner %q, loaded=%v, err=%v; want the stale owner replaced", prev.Owner, loaded, err)
	}

	_, err = e.store.Complete(ctx, completed(stale, `"stale"`))
	if !errors.Is(err, driver.ErrLeaseLost) || !strings.Contains(err.Error(), "taken over") {
		t.Errorf("stale Complete: %v, want ErrLeaseLost (taken over)", err)
	}
	if err := e.store.Release(ctx, stale.ID, stale.Owner); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("stale Release: %v, want ErrLeaseLost", err)
	}
	item := e.raw(t, e.table, stale.ID)
	if stringOf(item["lease_owner"]) != winner.Owner || stringOf(item["status"]) != "INPROGRESS" || item["data"] != nil {
		t.Fatalf("record after stale writes = %s, want the winner's claim untouched", show(item))
	}
	if _, err := e.store.Complete(ctx, completed(winner, `"winner"`)); err != nil {
		t.Fatalf("winner's Complete: %v", err)
	}
	if err := e.store.Release(ctx, winner.ID, winner.Owner); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Release of a completed record: %v, want ErrLeaseLost (a completed record is never released)", err)
	}
	got, loaded, err := e.store.Acquire(ctx, claim(stale.ID, later, time.Minute), later, driver.Takeover)
	if err != nil || !loaded || string(got.Data) != `"winner"` {
		t.Fatalf("record = %+v, loaded=%v, err=%v; want the winner's result", got, loaded, err)
	}
}

func stringOf(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// TestPowertoolsRecords reads records shaped as Powertools for AWS Lambda
// writes them: no owner, the result as a JSON string (Python),
// in_progress_expiration left after completion. TestDataFormats covers
// TypeScript's native data.
func TestPowertoolsRecords(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	secs := func(d time.Duration) types.AttributeValue { return n(now.Add(d).Unix()) }
	millis := func(d time.Duration) types.AttributeValue { return n(now.Add(d).UnixMilli()) }
	tests := []struct {
		name       string
		item       map[string]types.AttributeValue
		wantLoaded bool
		wantStatus driver.Status
		wantData   string
	}{
		{name: "python completed", wantLoaded: true, wantStatus: driver.StatusCompleted, wantData: `{"summary":"a summary","tokens":[1,2]}`,
			item: map[string]types.AttributeValue{"status": s("COMPLETED"), "expiration": secs(time.Hour),
				"in_progress_expiration": millis(-time.Hour), "data": s(`{"summary":"a summary","tokens":[1,2]}`), "validation": s("abc")}},
		{name: "in progress, live lease", wantLoaded: true, wantStatus: driver.StatusInProgress,
			item: map[string]types.AttributeValue{"status": s("INPROGRESS"), "expiration": secs(time.Hour), "in_progress_expiration": millis(time.Minute)}},
		{name: "in progress, lapsed lease", wantLoaded: false,
			item: map[string]types.AttributeValue{"status": s("INPROGRESS"), "expiration": secs(time.Hour), "in_progress_expiration": millis(-time.Second)}},
		{name: "completed, expired", wantLoaded: false,
			item: map[string]types.AttributeValue{"status": s("COMPLETED"), "expiration": secs(-time.Minute), "data": s(`1`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := "pt#" + rand.Text()
			tc.item["id"] = s(key)
			e.put(t, e.table, tc.item)
			mine := claim(key, now, time.Minute)

			// Fenced writes never touch a record without our owner token.
			if tc.wantLoaded {
				if _, err := e.store.Complete(ctx, completed(mine, `"mine"`)); !errors.Is(err, driver.ErrLeaseLost) {
					t.Errorf("Complete of a Powertools record: %v, want ErrLeaseLost", err)
				}
				if err := e.store.Release(ctx, key, mine.Owner); !errors.Is(err, driver.ErrLeaseLost) {
					t.Errorf("Release of a Powertools record: %v, want ErrLeaseLost", err)
				}
				if err := e.store.Release(ctx, key, ""); !errors.Is(err, driver.ErrLeaseLost) {
					t.Errorf("Release of a Powertools record with no owner: %v, want ErrLeaseLost", err)
				}
				if got := e.raw(t, e.table, key); !maps.EqualFunc(got, tc.item, sameAttr) {
					t.Fatalf("record changed by refused writes: %s", show(got))
				}
			}

			got, loaded, err := e.store.Acquire(ctx, mine, now, driver.Takeover)
			if err != nil || loaded != tc.wantLoaded {
				t.Fatalf("Acquire: loaded=%v err=%v, want loaded=%v", loaded, err, tc.wantLoaded)
			}
			if !loaded {
				if got.ID != key || got.Owner != "" {
					t.Errorf("takeover returned the replaced record %+v, want it with no owner", got)
				}
				if _, err := e.store.Complete(ctx, completed(mine, `"mine"`)); err != nil {
					t.Fatalf("Complete after taking over a Powertools record: %v", err)
				}
				return
			}
			if got.Status != tc.wantStatus || got.Owner != "" {
				t.Errorf("status=%q owner=%q, want %q and none", got.Status, got.Owner, tc.wantStatus)
			}
			if !jsonEqual(got.Data, []byte(tc.wantData)) {
				t.Errorf("Data = %s, want %s", got.Data, tc.wantData)
			}
		})
	}
}

func sameAttr(a, b types.AttributeValue) bool { return reflect.DeepEqual(a, b) }

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// TestPowertoolsReplayThroughGuard: a record Powertools for TypeScript
// completed is replayed into the handler's result type.
func TestPowertoolsReplayThroughGuard(t *testing.T) {
	e := newEnv(t, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	g, err := idempotency.New(idempotency.Config{Store: e.store, Namespace: "summarise", Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	e.put(t, e.table, map[string]types.AttributeValue{
		"id": s(rawID(t, g, "doc-7")), "status": s("COMPLETED"), "expiration": n(time.Now().Add(time.Hour).Unix()),
		"in_progress_expiration": n(time.Now().UnixMilli()),
		"data": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"summary": s("from powertools"), "tokens": n(42),
		}},
	})
	type result struct {
		Summary string `json:"summary"`
		Tokens  int    `json:"tokens"`
	}
	got, err := idempotency.Do(context.Background(), g, idempotency.Raw([]byte("doc-7")), func(context.Context) (result, error) {
		t.Error("the operation ran for a key Powertools completed")
		return result{}, nil
	})
	if err != nil || got != (result{"from powertools", 42}) {
		t.Fatalf("Do = %+v, %v", got, err)
	}
}

// TestTransactions: the application's write commits with the completion,
// or neither is written.
func TestTransactions(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (env, string, driver.Record) {
		e := newEnv(t)
		summaries := motoserver.NewTable(t, e.db)
		now := time.Now()
		rec := claim("ns#tx-"+rand.Text(), now, time.Minute)
		if _, loaded, err := e.store.Acquire(ctx, rec, now, driver.Takeover); err != nil || loaded {
			t.Fatalf("Acquire: loaded=%v err=%v", loaded, err)
		}
		return e, summaries, rec
	}

	t.Run("both commit", func(t *testing.T) {
		e, summaries, rec := setup(t)
		done := completed(rec, `{"summary":"ok"}`)
		put2 := summaryPut(summaries, "doc-2", 1)
		done.Attached = []any{summaryPut(summaries, "doc-1", 1), &put2}
		e.calls.Reset()
		if _, err := e.store.Complete(ctx, done); err != nil {
			t.Fatal(err)
		}
		if got := e.calls.Calls(); !maps.Equal(got, map[string]int{"TransactWriteItems": 1}) {
			t.Errorf("calls %v, want one TransactWriteItems", got)
		}
		if stringOf(e.raw(t, e.table, rec.ID)["status"]) != "COMPLETED" {
			t.Error("record not completed")
		}
		for _, doc := range []string{"doc-1", "doc-2"} {
			if e.raw(t, summaries, doc) == nil {
				t.Errorf("summary %s not written", doc)
			}
		}
	})

	t.Run("lease lost: neither", func(t *testing.T) {
		e, summaries, rec := setup(t)
		later := time.Now().Add(2 * time.Minute) // past rec's lease
		winner := claim(rec.ID, later, time.Minute)
		if _, loaded, err := e.store.Acquire(ctx, winner, later, driver.Takeover); err != nil || loaded {
			t.Fatalf("takeover: loaded=%v err=%v", loaded, err)
		}
		done := completed(rec, `"stale"`)
		done.Attached = []any{summaryPut(summaries, "doc-1", 1)}
		_, err := e.store.Complete(ctx, done)
		var te *dynamostore.TransactionError
		if !errors.Is(err, driver.ErrLeaseLost) || errors.As(err, &te) {
			t.Fatalf("Complete after takeover: %v, want ErrLeaseLost and no *TransactionError", err)
		}
		if e.raw(t, summaries, "doc-1") != nil {
			t.Error("the application's write was committed without the record")
		}
		if item := e.raw(t, e.table, rec.ID); stringOf(item["status"]) != "INPROGRESS" || stringOf(item["lease_owner"]) != winner.Owner {
			t.Errorf("record = %s, want the winner's claim", show(item))
		}
	})

	t.Run("app condition fails: neither", func(t *testing.T) {
		e, summaries, rec := setup(t)
		newer := summaryPut(summaries, "doc-1", 5).Put.Item
		e.put(t, summaries, newer)
		done := completed(rec, `"old"`)
		done.Attached = []any{summaryPut(summaries, "doc-0", 1), summaryPut(summaries, "doc-1", 1)}
		_, err := e.store.Complete(ctx, done)
		var te *dynamostore.TransactionError
		if !errors.As(err, &te) || errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Complete: %v, want a *TransactionError that is not ErrLeaseLost", err)
		}
		if got := te.FailedConditions(); len(got) != 1 || got[0] != 1 {
			t.Errorf("FailedConditions = %v, want [1]", got)
		}
		if !strings.Contains(err.Error(), "attached write 1: ConditionalCheckFailed") {
			t.Errorf("error %q does not name the failed write", err)
		}
		if e.raw(t, summaries, "doc-0") != nil {
			t.Error("a write of the cancelled transaction was committed")
		}
		if got := e.raw(t, summaries, "doc-1"); !maps.EqualFunc(got, newer, sameAttr) {
			t.Errorf("the newer summary was changed: %s", show(got))
		}
		if item := e.raw(t, e.table, rec.ID); stringOf(item["status"]) != "INPROGRESS" || stringOf(item["lease_owner"]) != rec.Owner {
			t.Errorf("record = %s, want it still in progress and ours", show(item))
		}
		// The record is still ours: completing without the write succeeds.
		if _, err := e.store.Complete(ctx, completed(rec, `"old"`)); err != nil {
			t.Errorf("Complete without the attached write: %v", err)
		}
	})

	t.Run("write to a missing table: neither", func(t *testing.T) {
		e, _, rec := setup(t)
		done := completed(rec, `1`)
		done.Attached = []any{summaryPut("no-such-table", "doc-1", 1)}
		_, err := e.store.Complete(ctx, done)
		var se *idempotency.StoreError
		if !errors.As(err, &se) || errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Complete: %v, want a *StoreError, not ErrLeaseLost", err)
		}
		if stringOf(e.raw(t, e.table, rec.ID)["status"]) != "INPROGRESS" {
			t.Error("record completed although its transaction failed")
		}
	})

	t.Run("through the guard", func(t *testing.T) {
		e := newEnv(t)
		summaries := motoserver.NewTable(t, e.db)
		g, err := idempotency.New(idempotency.Config{Store: e.store, Namespace: "tx", Logger: discard()})
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		op := func(ctx context.Context) (string, error) {
			runs++
			return "summary", dynamostore.Attach(ctx, summaryPut(summaries, "doc-9", 1))
		}
		for range 2 {
			if v, err := idempotency.Do(ctx, g, idempotency.Raw([]byte("doc-9")), op); err != nil || v != "summary" {
				t.Fatalf("Do = %q, %v", v, err)
			}
		}
		if runs != 1 || e.raw(t, summaries, "doc-9") == nil {
			t.Errorf("runs = %d, summary written = %v; want 1 run and the summary", runs, e.raw(t, summaries, "doc-9") != nil)
		}
		if err := dynamostore.Attach(ctx, summaryPut(summaries, "doc-9", 2)); !errors.Is(err, idempotency.ErrNotClaimed) {
			t.Errorf("Attach outside an operation: %v, want ErrNotClaimed", err)
		}
	})
}

// TestLargeResults stores ~1 MB results: compressible ones compressed,
// incompressible ones left out with an error logged; both records complete.
func TestLargeResults(t *testing.T) {
	var words []string
	for i := range 35_000 {
		words = append(words, fmt.Sprintf("sentence %d of the summary", i%5000))
	}
	compressible, _ := json.Marshal(strings.Join(words, ". "))
	incompressible := randomJSON(t, 1<<20)
	tests := []struct {
		name        string
		data        []byte
		wantStored  bool
		wantEncoded bool
	}{
		{name: "small", data: []byte(`{"summary":"short"}`), wantStored: true},
		{name: "1 MB compressible", data: compressible, wantStored: true, wantEncoded: true},
		{name: "1 MB incompressible", data: incompressible, wantStored: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			e := newEnv(t, dynamostore.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
			ctx := context.Background()
			now := time.Now()
			rec := claim("ns#big-"+rand.Text(), now, time.Minute)
			if _, _, err := e.store.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				t.Fatal(err)
			}
			e.calls.Reset()
			stored, err := e.store.Complete(ctx, completed(rec, string(tc.data)))
			if err != nil {
				t.Fatalf("Complete of a %d-byte result: %v", len(tc.data), err)
			}
			if (stored != nil) != tc.wantStored || (stored != nil && !bytes.Equal(stored, tc.data)) {
				t.Errorf("Complete returned %d bytes as stored, want stored=%v", len(stored), tc.wantStored)
			}
			if got := e.calls.Calls(); !maps.Equal(got, map[string]int{"UpdateItem": 1}) {
				t.Errorf("calls %v, want one UpdateItem", got)
			}
			item := e.raw(t, e.table, rec.ID)
			_, omitted := item["data_omitted"]
			if stringOf(item["status"]) != "COMPLETED" || omitted == tc.wantStored || (stringOf(item["data_encoding"]) == "gzip") != tc.wantEncoded {
				t.Errorf("record: status %s, data_encoding %q, data_omitted %v; want COMPLETED, gzip=%v, omitted=%v",
					stringOf(item["status"]), stringOf(item["data_encoding"]), omitted, tc.wantEncoded, !tc.wantStored)
			}
			if b, ok := item["data"].(*types.AttributeValueMemberB); ok {
				t.Logf("%d-byte result stored as %d bytes of gzip", len(tc.data), len(b.Value))
			}
			got, loaded, err := e.store.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover)
			if err != nil || !loaded || got.Status != driver.StatusCompleted {
				t.Fatalf("Acquire: %+v loaded=%v err=%v, want the completed record", got.Status, loaded, err)
			}
			if tc.wantStored && !bytes.Equal(got.Data, tc.data) {
				t.Errorf("replayed %d bytes, want the %d stored", len(got.Data), len(tc.data))
			}
			if !tc.wantStored {
				if got.Data != nil {
					t.Errorf("replayed %d bytes of a result that was not stored", len(got.Data))
				}
				if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), rec.ID) {
					t.Errorf("no error logged for the omitted result; log: %s", logs.String())
				}
			}
		})
	}
}

// TestResultRefusedForSize: when DynamoDB refuses the completed item for its
// size after all (here another writer added a 100 KB attribute to the
// record), the record completes without its result instead of staying
// unrecorded.
func TestResultRefusedForSize(t *testing.T) {
	var logs bytes.Buffer
	e := newEnv(t, dynamostore.WithCompressAbove(dynamostore.DefaultItemLimit),
		dynamostore.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	ctx := context.Background()
	now := time.Now()
	rec := claim("ns#refused-"+rand.Text(), now, time.Minute)
	if _, _, err := e.store.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.table),
		Key:                       map[string]types.AttributeValue{"id": s(rec.ID)},
		UpdateExpression:          aws.String("SET extra = :x"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":x": s(strings.Repeat("x", 100<<10))},
	})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`"` + strings.Repeat("y", 350<<10) + `"`) // fits alone, plain
	e.calls.Reset()
	if _, err := e.store.Complete(ctx, completed(rec, string(data))); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got := e.calls.Calls(); !maps.Equal(got, map[string]int{"UpdateItem": 2}) {
		t.Errorf("calls %v, want two UpdateItem (refused, then without the result)", got)
	}
	item := e.raw(t, e.table, rec.ID)
	if stringOf(item["status"]) != "COMPLETED" || item["data"] != nil || item["data_omitted"] == nil {
		t.Errorf("record: status %s, data present %v, data_omitted %v; want COMPLETED without data, flagged",
			stringOf(item["status"]), item["data"] != nil, item["data_omitted"])
	}
	if !strings.Contains(logs.String(), "DynamoDB refused the item's size") {
		t.Errorf("no error logged; log: %s", logs.String())
	}
}

// TestPlainResultAtTheLimit: a plain result just inside the store's budget
// is accepted by the server, whose own limit the margin covers.
func TestPlainResultAtTheLimit(t *testing.T) {
	e := newEnv(t, dynamostore.WithCompressAbove(dynamostore.DefaultItemLimit), dynamostore.WithLogger(discard()))
	ctx := context.Background()
	now := time.Now()
	rec := claim("ns#edge-"+rand.Text(), now, time.Minute)
	if _, _, err := e.store.Acquire(ctx, rec, now, driver.Takeover); err != nil {
		t.Fatal(err)
	}
	// The record's other attributes take well under 300 bytes here.
	data := []byte(`"` + strings.Repeat("z", dynamostore.DefaultItemLimit-8<<10-300) + `"`)
	if _, err := e.store.Complete(ctx, completed(rec, string(data))); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	item := e.raw(t, e.table, rec.ID)
	if v, ok := item["data"].(*types.AttributeValueMemberS); !ok || len(v.Value) != len(data) {
		t.Errorf("result not stored plain: %T", item["data"])
	}
}

// guardRun is the guard's run of a call as a stack dump names it: the
// goroutines in it run a call or wait for one.
const guardRun = "idempotency.(*Guard).run("

// TestClaimOverFractionalNumbers: an expiry or lease stored with a fraction
// (another writer's) just before now is past for DynamoDB, which compares
// numbers exactly: the claim takes the record, as one conditional write
// would, though a float64 rounds the number to now.
func TestClaimOverFractionalNumbers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
	}{
		{"expired completed record", map[string]types.AttributeValue{
			"status":     &types.AttributeValueMemberS{Value: "COMPLETED"},
			"expiration": &types.AttributeValueMemberN{Value: "1699999999.99999999"},
			"data":       &types.AttributeValueMemberS{Value: `"old"`},
		}},
		{"lapsed lease", map[string]types.AttributeValue{
			"status":                 &types.AttributeValueMemberS{Value: "INPROGRESS"},
			"expiration":             &types.AttributeValueMemberN{Value: "1700086400"},
			"in_progress_expiration": &types.AttributeValueMemberN{Value: "1699999999999.9999"},
			"lease_owner":            &types.AttributeValueMemberS{Value: "other"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "ns#frac-" + rand.Text()
			tc.item["id"] = &types.AttributeValueMemberS{Value: id}
			if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: tc.item}); err != nil {
				t.Fatal(err)
			}
			prev, loaded, err := e.store.Acquire(ctx, claim(id, now, time.Minute), now, driver.Takeover)
			if err != nil || loaded || prev.ID != id {
				t.Fatalf("Acquire = %+v, loaded %v, err %v; want the record taken over", prev, loaded, err)
			}
		})
	}
}
