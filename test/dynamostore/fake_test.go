package dynamostore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// fakeAPI answers each call with the next of its scripted replies and keeps
// the inputs. A call without a reply left fails the test.
type fakeAPI struct {
	t  *testing.T
	mu sync.Mutex

	puts     []*dynamodb.PutItemInput
	gets     []*dynamodb.GetItemInput
	updates  []*dynamodb.UpdateItemInput
	transact []*dynamodb.TransactWriteItemsInput

	putReplies      []reply[dynamodb.PutItemOutput]
	getReplies      []reply[dynamodb.GetItemOutput]
	updateReplies   []reply[dynamodb.UpdateItemOutput]
	transactReplies []reply[dynamodb.TransactWriteItemsOutput]
}

type reply[T any] struct {
	out *T
	err error
}

func ok[T any](out *T) reply[T]      { return reply[T]{out: out} }
func fail[T any](err error) reply[T] { return reply[T]{err: err} }

func next[T any](t *testing.T, op string, replies *[]reply[T]) (*T, error) {
	t.Helper()
	if len(*replies) == 0 {
		t.Errorf("unexpected %s call", op)
		return nil, fmt.Errorf("fake: unexpected %s", op)
	}
	r := (*replies)[0]
	*replies = (*replies)[1:]
	if r.out == nil && r.err == nil {
		r.out = new(T)
	}
	return r.out, r.err
}

func (f *fakeAPI) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts = append(f.puts, in)
	return next(f.t, "PutItem", &f.putReplies)
}

func (f *fakeAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, in)
	return next(f.t, "GetItem", &f.getReplies)
}

func (f *fakeAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, in)
	return next(f.t, "UpdateItem", &f.updateReplies)
}

func (f *fakeAPI) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.transact = append(f.transact, in)
	return next(f.t, "TransactWriteItems", &f.transactReplies)
}

func (f *fakeAPI) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.puts) + len(f.gets) + len(f.updates) + len(f.transact)
}

func newFake(t *testing.T, f *fakeAPI, opts ...dynamostore.Option) *dynamostore.Store {
	t.Helper()
	f.t = t
	s, err := dynamostore.New(f, "records", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Unix(1_700_000_000, 0)

func record(key string) driver.Record {
	return driver.Record{
		ID:         key,
		Status:     driver.StatusInProgress,
		ExpiresAt:  t0.Add(24 * time.Hour),
		LeaseUntil: t0.Add(time.Minute),
		Owner:      "me",
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue  { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }

// completedItem is a completed record as Powertools for Python writes it.
func completedItem(key, data string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"id":                     s(key),
		"status":                 s("COMPLETED"),
		"expiration":             n(t0.Add(time.Hour).Unix()),
		"in_progress_expiration": n(t0.UnixMilli()),
		"data":                   s(data),
	}
}

// transient are errors a store call can fail with that say nothing about
// the record.
func transient() map[string]error {
	return map[string]error{
		"ProvisionedThroughputExceeded": &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")},
		"Throttling":                    &smithy.GenericAPIError{Code: "ThrottlingException", Message: "rate exceeded"},
		"RequestLimitExceeded":          &types.RequestLimitExceeded{Message: aws.String("account limit")},
		"InternalServerError":           &types.InternalServerError{Message: aws.String("oops")},
		"HTTP503": &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}},
			Err:      &smithy.GenericAPIError{Code: "ServiceUnavailable", Fault: smithy.FaultServer},
		}},
		"Timeout": fmt.Errorf("operation error DynamoDB: PutItem: %w", context.DeadlineExceeded),
	}
}

func TestNewValidates(t *testing.T) {
	_, err := dynamostore.New(nil, "",
		dynamostore.WithCompressAbove(-1),
		dynamostore.WithItemLimit(500<<10),
		dynamostore.WithAttributes(dynamostore.Attributes{Owner: "status"}))
	if err == nil {
		t.Fatal("New accepted a nil API, an empty table and bad options")
	}
	for _, want := range []string{"API is nil", "table name is empty", "WithCompressAbove(-1)", "WithItemLimit(512000)", `"status" is used twice`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New error %q does not mention %q", err, want)
		}
	}
}

