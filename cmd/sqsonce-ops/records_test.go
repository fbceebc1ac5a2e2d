package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

// releasedState is what inspect shows of a released claim in env's
// store: DynamoDB keeps it, marked; Redis and PostgreSQL delete it.
func releasedState(env map[string]string) string {
	if st := env[envStore]; st == storeDynamoDB || st == "" { // the default store
		return stateReleased
	}
	return stateAbsent
}

// dynamoEnv is a fresh moto table, the tool's environment for it, and a
// store on it.
func dynamoEnv(t *testing.T, ns string) (map[string]string, *dynamostore.Store, *dynamodb.Client, string) {
	t.Helper()
	db := moto.DynamoDB(t)
	table := motoserver.NewTable(t, db)
	store, err := dynamostore.New(db, table)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{envStore: storeDynamoDB, envTable: table, envNamespace: ns, envDynamoDBEndpoint: moto.Endpoint(t), envSQSEndpoint: moto.Endpoint(t)}
	return appEnvironment(env), store, db, table
}

// appEnvironment is env with a variable of the reference app's function
// environment (appEnv) set: the tool then takes the app's key
// (handler.Key), as seed writes the records and the tests' messages carry
// it. A test of another function's key deletes it, or sets a key source.
func appEnvironment(env map[string]string) map[string]string {
	env[appEnv[0]] = "stub"
	return env
}

