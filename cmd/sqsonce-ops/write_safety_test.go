package main

// release and resolve on claims without an owner, and a result the store
// cannot keep: through the command line, on the real servers.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// ownerless writes a quarantined claim without an owner, as a strict
// guard leaves one Powertools wrote.
type ownerless func(t *testing.T, rec driver.Record)

// TestOwnerlessQuarantine: a claim Powertools wrote has no owner; strict
// mode quarantines it as it is. release and resolve take --owner - (as
// inspect shows it) or --owner "", and act fenced on the record as read.
func TestOwnerlessQuarantine(t *testing.T) {
	t.Run("dynamodb", func(t *testing.T) {
		env, store, db, table := dynamoEnv(t, "orders")
		ownerlessQuarantine(t, env, store, func(t *testing.T, rec driver.Record) {
			n := func(v int64) dbtypes.AttributeValue {
				return &dbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
			}
			s := func(v string) dbtypes.AttributeValue { return &dbtypes.AttributeValueMemberS{Value: v} }
			_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]dbtypes.AttributeValue{
				driver.AttrID: s(rec.ID), driver.AttrStatus: s(string(rec.Status)),
				driver.AttrExpiration: n(rec.ExpiresAt.Unix()), driver.AttrLeaseExpiry: n(rec.LeaseUntil.UnixMilli()),
				driver.AttrQuarantined: n(rec.Quarantined.UnixMilli()),
			}})
			if err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("redis", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: redisS.Addr(t), ContextTimeoutEnabled: true})
		t.Cleanup(func() { rdb.Close() })
		prefix := "ops-" + rand.Text()[:8] + ":"
		store, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{envStore: storeRedis, envRedisURL: redisS.URL(t), envRedisKeyPrefix: prefix, envNamespace: "orders"}
		ownerlessQuarantine(t, env, store, func(t *testing.T, rec driver.Record) {
			if err := rdb.HSet(context.Background(), store.RedisKey(rec.ID),
				driver.AttrStatus, string(rec.Status), driver.AttrExpiration, rec.ExpiresAt.Unix(),
				driver.AttrLeaseExpiry, rec.LeaseUntil.UnixMilli(), driver.AttrQuarantined, rec.Quarantined.UnixMilli()).Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func ownerlessQuarantine(t *testing.T, env map[string]string, store driver.Store, write ownerless) {
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body := func(k string) string { return `{"idempotency_key":"` + k + `"}` }
	quarantined := func(k string) string {
		rec := driver.Record{ID: idOf(t, g, body(k)), Status: driver.StatusInProgress,
			ExpiresAt: now.Add(24 * time.Hour), Quarantined: now.Add(-time.Minute)}
		rec.LeaseUntil = rec.ExpiresAt
		write(t, rec)
		return rec.ID
	}
	released, resolved := quarantined("pt-released"), quarantined("pt-resolved")
	if v := inspectJSON(t, env, exitOK, "--id", released); v.State != stateQuarantined || v.Owner != "" {
		t.Fatalf("inspect: %+v", v)
	}
	// An owner it does not have is refused, and nothing changes.
	cli(t, env, "release", "--id", released, "--owner", "K55URJTHFZVODOMFHGAVWIFIAH").want(t, exitFailed)

	cli(t, env, "release", "--id", released, "--owner", "-").want(t, exitOK)
	if v := inspectJSON(t, env, exitOK, "--id", released); v.State != releasedState(env) {
		t.Errorf("after release: %+v", v)
	}
	ran := false
	if _, err := idempotency.Do(context.Background(), g, keyOf(t, body("pt-released")), func(context.Context) (string, error) {
		ran = true
		return "ran", nil
	}); err != nil || !ran {
		t.Errorf("the next delivery after release: ran %v, %v", ran, err)
	}

	result := `{"summary":"sent by hand"}`
	cli(t, env, "resolve", "--id", resolved, "--owner", "", "--result", result).want(t, exitOK)
	if v := inspectJSON(t, env, exitOK, "--id", resolved); v.State != stateCompleted || v.DataBytes != len(result) {
		t.Errorf("after resolve: %+v", v)
	}
	got, err := idempotency.Do(context.Background(), g, keyOf(t, body("pt-resolved")), func(context.Context) (map[string]string, error) {
		return nil, fmt.Errorf("ran again")
	})
	if err != nil || got["summary"] != "sent by hand" {
		t.Errorf("the next delivery after resolve: %v, %v", got, err)
	}
}

// TestResolveResultNotKept: a result the store cannot keep in full (here
// larger than a DynamoDB item, even compressed) is refused, nothing is
// written, and the claim stays as it was: never "resolved" with every
// later delivery replaying an empty result.
func TestResolveResultNotKept(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	s := seed(t, store, "orders", quarantineDynamo(db, table))
	raw := make([]byte, 540<<10)
	rand.Read(raw)
	big, _ := json.Marshal(base64.StdEncoding.EncodeToString(raw)) // 720 KiB of JSON, about 540 KiB gzipped
	file := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(file, big, 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli(t, env, "resolve", "--id", s.quarantined, "--owner", s.quarantinedOwner, "--result-file", file)
	if r.code == exitOK || strings.Contains(r.stdout, "resolved") {
		t.Errorf("resolve with a result the item cannot hold: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if v := inspectJSON(t, env, exitOK, "--id", s.quarantined); v.State != stateQuarantined || v.DataOmitted || v.Owner != s.quarantinedOwner {
		t.Errorf("after the refused resolve: %+v", v)
	}
}