// TestAcquireRequest: a new key is claimed with one PutItem whose condition
// is attribute_not_exists alone; a record the claim may take (here expired)
// is taken by a second PutItem under the full claim condition, which returns
// the record it replaced.
func TestAcquireRequest(t *testing.T) {
	rec := record("ns#k")
	rec.Validation = "digest"
	now := t0.Add(1500 * time.Millisecond)
	wantItem := map[string]types.AttributeValue{
		"id": s("ns#k"), "status": s("INPROGRESS"), "validation": s("digest"), "lease_owner": s("me"),
		"expiration": n(rec.ExpiresAt.Unix()), "in_progress_expiration": n(rec.LeaseUntil.UnixMilli()),
	}
	t.Run("new key", func(t *testing.T) {
		f := &fakeAPI{putReplies: []reply[dynamodb.PutItemOutput]{ok(&dynamodb.PutItemOutput{})}}
		prev, loaded, err := newFake(t, f).Acquire(context.Background(), rec, now, driver.Takeover)
		if err != nil || loaded || !reflect.DeepEqual(prev, driver.Record{}) {
			t.Fatalf("Acquire = %+v, %v, %v; want zero record, false, nil", prev, loaded, err)
		}
		in := f.puts[0]
		if got, want := aws.ToString(in.ConditionExpression), "attribute_not_exists(#id)"; got != want {
			t.Errorf("condition = %q, want %q", got, want)
		}
		if !reflect.DeepEqual(in.ExpressionAttributeNames, map[string]string{"#id": "id"}) || in.ExpressionAttributeValues != nil {
			t.Errorf("names %v, values %s; want #id only and no values", in.ExpressionAttributeNames, show(in.ExpressionAttributeValues))
		}
		if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
			t.Errorf("on failure %q; want ALL_OLD", in.ReturnValuesOnConditionCheckFailure)
		}
		if !reflect.DeepEqual(in.Item, wantItem) {
			t.Errorf("item = %s, want %s", show(in.Item), show(wantItem))
		}
	})
	t.Run("takeover", func(t *testing.T) {
		expired := completedItem("ns#k", `{"n":1}`)
		expired["expiration"] = n(now.Unix() - 1)
		f := &fakeAPI{putReplies: []reply[dynamodb.PutItemOutput]{
			fail[dynamodb.PutItemOutput](ccf(expired)), ok(&dynamodb.PutItemOutput{Attributes: expired}),
		}}
		prev, loaded, err := newFake(t, f).Acquire(context.Background(), rec, now, driver.Takeover)
		if err != nil || loaded || prev.Status != driver.StatusCompleted {
			t.Fatalf("Acquire = %+v, %v, %v; want the replaced record, false, nil", prev, loaded, err)
		}
		if len(f.puts) != 2 {
			t.Fatalf("%d PutItem calls, want 2", len(f.puts))
		}
		in := f.puts[1]
		if got, want := aws.ToString(in.ConditionExpression),
			"attribute_not_exists(#id) OR #exp < :now OR (#st = :inprogress AND #lease < :now_ms)"; got != want {
			t.Errorf("condition = %q, want %q", got, want)
		}
		if in.ReturnValues != types.ReturnValueAllOld || in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
			t.Errorf("ReturnValues = %q, on failure %q; want ALL_OLD for both", in.ReturnValues, in.ReturnValuesOnConditionCheckFailure)
		}
		if !reflect.DeepEqual(in.Item, wantItem) {
			t.Errorf("item = %s, want %s", show(in.Item), show(wantItem))
		}
		wantValues := map[string]types.AttributeValue{":now": n(now.Unix()), ":now_ms": n(now.UnixMilli()), ":inprogress": s("INPROGRESS")}
		if !reflect.DeepEqual(in.ExpressionAttributeValues, wantValues) {
			t.Errorf("values = %s, want %s", show(in.ExpressionAttributeValues), show(wantValues))
		}
	})
}

func show(m map[string]types.AttributeValue) string {
	var b strings.Builder
	for k, v := range m {
		fmt.Fprintf(&b, "%s=%#v ", k, v)
	}
	return b.String()
}

