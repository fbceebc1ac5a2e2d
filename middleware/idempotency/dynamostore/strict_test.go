package dynamostore_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// TestStrictItems: in every data format, on an id table and a sort-key
// table, a strict guard quarantines a lapsed claim in place (status
// INPROGRESS and the owner kept, the lease set to the expiry in epoch
// milliseconds, quarantined set to the guard's now) without running the
// operation; the owner's late completion removes the mark and the result
// is replayed in the format's encoding.
func TestStrictItems(t *testing.T) {
	formats := []dynamostore.DataFormat{dynamostore.DataJSON, dynamostore.DataPowertoolsPython, dynamostore.DataPowertoolsTypeScript}
	for _, layout := range []string{"id", "sort key"} {
		for _, f := range formats {
			t.Run(layout+"/"+f.String(), func(t *testing.T) {
				var e env
				item := func(id string) map[string]types.AttributeValue { return e.raw(t, e.table, id) }
				if layout == "id" {
					e = newEnv(t, dynamostore.WithDataFormat(f))
				} else {
					e = newSortKeyEnv(t, dynamostore.WithDataFormat(f))
					item = func(id string) map[string]types.AttributeValue { return e.item(t, "idempotency#"+function, id) }
				}
				now := time.Now().Truncate(time.Millisecond)
				g, err := idempotency.New(idempotency.Config{Store: e.store, Namespace: "strict", Strict: true,
					Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				k := idempotency.RawKey([]byte(`"pay-1"`))
				id := rawID(t, g, `"pay-1"`)
				dead := idempotency.Record{ID: id, Status: idempotency.StatusInProgress, ExpiresAt: now.Add(time.Hour),
					LeaseUntil: now.Add(-time.Minute), Owner: "dead-worker"}
				if _, loaded, err := e.store.Acquire(context.Background(), dead, now.Add(-2*time.Minute)); err != nil || loaded {
					t.Fatalf("seed the lapsed claim: loaded=%v, %v", loaded, err)
				}
				ran := false
				op := func(context.Context) (map[string]int, error) { ran = true; return map[string]int{"n": 2}, nil }
				if _, err := idempotency.Do(context.Background(), g, k, op); !errors.Is(err, idempotency.ErrQuarantined) || ran {
					t.Fatalf("strict call on a lapsed claim: %v, ran %v; want ErrQuarantined, not run", err, ran)
				}
				it := item(id)
				exp := strconv.FormatInt(dead.ExpiresAt.Unix(), 10)
				want := map[string]string{"status": "S:INPROGRESS", "lease_owner": "S:dead-worker",
					"in_progress_expiration": "N:" + exp + "000", "quarantined": "N:" + strconv.FormatInt(now.UnixMilli(), 10)}
				for name, w := range want {
					if got := attrString(it[name]); got != w {
						t.Errorf("quarantined item: %s = %s, want %s", name, got, w)
					}
				}

				done := dead
				done.Status, done.Data, done.ExpiresAt = idempotency.StatusCompleted, []byte(`{"n":1}`), now.Add(2*time.Hour)
				if err := e.store.Complete(context.Background(), done); err != nil {
					t.Fatalf("late completion of the quarantined claim: %v", err)
				}
				if _, ok := item(id)["quarantined"]; ok {
					t.Error("the completion left the quarantined attribute")
				}
				got, err := idempotency.Do(context.Background(), g, k, op)
				if err != nil || got["n"] != 1 || ran {
					t.Errorf("after the completion: %v, %v, ran %v; want the stored result replayed", got, err, ran)
				}
			})
		}
	}
}

func attrString(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case nil:
		return "absent"
	}
	return "other"
}
