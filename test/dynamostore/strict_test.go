package dynamostore_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
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
				k := idempotency.Raw([]byte(`"pay-1"`))
				id := rawID(t, g, `"pay-1"`)
				dead := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour),
					LeaseUntil: now.Add(-time.Minute), Owner: "dead-worker"}
				if _, loaded, err := e.store.Acquire(context.Background(), dead, now.Add(-2*time.Minute), driver.Takeover); err != nil || loaded {
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
				done.Status, done.Data, done.ExpiresAt = driver.StatusCompleted, []byte(`{"n":1}`), now.Add(2*time.Hour)
				if _, err := e.store.Complete(context.Background(), done); err != nil {
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

// TestStrictAcrossProcesses: a strict guard and a default guard in two
// processes on one table (storetest.StrictAcrossProcesses): the strict
// call outlives its lease, the default call does not run the operation.
func TestStrictAcrossProcesses(t *testing.T) {
	const envTable = "SQSONCE_TEST_STRICT_TABLE"
	storetest.StrictAcrossProcesses(t, func(t *testing.T) (driver.Store, []string) {
		db := moto.DynamoDB(t) // in a child, the parent's server (motoserver.EnvEndpoint)
		table := os.Getenv(envTable)
		if table == "" {
			table = motoserver.NewTable(t, db)
		}
		s, err := dynamostore.New(db, table)
		if err != nil {
			t.Fatal(err)
		}
		return s, []string{motoserver.EnvEndpoint + "=" + moto.Endpoint(t), envTable + "=" + table}
	})
}

// claimCondition2e43541 is the claim condition of sqsonce's dynamostore as
// of commit 2e43541, before strict claims were written as they are now:
// what an older release, still running beside this one, sends. It is
// Powertools' condition too.
const claimCondition2e43541 = "attribute_not_exists(#id) OR #exp < :now OR (#st = :inprogress AND #lease < :now_ms)"

// olderClaim sends the claim of an older release (claimCondition2e43541,
// its item and values) of id at now, and reports whether it claimed it.
func olderClaim(t *testing.T, e env, id string, now time.Time) bool {
	t.Helper()
	_, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(e.table),
		Item: map[string]types.AttributeValue{
			"id": s(id), "status": s("INPROGRESS"), "lease_owner": s("older-release"),
			"expiration":             &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(time.Hour).Unix(), 10)},
			"in_progress_expiration": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(time.Minute).UnixMilli(), 10)},
		},
		ConditionExpression:      aws.String(claimCondition2e43541),
		ExpressionAttributeNames: map[string]string{"#id": "id", "#exp": "expiration", "#st": "status", "#lease": "in_progress_expiration"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":        &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
			":now_ms":     &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
			":inprogress": s("INPROGRESS"),
		},
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		t.Fatal(err)
	}
	return err == nil
}

// TestOlderReleaseKeepsOffStrictClaim: the claim an older release sends
// (claimCondition2e43541) does not take over a strict claim whose lease
// lapsed (storetest.OlderReleaseKeepsOff).
func TestOlderReleaseKeepsOffStrictClaim(t *testing.T) {
	e := newEnv(t)
	storetest.OlderReleaseKeepsOff(t, e.store, func(t *testing.T, id string, now time.Time) bool { return olderClaim(t, e, id, now) })
}