// TestAcquireErrors: a failing store call is never a claim.
func TestAcquireErrors(t *testing.T) {
	for name, cause := range transient() {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{putReplies: []reply[dynamodb.PutItemOutput]{fail[dynamodb.PutItemOutput](cause)}}
			st := newFake(t, f)
			prev, loaded, err := st.Acquire(context.Background(), record("ns#k"), t0, driver.Takeover)
			var se *idempotency.StoreError
			if !errors.As(err, &se) || se.Op != "acquire" || se.ID != "ns#k" {
				t.Fatalf("Acquire error = %v, want *idempotency.StoreError{Op: acquire, Key: ns#k}", err)
			}
			if !errors.Is(err, cause) {
				t.Errorf("Acquire error %v does not wrap the cause %v", err, cause)
			}
			if loaded || prev.ID != "" {
				t.Errorf("Acquire returned %+v, loaded=%v with its error", prev, loaded)
			}
		})
	}
}

// TestGuardFailsClosed: through the guard, a throttled claim runs nothing.
func TestGuardFailsClosed(t *testing.T) {
	f := &fakeAPI{putReplies: []reply[dynamodb.PutItemOutput]{fail[dynamodb.PutItemOutput](transient()["Throttling"])}}
	g, err := idempotency.New(idempotency.Config{Store: newFake(t, f), Namespace: "ns", Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	_, err = idempotency.Do(context.Background(), g, idempotency.Raw([]byte("k")), func(context.Context) (int, error) { ran = true; return 1, nil })
	var se *idempotency.StoreError
	if ran || !errors.As(err, &se) {
		t.Fatalf("Do with a throttled store: ran=%v err=%v; want not run, *StoreError", ran, err)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func ccf(item map[string]types.AttributeValue) error {
	return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: item}
}

// TestAcquireWithoutItem covers servers that leave the existing record out
// of a failed condition.
func TestAcquireWithoutItem(t *testing.T) {
	completed := completedItem("ns#k", `{"n":1}`)
	expired := completedItem("ns#k", `{"n":1}`)
	expired["expiration"] = n(t0.Unix() - 1)
	failed := fail[dynamodb.PutItemOutput](ccf(nil))
	for _, tc := range []struct {
		name       string
		puts       []reply[dynamodb.PutItemOutput]
		gets       []reply[dynamodb.GetItemOutput]
		wantLoaded bool
		wantErr    bool
		wantData   string
	}{
		{name: "read with GetItem", puts: []reply[dynamodb.PutItemOutput]{failed},
			gets: []reply[dynamodb.GetItemOutput]{ok(&dynamodb.GetItemOutput{Item: completed})}, wantLoaded: true, wantData: `{"n":1}`},
		{name: "vanished, claimed again", puts: []reply[dynamodb.PutItemOutput]{failed, ok(&dynamodb.PutItemOutput{})},
			gets: []reply[dynamodb.GetItemOutput]{ok(&dynamodb.GetItemOutput{})}},
		{name: "expired since, claimed again", puts: []reply[dynamodb.PutItemOutput]{failed, ok(&dynamodb.PutItemOutput{})},
			gets: []reply[dynamodb.GetItemOutput]{ok(&dynamodb.GetItemOutput{Item: expired})}},
		{name: "no expiration attribute: not claimable", puts: []reply[dynamodb.PutItemOutput]{failed},
			gets: []reply[dynamodb.GetItemOutput]{ok(&dynamodb.GetItemOutput{Item: map[string]types.AttributeValue{
				"id": s("ns#k"), "status": s("COMPLETED"), "data": s(`2`)}})}, wantLoaded: true, wantData: `2`},
		{name: "vanished three times", puts: []reply[dynamodb.PutItemOutput]{failed, failed, failed},
			gets: []reply[dynamodb.GetItemOutput]{ok(&dynamodb.GetItemOutput{}), ok(&dynamodb.GetItemOutput{}), ok(&dynamodb.GetItemOutput{})}, wantErr: true},
		{name: "read fails", puts: []reply[dynamodb.PutItemOutput]{failed},
			gets: []reply[dynamodb.GetItemOutput]{fail[dynamodb.GetItemOutput](transient()["Throttling"])}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{putReplies: tc.puts, getReplies: tc.gets}
			st := newFake(t, f)
			got, loaded, err := st.Acquire(context.Background(), record("ns#k"), t0, driver.Takeover)
			if tc.wantErr {
				var se *idempotency.StoreError
				if !errors.As(err, &se) || loaded {
					t.Fatalf("Acquire = loaded %v, err %v; want a *StoreError", loaded, err)
				}
				return
			}
			if err != nil || loaded != tc.wantLoaded || string(got.Data) != tc.wantData {
				t.Fatalf("Acquire = %+v, loaded %v, err %v; want loaded %v, data %q", got, loaded, err, tc.wantLoaded, tc.wantData)
			}
			for _, g := range f.gets {
				if !aws.ToBool(g.ConsistentRead) {
					t.Error("the fallback GetItem is not a consistent read")
				}
			}
			if len(f.putReplies)+len(f.getReplies) != 0 {
				t.Errorf("replies left unused: %d puts, %d gets", len(f.putReplies), len(f.getReplies))
			}
		})
	}
}

func TestFencedWritesWithoutOwner(t *testing.T) {
	f := &fakeAPI{}
	st := newFake(t, f)
	rec := record("ns#k")
	rec.Owner = ""
	if _, _, err := st.Acquire(context.Background(), rec, t0, driver.Takeover); err == nil || !strings.Contains(err.Error(), "no owner") {
		t.Errorf("Acquire without an owner: err = %v", err)
	}
	if _, err := st.Complete(context.Background(), rec); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Complete without an owner: err = %v, want ErrLeaseLost", err)
	}
	if err := st.Release(context.Background(), rec.ID, ""); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Release without an owner: err = %v, want ErrLeaseLost", err)
	}
	if f.calls() != 0 {
		t.Errorf("%d calls made for records without an owner, want 0", f.calls())
	}
}

