package dynamostore_test

import (
	"context"
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
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// afterApply is an HTTP client that forwards every request to the server
// and, for the first drop requests of operation op, throws the server's
// answer away and answers 500 instead: the write was applied, its response
// lost.
type afterApply struct {
	next aws.HTTPClient
	op   string
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
	if err != nil || !strings.HasSuffix(req.Header.Get("X-Amz-Target"), "."+f.op) || f.drop.Add(-1) < 0 {
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
			var events []idempotency.Event
			g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "lost", Logger: discard(),
				OnOutcome: func(_ context.Context, ev idempotency.Event) {
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
			got, err := idempotency.Do(t.Context(), g, idempotency.RawKey([]byte(`"k"`)), func(ctx context.Context) (string, error) {
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
