package dynamostore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// afterApply is an HTTP client that forwards every request to the server
// and, for the first drop requests of operation op (any operation when op
// is empty) after the first skip of them, throws the server's answer away
// and answers 500 instead: the write was applied, its response lost.
type afterApply struct {
	next aws.HTTPClient
	op   string
	skip atomic.Int32
	drop atomic.Int32
}

func (f *afterApply) option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		f.next = o.HTTPClient
		if f.next == nil {
			f.next = awshttp.NewBuildableClient()
		}
		o.HTTPClient = f
	}
}

func (f *afterApply) Do(req *http.Request) (*http.Response, error) {
	resp, err := f.next.Do(req)
	match := f.op == "" || strings.HasSuffix(req.Header.Get("X-Amz-Target"), "."+f.op)
	if err != nil || !match || f.skip.Add(-1) >= 0 || f.drop.Add(-1) < 0 {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected: the response was lost after the write"}`
	return &http.Response{
		StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}, nil
}

// TestCompletionResponseLost: the response to a completion that DynamoDB
// applied is lost, and the retry (the SDK's own for UpdateItem; the guard's
// for a transaction, with the SDK's retries off) fails its condition on
// the worker's own COMPLETED record. That is the call's success: reported
// claimed, not replayed, with no extra claim (PutItem) and no read.
func TestCompletionResponseLost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		op        string
		sdkTries  int
		attach    bool
		wantCalls map[string]int
	}{
		{"UpdateItem retried by the SDK", "UpdateItem", 3, false, map[string]int{"PutItem": 1, "UpdateItem": 2}},
		{"transaction retried by the guard", "TransactWriteItems", 1, true, map[string]int{"PutItem": 1, "TransactWriteItems": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := &motoserver.Counter{}
			fault := &afterApply{op: tc.op}
			db := moto.DynamoDB(t, calls.Option(), fault.option(), func(o *dynamodb.Options) {
				o.RetryMaxAttempts = 0
				o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
					so.MaxAttempts, so.MaxBackoff = tc.sdkTries, 20*time.Millisecond
				})
			})
			table := motoserver.NewTable(t, db)
			summaries := motoserver.NewTable(t, db)
			store, err := dynamostore.New(db, table)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var events []idempotency.Report
			g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "lost", Logger: discard(),
				OnOutcome: func(_ context.Context, ev idempotency.Report) {
					mu.Lock()
					defer mu.Unlock()
					events = append(events, ev)
				}})
			if err != nil {
				t.Fatal(err)
			}
			calls.Reset()
			fault.drop.Store(1)
			var runs atomic.Int32
			got, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"k"`)), func(ctx context.Context) (string, error) {
				runs.Add(1)
				if tc.attach {
					return "summary", dynamostore.Attach(ctx, summaryPut(summaries, "doc", 1))
				}
				return "summary", nil
			})
			if err != nil || got != "summary" || runs.Load() != 1 {
				t.Fatalf("Do = %q, %v (runs %d); want the operation's result, once", got, err, runs.Load())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(events) != 1 || events[0].Outcome != idempotency.OutcomeClaimed || !events[0].Ran {
				t.Errorf("events = %+v, want one: claimed and ran, not replayed", events)
			}
			if fault.drop.Load() >= 0 {
				t.Fatal("no response was dropped: the test proves nothing")
			}
			if c := calls.Calls(); !maps.Equal(c, tc.wantCalls) {
				t.Errorf("calls = %v, want %v: the retried completion only, no new claim, no read", c, tc.wantCalls)
			}
			item := (env{db: db}).raw(t, table, rawID(t, g, `"k"`))
			if stringOf(item["status"]) != "COMPLETED" || stringOf(item["data"]) != `"summary"` {
				t.Errorf("record = %v, want COMPLETED with the result", item)
			}
			if tc.attach && (env{db: db}).raw(t, summaries, "doc") == nil {
				t.Error("the attached write is missing")
			}
		})
	}
}

// TestReleaseResponseLost: the response to a release that DynamoDB applied
// is lost, and the SDK sends the request again. The retry is the release's
// success, not a lost lease; a new Release call is still refused, and the
// key is free: the next claim takes it and reports no record replaced.
func TestReleaseResponseLost(t *testing.T) {
	setup := func(t *testing.T) (*dynamostore.Store, *afterApply, *motoserver.Counter) {
		calls := &motoserver.Counter{}
		fault := &afterApply{} // any operation: the test does not assume which one releases
		db := moto.DynamoDB(t, calls.Option(), fault.option(), func(o *dynamodb.Options) {
			o.RetryMaxAttempts = 0
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts, so.MaxBackoff = 3, 20*time.Millisecond
			})
		})
		store, err := dynamostore.New(db, motoserver.NewTable(t, db))
		if err != nil {
			t.Fatal(err)
		}
		return store, fault, calls
	}

	t.Run("store", func(t *testing.T) {
		store, fault, calls := setup(t)
		ctx := t.Context()
		now := time.Now()
		rec := claim("ns#release-"+rand.Text(), now, time.Minute)
		if _, loaded, err := store.Acquire(ctx, rec, now, driver.Takeover); err != nil || loaded {
			t.Fatalf("Acquire: loaded=%v err=%v", loaded, err)
		}
		calls.Reset()
		fault.drop.Store(1)
		if err := store.Release(ctx, rec.ID, rec.Owner); err != nil {
			t.Fatalf("Release whose first response was lost: %v, want success", err)
		}
		if fault.drop.Load() >= 0 {
			t.Fatal("no response was dropped: the test proves nothing")
		}
		if c := calls.Calls(); len(c) != 1 || c["UpdateItem"] != 2 {
			t.Errorf("calls = %v, want the release sent twice (UpdateItem), nothing else", c)
		}
		if err := store.Release(ctx, rec.ID, rec.Owner); !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("a second Release call: %v, want ErrLeaseLost", err)
		}
		prev, loaded, err := store.Acquire(ctx, claim(rec.ID, now, time.Minute), now, driver.Takeover)
		if err != nil || loaded || prev.ID != "" {
			t.Errorf("Acquire after the release: %+v, loaded=%v, err=%v; want claimed, no record replaced", prev, loaded, err)
		}
	})

	t.Run("through the guard", func(t *testing.T) {
		store, fault, _ := setup(t)
		var mu sync.Mutex
		var events []idempotency.Report
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "lost", Logger: discard(),
			OnOutcome: func(_ context.Context, ev idempotency.Report) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, ev)
			}})
		if err != nil {
			t.Fatal(err)
		}
		fault.skip.Store(1) // the claim
		fault.drop.Store(1) // the release
		failure := errors.New("the operation failed")
		runs := 0
		op := func(context.Context) (string, error) { runs++; return "", failure }
		if _, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"k"`)), op); !errors.Is(err, failure) || errors.Is(err, driver.ErrLeaseLost) {
			t.Fatalf("Do = %v, want the operation's error alone", err)
		}
		if fault.drop.Load() >= 0 {
			t.Fatal("no response was dropped: the test proves nothing")
		}
		ok := func(context.Context) (string, error) { runs++; return "done", nil }
		if v, err := idempotency.Do(t.Context(), g, idempotency.Raw([]byte(`"k"`)), ok); err != nil || v != "done" {
			t.Fatalf("second Do = %q, %v; want the operation run again", v, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(events) != 2 || events[0].Outcome != idempotency.OutcomeReleased || events[1].Outcome != idempotency.OutcomeClaimed || runs != 2 {
			t.Errorf("events = %+v, runs %d; want released, then claimed (not taken over), two runs", events, runs)
		}
	})
}