func TestCompleteErrors(t *testing.T) {
	lost := map[string]types.AttributeValue{"id": s("ns#k"), "status": s("INPROGRESS"), "lease_owner": s("other")}
	tests := map[string]struct {
		err         error
		wantLost    bool
		wantMessage string
	}{
		"taken over":         {err: ccf(lost), wantLost: true, wantMessage: "taken over by another owner"},
		"completed":          {err: ccf(completedItem("ns#k", "1")), wantLost: true, wantMessage: "record is COMPLETED"},
		"gone (no Item)":     {err: ccf(nil), wantLost: true, wantMessage: "gone"},
		"ownerless (legacy)": {err: ccf(map[string]types.AttributeValue{"status": s("INPROGRESS")}), wantLost: true, wantMessage: "no lease owner"},
		"released":           {err: ccf(map[string]types.AttributeValue{"status": s("INPROGRESS"), "release_call": s("c")}), wantLost: true, wantMessage: "claim was released"},
	}
	for name, cause := range transient() {
		tests[name] = struct {
			err         error
			wantLost    bool
			wantMessage string
		}{err: cause}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{
				updateReplies: []reply[dynamodb.UpdateItemOutput]{fail[dynamodb.UpdateItemOutput](tc.err), fail[dynamodb.UpdateItemOutput](tc.err)},
			}
			st := newFake(t, f)
			rec := record("ns#k")
			rec.Status, rec.Data = driver.StatusCompleted, []byte(`1`)
			for op, err := range map[string]error{
				"complete": errOf(st.Complete(context.Background(), rec)),
				"release":  st.Release(context.Background(), rec.ID, rec.Owner),
			} {
				var se *idempotency.StoreError
				if !errors.As(err, &se) || se.Op != op || se.ID != rec.ID {
					t.Errorf("%s error = %v, want *StoreError{Op: %s}", op, err, op)
				}
				if errors.Is(err, driver.ErrLeaseLost) != tc.wantLost {
					t.Errorf("%s error = %v; wraps ErrLeaseLost = %v, want %v", op, err, !tc.wantLost, tc.wantLost)
				}
				if !strings.Contains(err.Error(), tc.wantMessage) {
					t.Errorf("%s error = %q, want it to say %q", op, err, tc.wantMessage)
				}
			}
		})
	}
}

