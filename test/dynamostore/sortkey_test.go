package dynamostore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
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
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// The layout of a single-table design's table shared with Powertools'
// sort_key_attr: partition key pk, sort key sk.
const (
	pkAttr   = "pk"
	skAttr   = "sk"
	function = "orders-fn"
)

// sortKeyed is the store option of that layout, for function's default
// partition.
func sortKeyed() []dynamostore.Option {
	return []dynamostore.Option{
		dynamostore.WithAttributes(dynamostore.Attributes{ID: pkAttr}),
		dynamostore.WithSortKey(dynamostore.SortKey{Attr: skAttr, FunctionName: function}),
	}
}

// newSortKeyEnv is newEnv on a table with a sort key.
func newSortKeyEnv(t *testing.T, opts ...dynamostore.Option) env {
	t.Helper()
	calls := &motoserver.Counter{}
	db := moto.DynamoDB(t, calls.Option())
	table := motoserver.NewTableWithSortKey(t, db, pkAttr, skAttr)
	s, err := dynamostore.New(db, table, append(sortKeyed(), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	calls.Reset()
	return env{store: s, db: db, table: table, calls: calls}
}

// item reads the item at partition value pk and sort key id.
func (e env) item(t *testing.T, pk, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(e.table),
		Key:            map[string]types.AttributeValue{pkAttr: s(pk), skAttr: s(id)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func TestConformanceSortKey(t *testing.T) {
	e := newSortKeyEnv(t)
	storetest.Run(t, func(t *testing.T) driver.Store { return e.store })
}

func TestRoundTripsSortKey(t *testing.T)      { testRoundTrips(t, newSortKeyEnv(t)) }
func TestGuardRoundTripsSortKey(t *testing.T) { testGuardRoundTrips(t, newSortKeyEnv(t)) }

// TestSortKeyValidates: New refuses what Powertools refuses (the two key
// attributes the same) and what would leave the partition unknown or a
// name used twice, all at once.
func TestSortKeyValidates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs dynamostore.Attributes
		key   dynamostore.SortKey
		want  []string
	}{
		{"same attribute as the partition key", dynamostore.Attributes{}, dynamostore.SortKey{Attr: "id", FunctionName: "f"},
			[]string{`the partition key attribute "id" and the sort key attribute "id" cannot be the same`}},
		{"same as a renamed partition key", dynamostore.Attributes{ID: "pk"}, dynamostore.SortKey{Attr: "pk", Partition: "p"},
			[]string{`"pk" and the sort key attribute "pk" cannot be the same`}},
		{"no attribute, no partition", dynamostore.Attributes{}, dynamostore.SortKey{},
			[]string{"SortKey.Attr, the sort key attribute, is empty", "set SortKey.FunctionName"}},
		{"a record attribute", dynamostore.Attributes{}, dynamostore.SortKey{Attr: "status", FunctionName: "f"},
			[]string{`the sort key attribute "status" is also a record attribute`}},
		{"a partition too long", dynamostore.Attributes{}, dynamostore.SortKey{Attr: "sk", Partition: strings.Repeat("p", 2049)},
			[]string{"the partition value is 2049 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dynamostore.New(&fakeAPI{}, "records", dynamostore.WithAttributes(tc.attrs), dynamostore.WithSortKey(tc.key))
			if err == nil {
				t.Fatal("New accepted the configuration")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := dynamostore.New(&fakeAPI{}, "records", dynamostore.WithSortKey(dynamostore.SortKey{Attr: "sk", FunctionName: "f"})); err != nil {
		t.Errorf("New with a sort key and a function name: %v", err)
	}
}

// TestSortKeyRequests: every request names the record by its partition
// value and sort key, and the claim's condition and ALL_OLD are those of a
// table without a sort key.
func TestSortKeyRequests(t *testing.T) {
	f := &fakeAPI{
		putReplies:      []reply[dynamodb.PutItemOutput]{fail[dynamodb.PutItemOutput](ccf(nil)), ok(&dynamodb.PutItemOutput{})},
		getReplies:      []reply[dynamodb.GetItemOutput]{ok(&dynamodb.GetItemOutput{})},
		updateReplies:   []reply[dynamodb.UpdateItemOutput]{ok(&dynamodb.UpdateItemOutput{}), ok(&dynamodb.UpdateItemOutput{})},
		transactReplies: []reply[dynamodb.TransactWriteItemsOutput]{ok(&dynamodb.TransactWriteItemsOutput{})},
	}
	st := newFake(t, f, sortKeyed()...)
	ctx := context.Background()
	rec := record("ns#k")
	if _, loaded, err := st.Acquire(ctx, rec, t0, driver.Takeover); err != nil || loaded {
		t.Fatalf("Acquire = loaded %v, %v", loaded, err)
	}
	done := rec
	done.Status, done.Data = driver.StatusCompleted, []byte(`1`)
	if _, err := st.Complete(ctx, done); err != nil {
		t.Fatal(err)
	}
	done.Attached = []any{summaryPut("summaries", "doc", 1)}
	if _, err := st.Complete(ctx, done); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, rec.ID, rec.Owner); err != nil {
		t.Fatal(err)
	}

	key := map[string]types.AttributeValue{pkAttr: s("idempotency#" + function), skAttr: s("ns#k")}
	for i, in := range f.puts {
		if !reflect.DeepEqual(in.Item[pkAttr], key[pkAttr]) || !reflect.DeepEqual(in.Item[skAttr], key[skAttr]) || in.Item["id"] != nil {
			t.Errorf("claim %d item = %s, want %s and no id attribute", i, show(in.Item), show(key))
		}
		// The first attempt claims a key with no record; the second, after
		// the record it found vanished, under the full claim condition.
		want := []string{"attribute_not_exists(#id)", "attribute_not_exists(#id) OR #exp < :now OR (#st = :inprogress AND #lease < :now_ms)"}[min(i, 1)]
		if c := aws.ToString(in.ConditionExpression); c != want || in.ExpressionAttributeNames["#id"] != pkAttr {
			t.Errorf("claim %d condition = %q on #id = %q", i, c, in.ExpressionAttributeNames["#id"])
		}
		if i > 0 && in.ReturnValues != types.ReturnValueAllOld || in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
			t.Errorf("claim %d does not ask for ALL_OLD", i)
		}
	}
	keys := map[string]map[string]types.AttributeValue{
		"GetItem":                   f.gets[0].Key,
		"UpdateItem (completion)":   f.updates[0].Key,
		"TransactWriteItems update": f.transact[0].TransactItems[0].Update.Key,
		"UpdateItem (release)":      f.updates[1].Key,
	}
	for what, got := range keys {
		if !reflect.DeepEqual(got, key) {
			t.Errorf("%s key = %s, want %s", what, show(got), show(key))
		}
	}
	if len(f.puts) != 2 || len(f.gets) != 1 || len(f.updates) != 2 || len(f.transact) != 1 {
		t.Errorf("calls: %d puts, %d gets, %d updates, %d transactions", len(f.puts), len(f.gets), len(f.updates), len(f.transact))
	}
}

// TestSortKeyRecordLayout: the item on moto is at the default partition
// value ("idempotency#" and the function name) with the record id as sort
// key, and a claim refused there returns the record in the same call.
func TestSortKeyRecordLayout(t *testing.T) {
	e := newSortKeyEnv(t)
	ctx := context.Background()
	now := time.Now()
	rec := claim("ns#layout-"+rand.Text(), now, time.Minute)
	if _, loaded, err := e.store.Acquire(ctx, rec, now, driver.Takeover); err != nil || loaded {
		t.Fatalf("Acquire: loaded=%v err=%v", loaded, err)
	}
	if _, err := e.store.Complete(ctx, completed(rec, `{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	item := e.item(t, "idempotency#"+function, rec.ID)
	if stringOf(item[pkAttr]) != "idempotency#"+function || stringOf(item[skAttr]) != rec.ID || stringOf(item["status"]) != "COMPLETED" || item["id"] != nil {
		t.Fatalf("item = %s, want partition idempotency#%s, sort key the id, COMPLETED, no id attribute", show(item), function)
	}
	e.calls.Reset()
	got, loaded, err := e.store.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover)
	if err != nil || !loaded || got.ID != rec.ID || string(got.Data) != `{"n":1}` {
		t.Fatalf("Acquire of the completed key = %+v, loaded=%v, err=%v", got, loaded, err)
	}
	if c := e.calls.Calls(); len(c) != 1 || c["PutItem"] != 1 {
		t.Errorf("calls = %v, want one PutItem (the record from ALL_OLD)", c)
	}
}

// TestSortKeyPartitions: two stores with other partition values share a
// table without sharing records, as two Powertools functions with their
// default static partitions do.
func TestSortKeyPartitions(t *testing.T) {
	e := newSortKeyEnv(t)
	other, err := dynamostore.New(e.db, e.table, dynamostore.WithAttributes(dynamostore.Attributes{ID: pkAttr}),
		dynamostore.WithSortKey(dynamostore.SortKey{Attr: skAttr, Partition: "tenant#7"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	id := "ns#shared-" + rand.Text()
	a, b := claim(id, now, time.Minute), claim(id, now, time.Minute)
	for i, st := range []*dynamostore.Store{e.store, other} {
		rec := []driver.Record{a, b}[i]
		if _, loaded, err := st.Acquire(ctx, rec, now, driver.Takeover); err != nil || loaded {
			t.Fatalf("store %d: Acquire = loaded %v, %v; want a claim of its own", i, loaded, err)
		}
	}
	if _, err := e.store.Complete(ctx, completed(a, `"a"`)); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(ctx, id, b.Owner); err != nil {
		t.Fatal(err)
	}
	if item := e.item(t, "idempotency#"+function, id); stringOf(item["status"]) != "COMPLETED" {
		t.Errorf("the first partition's record = %s, want COMPLETED", show(item))
	}
	if item := e.item(t, "tenant#7", id); item["release_call"] == nil {
		t.Errorf("the second partition's record = %s, want it released", show(item))
	}
}

// TestSortKeyPowertoolsRecord: a record as Powertools TypeScript writes it
// with sortKeyAttr (partition key the static value, sort key the id, data
// in native types) is replayed through the guard.
func TestSortKeyPowertoolsRecord(t *testing.T) {
	e := newSortKeyEnv(t, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	g, err := idempotency.New(idempotency.Config{Store: e.store, Namespace: "orders", Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	e.put(t, e.table, map[string]types.AttributeValue{
		pkAttr: s("idempotency#" + function), skAttr: s(rawID(t, g, "order-7")),
		"status": s("COMPLETED"), "expiration": n(time.Now().Add(time.Hour).Unix()),
		"in_progress_expiration": n(time.Now().UnixMilli()),
		"data":                   &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"order": s("o-7")}},
	})
	got, err := idempotency.Do(context.Background(), g, idempotency.Raw([]byte("order-7")), func(context.Context) (map[string]string, error) {
		t.Error("the operation ran for a key Powertools completed")
		return nil, nil
	})
	if err != nil || got["order"] != "o-7" {
		t.Fatalf("Do = %v, %v; want Powertools' result", got, err)
	}
}

// TestSortKeyTwoWorkersRace: two workers, each with its own client, store
// and guard, race for each of many keys on one table with a sort key. Each
// key's operation runs exactly once; the other delivery replays its result
// or finds it in progress.
func TestSortKeyTwoWorkersRace(t *testing.T) {
	e := newSortKeyEnv(t)
	var guards [2]*idempotency.Guard
	for i := range guards {
		st, err := dynamostore.New(moto.DynamoDB(t), e.table, sortKeyed()...)
		if err != nil {
			t.Fatal(err)
		}
		if guards[i], err = idempotency.New(idempotency.Config{Store: st, Namespace: "race", Logger: discard()}); err != nil {
			t.Fatal(err)
		}
	}
	const keys = 40
	var runs [keys]atomic.Int32
	var replayed, inProgress atomic.Int32
	for k := range keys {
		key := idempotency.Raw(fmt.Appendf(nil, "order-%d", k))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range guards {
			wg.Go(func() {
				<-start
				v, err := idempotency.Do(context.Background(), guards[w], key, func(context.Context) (string, error) {
					runs[k].Add(1)
					time.Sleep(10 * time.Millisecond)
					return fmt.Sprintf("result-%d", k), nil
				})
				switch {
				case errors.Is(err, idempotency.ErrInProgress):
					inProgress.Add(1)
				case err != nil:
					t.Errorf("key %d, worker %d: %v", k, w, err)
				case v != fmt.Sprintf("result-%d", k):
					t.Errorf("key %d, worker %d: result %q", k, w, v)
				default:
					replayed.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := runs[k].Load(); n != 1 {
			t.Errorf("key %d: the operation ran %d times, want once", k, n)
		}
	}
	t.Logf("%d keys, two workers each: %d calls returned the result, %d found the key in progress", keys, replayed.Load(), inProgress.Load())
	if replayed.Load() < keys {
		t.Errorf("%d calls returned a result, want at least one per key", replayed.Load())
	}
}

// TestSortKeyValidateAttached: an attached write on the record's own item
// (its partition value and sort key) is refused; one on another item of
// the same partition is not.
func TestSortKeyValidateAttached(t *testing.T) {
	st := newFake(t, &fakeAPI{}, sortKeyed()...)
	write := func(sk string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String("records"),
			Item: map[string]types.AttributeValue{pkAttr: s("idempotency#" + function), skAttr: s(sk), "order": s("o-1")}}}
	}
	if err := st.ValidateAttached("ns#k", []any{write("order#o-1")}); err != nil {
		t.Errorf("a write on another item of the partition: %v", err)
	}
	if err := st.ValidateAttached("ns#k", []any{write("ns#k")}); !errors.Is(err, driver.ErrAttachUnsupported) || !strings.Contains(err.Error(), "own item") {
		t.Errorf("a write on the record's own item: %v, want ErrAttachUnsupported", err)
	}
}