// quarantineDynamo writes a quarantined claim as strict mode leaves one.
func quarantineDynamo(db *dynamodb.Client, table string) func(t *testing.T, rec driver.Record) {
	return func(t *testing.T, rec driver.Record) {
		t.Helper()
		n := func(v int64) types.AttributeValue {
			return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
		}
		s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
		_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			driver.AttrID: s(rec.ID), driver.AttrStatus: s(string(rec.Status)),
			driver.AttrExpiration: n(rec.ExpiresAt.Unix()), driver.AttrLeaseExpiry: n(rec.LeaseUntil.UnixMilli()),
			driver.AttrOwner: s(rec.Owner), driver.AttrQuarantined: n(rec.Quarantined.UnixMilli()),
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// scenario runs inspect, list, release and resolve on a seeded store
// through the tool, as an operator would.
func scenario(t *testing.T, env map[string]string, s seeded) {
	env = appEnvironment(env) // seed's records are the reference app's
	t.Run("inspect", func(t *testing.T) {
		v := inspectJSON(t, env, exitOK, "--id", s.completed)
		if v.State != stateCompleted || v.Status != "COMPLETED" || v.DataBytes == 0 || v.Owner == "" || v.ExpiresAt == nil {
			t.Errorf("completed: %+v", v)
		}
		// By the request's key, as the producer sends it, and by the body.
		if v := inspectJSON(t, env, exitOK, "--key", `"order-stuck"`); v.ID != s.stuck || v.State != stateLeaseLapsed || v.Owner != s.stuckOwner {
			t.Errorf("stuck by key: %+v, want id %s", v, s.stuck)
		}
		body := filepath.Join(t.TempDir(), "body.json")
		if err := os.WriteFile(body, []byte(s.bodies[s.live]), 0o600); err != nil {
			t.Fatal(err)
		}
		if v := inspectJSON(t, env, exitOK, "--body", body); v.ID != s.live || v.State != stateInProgress {
			t.Errorf("live by body: %+v, want id %s", v, s.live)
		}
		if v := inspectJSON(t, env, exitOK, "--id", s.quarantined); v.State != stateQuarantined || v.Quarantined == nil || v.Owner != s.quarantinedOwner {
			t.Errorf("quarantined: %+v", v)
		}
		if v := inspectJSON(t, env, exitOK, "--key", `"order-absent"`); v.ID != s.absent || v.State != stateAbsent {
			t.Errorf("absent: %+v", v)
		}
		text := cli(t, env, "inspect", "--id", s.quarantined).want(t, exitOK).stdout
		for _, want := range []string{"state        quarantined", "status       INPROGRESS", "owner        " + s.quarantinedOwner} {
			if !strings.Contains(text, want) {
				t.Errorf("inspect's text lacks %q:\n%s", want, text)
			}
		}
	})
	t.Run("list", func(t *testing.T) {
		var l listing
		cli(t, env, "list", "--json").want(t, exitOK).decode(t, &l)
		var ids []string
		for _, v := range l.Records {
			ids = append(ids, v.ID)
		}
		slices.Sort(ids)
		want := []string{s.stuck, s.quarantined}
		slices.Sort(want)
		if !slices.Equal(ids, want) || l.LeaseLapsed != 1 || l.Quarantined != 1 {
			t.Errorf("list: %+v, want %v", l, want)
		}
		cli(t, env, "list", "--all", "--json").want(t, exitOK).decode(t, &l)
		if len(l.Records) != 3 || l.InProgress != 1 {
			t.Errorf("list --all: %+v", l)
		}
		if text := cli(t, env, "list").want(t, exitOK).stdout; !strings.Contains(text, "1 past their lease, 1 quarantined") {
			t.Errorf("list's text:\n%s", text)
		}
	})
	t.Run("release", func(t *testing.T) {
		out := cli(t, env, "release", "--id", s.stuck, "--owner", s.stuckOwner, "--dry-run").want(t, exitOK).stdout
		if !strings.Contains(out, "dry run: would release") {
			t.Errorf("dry run: %s", out)
		}
		if v := inspectJSON(t, env, exitOK, "--id", s.stuck); v.State != stateLeaseLapsed {
			t.Fatalf("after a dry run: %+v", v)
		}
		// An owner that changed since inspect: refused by the fence.
		r := cli(t, env, "release", "--id", s.stuck, "--owner", "someone-else").want(t, exitFailed)
		if !strings.Contains(r.stderr, "the owner does not match") || !strings.Contains(r.stderr, "--owner is someone-else") {
			t.Errorf("wrong owner: %s", r.stderr)
		}
		// A live lease: not without --force.
		cli(t, env, "release", "--id", s.live, "--owner", s.liveOwner).want(t, exitFailed)
		cli(t, env, "release", "--id", s.stuck, "--owner", s.stuckOwner).want(t, exitOK)
		if v := inspectJSON(t, env, exitOK, "--id", s.stuck); v.State != releasedState(env) {
			t.Errorf("after release: %+v", v)
		}
		cli(t, env, "release", "--id", s.stuck, "--owner", s.stuckOwner).want(t, exitFailed)
		// A completed record is never released.
		done := inspectJSON(t, env, exitOK, "--id", s.completed)
		cli(t, env, "release", "--id", s.completed, "--owner", done.Owner).want(t, exitFailed)
	})
	t.Run("resolve", func(t *testing.T) {
		before := inspectJSON(t, env, exitOK, "--id", s.quarantined)
		cli(t, env, "resolve", "--id", s.quarantined, "--owner", s.quarantinedOwner, "--result", `{"summary":"sent by hand"}`, "--dry-run").want(t, exitOK)
		if v := inspectJSON(t, env, exitOK, "--id", s.quarantined); v.State != stateQuarantined {
			t.Fatalf("after a dry run: %+v", v)
		}
		cli(t, env, "resolve", "--id", s.quarantined, "--owner", "someone-else", "--result", `{}`).want(t, exitFailed)
		cli(t, env, "resolve", "--id", s.quarantined, "--owner", s.quarantinedOwner, "--result", `not json`).want(t, exitRefused)
		var w writeResult
		cli(t, env, "resolve", "--json", "--id", s.quarantined, "--owner", s.quarantinedOwner, "--result", `{"summary":"sent by hand"}`).want(t, exitOK).decode(t, &w)
		if w.After == nil || w.After.State != stateCompleted || w.After.DataBytes != len(`{"summary":"sent by hand"}`) ||
			!w.After.ExpiresAt.Equal(*before.ExpiresAt) {
			t.Errorf("after resolve: %+v, before %+v", w.After, before)
		}
		// The guard replays the result now.
		g := s.g
		var got map[string]string
		got, err := idempotency.Do(context.Background(), g, keyOf(t, s.bodies[s.quarantined]), func(context.Context) (map[string]string, error) {
			return nil, fmt.Errorf("ran again")
		})
		if err != nil || got["summary"] != "sent by hand" {
			t.Errorf("the guard after resolve: %v, %v", got, err)
		}
	})
}

func TestDynamoDB(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	s := seed(t, store, "orders", quarantineDynamo(db, table))
	scenario(t, env, s)
}

func TestRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisS.Addr(t), ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	prefix := "ops-" + rand.Text()[:8] + ":"
	store, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	s := seed(t, store, "orders", func(t *testing.T, rec driver.Record) {
		err := rdb.HSet(context.Background(), store.RedisKey(rec.ID),
			driver.AttrStatus, string(rec.Status), driver.AttrExpiration, rec.ExpiresAt.Unix(),
			driver.AttrLeaseExpiry, rec.LeaseUntil.UnixMilli(), driver.AttrOwner, rec.Owner,
			driver.AttrQuarantined, rec.Quarantined.UnixMilli()).Err()
		if err != nil {
			t.Fatal(err)
		}
	})
	scenario(t, map[string]string{envStore: storeRedis, envRedisURL: redisS.URL(t), envRedisKeyPrefix: prefix, envNamespace: "orders"}, s)
}

func TestPostgres(t *testing.T) {
	url := pgS.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := pgstore.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := seed(t, store, "orders", func(t *testing.T, rec driver.Record) {
		ctx := context.Background()
		if _, err := pool.Exec(ctx, `ALTER TABLE idempotency ADD COLUMN IF NOT EXISTS quarantined timestamptz`); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO idempotency (id, status, expiration, in_progress_expiration, lease_owner, quarantined)
			VALUES ($1, $2, $3, $4, $5, $6)`, rec.ID, string(rec.Status), rec.ExpiresAt, rec.LeaseUntil, rec.Owner, rec.Quarantined); err != nil {
			t.Fatal(err)
		}
	})
	scenario(t, map[string]string{envStore: storePostgres, envPostgresURL: url, envNamespace: "orders"}, s)
}

// TestDynamoDBSortKey: a table with a sort key, shared with Powertools'
// sort_key_attr, through the sort key flags.
func TestDynamoDBSortKey(t *testing.T) {
	db := moto.DynamoDB(t)
	table := motoserver.NewTableWithSortKey(t, db, "pk", "sk")
	sk := dynamostore.SortKey{Attr: "sk", FunctionName: "summarise-fn"}
	store, err := dynamostore.New(db, table, dynamostore.WithAttributes(dynamostore.Attributes{ID: "pk"}), dynamostore.WithSortKey(sk))
	if err != nil {
		t.Fatal(err)
	}
	s := seed(t, store, "orders", func(t *testing.T, rec driver.Record) {
		n := func(v int64) types.AttributeValue {
			return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
		}
		str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
		_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": str(dynamostore.DefaultPartitionPrefix + "summarise-fn"), "sk": str(rec.ID), driver.AttrStatus: str(string(rec.Status)),
			driver.AttrExpiration: n(rec.ExpiresAt.Unix()), driver.AttrLeaseExpiry: n(rec.LeaseUntil.UnixMilli()),
			driver.AttrOwner: str(rec.Owner), driver.AttrQuarantined: n(rec.Quarantined.UnixMilli()),
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
	env := map[string]string{envTable: table, envNamespace: "orders", envDynamoDBEndpoint: moto.Endpoint(t),
		envPartitionKey: "pk", envSortKey: "sk", envStaticPartition: dynamostore.DefaultPartitionPrefix + "summarise-fn"}
	scenario(t, env, s)
	// Without the sort key flags the table's key does not match: a clear failure, nothing found.
	plain := map[string]string{envTable: table, envNamespace: "orders", envDynamoDBEndpoint: moto.Endpoint(t)}
	cli(t, plain, "inspect", "--id", s.completed).want(t, exitFailed)
}

// TestRedisCluster: the Redis store through a Cluster client.
func TestRedisCluster(t *testing.T) {
	cluster := redisserver.NewCluster()
	t.Cleanup(func() { _ = cluster.Close() })
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cluster.Addr(t)}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	store, err := redisstore.New(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	s := seed(t, store, "orders", func(t *testing.T, rec driver.Record) {
		err := rdb.HSet(context.Background(), store.RedisKey(rec.ID),
			driver.AttrStatus, string(rec.Status), driver.AttrExpiration, rec.ExpiresAt.Unix(),
			driver.AttrLeaseExpiry, rec.LeaseUntil.UnixMilli(), driver.AttrOwner, rec.Owner,
			driver.AttrQuarantined, rec.Quarantined.UnixMilli()).Err()
		if err != nil {
			t.Fatal(err)
		}
	})
	scenario(t, map[string]string{envStore: storeRedis, envRedisURL: "redis://" + cluster.Addr(t), envRedisCluster: "on", envNamespace: "orders"}, s)
}