// TestCompleteRequest checks the fenced update: condition, names, values.
func TestCompleteRequest(t *testing.T) {
	f := &fakeAPI{updateReplies: []reply[dynamodb.UpdateItemOutput]{ok(&dynamodb.UpdateItemOutput{})}}
	st := newFake(t, f, dynamostore.WithAttributes(dynamostore.Attributes{Owner: "owner", Data: "result"}))
	rec := record("ns#k")
	rec.Status, rec.Data = driver.StatusCompleted, []byte(`{"a":1}`)
	if _, err := st.Complete(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	in := f.updates[0]
	if got := aws.ToString(in.ConditionExpression); got != "#st = :inprogress AND #own = :me" {
		t.Errorf("condition = %q", got)
	}
	// Under the fence the record is the claim's own item, so no attribute
	// of a result is there to remove; only the quarantine mark may be.
	if got := aws.ToString(in.UpdateExpression); got != "SET #st = :completed, #exp = :exp, #data = :data, #fmt = :fmt REMOVE #quar" {
		t.Errorf("update = %q", got)
	}
	if in.ExpressionAttributeNames["#own"] != "owner" || in.ExpressionAttributeNames["#data"] != "result" ||
		in.ExpressionAttributeNames["#quar"] != driver.AttrQuarantined {
		t.Errorf("names = %v, want the configured attribute names", in.ExpressionAttributeNames)
	}
	want := map[string]types.AttributeValue{
		":completed": s("COMPLETED"), ":inprogress": s("INPROGRESS"), ":me": s("me"),
		":exp": n(rec.ExpiresAt.Unix()), ":data": s(`{"a":1}`), ":fmt": s("json"),
	}
	if !reflect.DeepEqual(in.ExpressionAttributeValues, want) {
		t.Errorf("values = %s, want %s", show(in.ExpressionAttributeValues), show(want))
	}
}

// TestCompleteTooLarge: when DynamoDB refuses the item's size after all, the
// record is completed without its result rather than left to re-run.
func TestCompleteTooLarge(t *testing.T) {
	tooBig := &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size"}
	var logs bytes.Buffer
	f := &fakeAPI{updateReplies: []reply[dynamodb.UpdateItemOutput]{fail[dynamodb.UpdateItemOutput](tooBig), ok(&dynamodb.UpdateItemOutput{})}}
	st := newFake(t, f, dynamostore.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	rec := record("ns#k")
	rec.Status, rec.Data = driver.StatusCompleted, []byte(`"big"`)
	if _, err := st.Complete(context.Background(), rec); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if len(f.updates) != 2 {
		t.Fatalf("%d updates, want 2", len(f.updates))
	}
	retry := f.updates[1]
	if got := aws.ToString(retry.UpdateExpression); !strings.Contains(got, "#omit = :omit") || strings.Contains(got, ":data") {
		t.Errorf("retry update = %q, want the result left out and flagged", got)
	}
	if got, want := aws.ToString(retry.ConditionExpression), "#own = :me AND (#st = :inprogress OR (#st = :completed AND attribute_not_exists(#data)))"; got != want {
		t.Errorf("retry condition = %q, want %q", got, want)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "WITHOUT its result") {
		t.Errorf("no error logged for the omitted result; log:\n%s", logs.String())
	}
}

// TestPlacement: small results stay JSON strings, large ones are compressed,
// those that do not fit even compressed are left out and flagged.
func TestPlacement(t *testing.T) {
	compressible := []byte(`"` + strings.Repeat("summary ", 4<<10) + `"`) // 32 KiB
	random := randomJSON(t, 40<<10)
	for _, tc := range []struct {
		name     string
		data     []byte
		opts     []dynamostore.Option
		wantType string // S, B or omitted
		wantEnc  bool
	}{
		{name: "small", data: []byte(`{"summary":"short"}`), wantType: "S"},
		{name: "below threshold", data: compressible, wantType: "S"},
		{name: "above threshold", data: compressible, opts: []dynamostore.Option{dynamostore.WithCompressAbove(1 << 10)}, wantType: "B", wantEnc: true},
		{name: "too big plain, fits compressed", data: compressible, opts: []dynamostore.Option{dynamostore.WithItemLimit(16 << 10)}, wantType: "B", wantEnc: true},
		{name: "incompressible, fits", data: random, opts: []dynamostore.Option{dynamostore.WithCompressAbove(1 << 10)}, wantType: "B", wantEnc: true},
		{name: "too big even compressed", data: random, opts: []dynamostore.Option{dynamostore.WithItemLimit(24 << 10)}, wantType: "omitted"},
		{name: "not UTF-8", data: []byte{'"', 0xff, '"'}, wantType: "B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{updateReplies: []reply[dynamodb.UpdateItemOutput]{ok(&dynamodb.UpdateItemOutput{})}}
			st := newFake(t, f, append(tc.opts, dynamostore.WithLogger(discard()))...)
			rec := record("ns#k")
			rec.Status, rec.Data = driver.StatusCompleted, tc.data
			if _, err := st.Complete(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			vals := f.updates[0].ExpressionAttributeValues
			got := "omitted"
			switch v := vals[":data"].(type) {
			case *types.AttributeValueMemberS:
				got = "S"
				if v.Value != string(tc.data) {
					t.Error("the stored string is not the result")
				}
			case *types.AttributeValueMemberB:
				got = "B"
			case nil:
				if o, _ := vals[":omit"].(*types.AttributeValueMemberBOOL); o == nil || !o.Value {
					t.Error("result left out without the flag")
				}
			}
			if got != tc.wantType {
				t.Errorf("result stored as %s, want %s", got, tc.wantType)
			}
			if _, enc := vals[":enc"]; enc != tc.wantEnc {
				t.Errorf("encoding flag set = %v, want %v", enc, tc.wantEnc)
			}
		})
	}
}

func TestTransactionCancelled(t *testing.T) {
	reason := func(code string) types.CancellationReason {
		return types.CancellationReason{Code: aws.String(code), Message: aws.String(code + " message")}
	}
	tests := []struct {
		name       string
		reasons    []types.CancellationReason
		wantLost   bool
		wantFailed []int // FailedConditions; nil: no *TransactionError
	}{
		{name: "lease lost", reasons: []types.CancellationReason{reason("ConditionalCheckFailed"), reason("None")}, wantLost: true},
		{name: "lease lost and app condition", reasons: []types.CancellationReason{reason("ConditionalCheckFailed"), reason("ConditionalCheckFailed")}, wantLost: true},
		{name: "app condition", reasons: []types.CancellationReason{reason("None"), reason("None"), reason("ConditionalCheckFailed")}, wantFailed: []int{1}},
		{name: "conflict", reasons: []types.CancellationReason{reason("None"), reason("TransactionConflict")}, wantFailed: []int{}},
		{name: "throttled", reasons: []types.CancellationReason{reason("ThrottlingError"), reason("None")}, wantFailed: []int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cancelled := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: tc.reasons}
			f := &fakeAPI{transactReplies: []reply[dynamodb.TransactWriteItemsOutput]{fail[dynamodb.TransactWriteItemsOutput](cancelled)}}
			st := newFake(t, f)
			rec := record("ns#k")
			rec.Status, rec.Data = driver.StatusCompleted, []byte(`1`)
			for range len(tc.reasons) - 1 {
				rec.Attached = append(rec.Attached, summaryPut("summaries", "doc", 1))
			}
			_, err := st.Complete(context.Background(), rec)
			var se *idempotency.StoreError
			if !errors.As(err, &se) || se.Op != "complete" {
				t.Fatalf("Complete error = %v, want a *StoreError", err)
			}
			if got := errors.Is(err, driver.ErrLeaseLost); got != tc.wantLost {
				t.Errorf("error %v: wraps ErrLeaseLost = %v, want %v", err, got, tc.wantLost)
			}
			var te *dynamostore.TransactionError
			if got := errors.As(err, &te); got != (tc.wantFailed != nil) {
				t.Fatalf("error %v: is a *TransactionError = %v, want %v", err, got, tc.wantFailed != nil)
			}
			if te != nil {
				if got := te.FailedConditions(); len(got) != len(tc.wantFailed) || len(got) > 0 && !reflect.DeepEqual(got, tc.wantFailed) {
					t.Errorf("FailedConditions = %v, want %v", got, tc.wantFailed)
				}
				if !errors.Is(err, cancelled) {
					t.Error("the *TransactionError does not wrap the SDK's exception")
				}
			}
		})
	}
}

func TestAttachedWrites(t *testing.T) {
	put := summaryPut("summaries", "doc", 1)
	tests := []struct {
		name     string
		attached []any
		wantErr  string
	}{
		{name: "value and pointer", attached: []any{put, &put}},
		{name: "99 writes", attached: repeat(put, dynamostore.MaxTransactItems-1)},
		{name: "100 writes", attached: repeat(put, dynamostore.MaxTransactItems), wantErr: "more than the 100"},
		{name: "unknown type", attached: []any{put, "PUT summaries"}, wantErr: "attached write 1 is a string"},
		{name: "nil pointer", attached: []any{(*types.TransactWriteItem)(nil)}, wantErr: "nil *types.TransactWriteItem"},
		{name: "empty write", attached: []any{types.TransactWriteItem{}}, wantErr: "has 0 of Put"},
		{name: "two operations", attached: []any{types.TransactWriteItem{Put: put.Put, Delete: &types.Delete{}}}, wantErr: "has 2 of Put"},
		{name: "no table", attached: []any{types.TransactWriteItem{Put: &types.Put{Item: put.Put.Item}}}, wantErr: "names no table"},
		{name: "no item", attached: []any{types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String("summaries")}}}, wantErr: "names no item"},
		{name: "update without expression", attached: []any{types.TransactWriteItem{Update: &types.Update{TableName: aws.String("summaries"),
			Key: put.Put.Item}}}, wantErr: "without an UpdateExpression"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{transactReplies: []reply[dynamodb.TransactWriteItemsOutput]{ok(&dynamodb.TransactWriteItemsOutput{})}}
			st := newFake(t, f)
			rec := record("ns#k")
			rec.Status, rec.Data, rec.Attached = driver.StatusCompleted, []byte(`1`), tc.attached
			_, err := st.Complete(context.Background(), rec)
			if tc.wantErr != "" {
				if !errors.Is(err, driver.ErrAttachUnsupported) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Complete error = %v, want ErrAttachUnsupported saying %q", err, tc.wantErr)
				}
				if f.calls() != 0 {
					t.Errorf("%d calls made for refused attachments, want 0", f.calls())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.transact) != 1 || len(f.updates) != 0 {
				t.Fatalf("%d transactions and %d updates, want one transaction", len(f.transact), len(f.updates))
			}
			items := f.transact[0].TransactItems
			if len(items) != 1+len(tc.attached) || items[0].Update == nil || aws.ToString(items[0].Update.ConditionExpression) != "#st = :inprogress AND #own = :me" {
				t.Fatalf("transaction = %d items, first %+v; want the fenced update first, then the attached writes", len(items), items[0])
			}
			if items[0].Update.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
				t.Error("the record's update does not ask for the old item on failure")
			}
		})
	}
}

func repeat(v any, k int) []any {
	out := make([]any, k)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestValidateAttached(t *testing.T) {
	st := newFake(t, &fakeAPI{})
	put := summaryPut("summaries", "doc", 1)
	own := types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String("records"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "ns#k"}}}}
	if err := st.ValidateAttached("ns#k", []any{put}); err != nil {
		t.Errorf("a well-formed write: %v", err)
	}
	if err := st.ValidateAttached("ns#k", []any{put, own}); !errors.Is(err, driver.ErrAttachUnsupported) || !strings.Contains(err.Error(), "own item") {
		t.Errorf("a write on the record's own item: %v, want ErrAttachUnsupported", err)
	}
	if err := st.ValidateAttached("ns#k", []any{types.TransactWriteItem{}}); !errors.Is(err, driver.ErrAttachUnsupported) {
		t.Errorf("an empty write: %v, want ErrAttachUnsupported", err)
	}
}

// errOf is the error of a call that returns a value and an error.
func errOf[T any](_ T, err error) error { return err }

// TestAcquireFirstAttempt: what the first PutItem (a key with no record)
// decides from the record it returns, and what it leaves to a second one
// under the claim condition.
func TestAcquireFirstAttempt(t *testing.T) {
	inProgress := func(owner string, lease time.Time) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"id": s("ns#k"), "status": s("INPROGRESS"), "lease_owner": s(owner),
			"expiration": n(t0.Add(time.Hour).Unix()), "in_progress_expiration": n(lease.UnixMilli()),
		}
	}
	badNumber := inProgress("other", t0.Add(time.Minute))
	badNumber["expiration"] = s("soon")
	badData := completedItem("ns#k", `{"n":1}`)
	badData["data_encoding"] = s("zstd")
	live := inProgress("other", t0.Add(time.Minute))
	fractional := completedItem("ns#k", `{"n":1}`)
	fractional["expiration"] = &types.AttributeValueMemberN{Value: "1699999999.99999999"} // before t0; a float64 rounds it to t0
	for _, tc := range []struct {
		name       string
		found      map[string]types.AttributeValue
		then       []reply[dynamodb.PutItemOutput] // the second attempt's replies
		wantLoaded bool
		wantErr    bool
		wantPrev   driver.Status // the status of the record a claim replaced
	}{
		{name: "completed: replayed", found: completedItem("ns#k", `{"n":1}`), wantLoaded: true},
		{name: "in progress, lease live: blocked", found: live, wantLoaded: true},
		{name: "our own claim, applied by a lost attempt: claimed", found: inProgress("me", t0.Add(time.Minute))},
		{name: "lapsed lease: the claim condition takes it", found: inProgress("other", t0.Add(-time.Second)),
			then: []reply[dynamodb.PutItemOutput]{ok(&dynamodb.PutItemOutput{})}},
		{name: "a number that does not read: the server decides", found: badNumber,
			then: []reply[dynamodb.PutItemOutput]{fail[dynamodb.PutItemOutput](ccf(live))}, wantLoaded: true},
		{name: "a result that does not read, not claimable: an error", found: badData, wantErr: true},
		{name: "an expiry that is not an integer: the server compares it exactly", found: fractional,
			then: []reply[dynamodb.PutItemOutput]{ok(&dynamodb.PutItemOutput{Attributes: fractional})}, wantPrev: "COMPLETED"},
		{name: "the second attempt retried by the SDK finds our claim: it replaced the record first found", found: inProgress("other", t0.Add(-time.Second)),
			then: []reply[dynamodb.PutItemOutput]{fail[dynamodb.PutItemOutput](ccf(inProgress("me", t0.Add(time.Minute))))}, wantPrev: "INPROGRESS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{putReplies: append([]reply[dynamodb.PutItemOutput]{fail[dynamodb.PutItemOutput](ccf(tc.found))}, tc.then...)}
			prev, loaded, err := newFake(t, f).Acquire(context.Background(), record("ns#k"), t0, driver.Takeover)
			if !loaded && prev.Status != tc.wantPrev {
				t.Errorf("the claim replaced %+v, want a record %q", prev, tc.wantPrev)
			}
			var se *idempotency.StoreError
			if tc.wantErr != errors.As(err, &se) || !tc.wantErr && err != nil || loaded != tc.wantLoaded {
				t.Fatalf("Acquire = loaded %v, err %v; want loaded %v, a *StoreError %v", loaded, err, tc.wantLoaded, tc.wantErr)
			}
			if want := 1 + len(tc.then); len(f.puts) != want {
				t.Errorf("%d PutItem calls, want %d", len(f.puts), want)
			}
			for i, in := range f.puts[1:] {
				if !strings.HasPrefix(aws.ToString(in.ConditionExpression), "attribute_not_exists(#id) OR ") {
					t.Errorf("attempt %d condition %q, want the claim condition", i+2, aws.ToString(in.ConditionExpression))
				}
			}
		})
	}
}
