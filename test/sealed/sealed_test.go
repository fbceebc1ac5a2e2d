// Package sealed tests sealed results (idempotency.Config.Sealer with
// package kmsseal, on moto's KMS) on every store: a sealed result
// round-trips, the plaintext is nowhere in the stored record (read raw), a
// result moved to another record or changed fails its record, and so does
// a sealed record read by a guard without the sealer.
package sealed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

var (
	moto        = motoserver.New()
	redisServer = redisserver.New()
	pgServer    = pgserver.New()
)

func TestMain(m *testing.M) {
	code := moto.Run(m)
	_ = redisServer.Close()
	_ = pgServer.Close()
	os.Exit(code)
}

// secret is the result's text, looked for in the stored records.
const secret = "the-customer-secret-7f3a"

type result struct {
	Answer string `json:"answer"`
	Tokens int    `json:"tokens"`
}

// store is one store under test, and how to read every byte it holds.
type store struct {
	name string
	s    driver.Store
	raw  func(t *testing.T) []byte // every record, every attribute, as stored
}

func stores(t *testing.T) []store {
	ctx := context.Background()
	db := moto.DynamoDB(t)
	table := motoserver.NewTable(t, db)
	ds, err := dynamostore.New(db, table)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisServer.Addr(t), ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	rs, err := redisstore.New(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, pgServer.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ps, err := pgstore.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	return []store{
		{"dynamodb", ds, func(t *testing.T) []byte { return dumpDynamoDB(t, db, table) }},
		{"redis", rs, func(t *testing.T) []byte { return dumpRedis(t, rdb) }},
		{"postgres", ps, func(t *testing.T) []byte { return dumpPostgres(t, pool) }},
	}
}

func dumpDynamoDB(t *testing.T, db *dynamodb.Client, table string) []byte {
	out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, item := range out.Items {
		for name, v := range item {
			fmt.Fprintf(&b, "%s=", name)
			switch v := v.(type) {
			case *dtypes.AttributeValueMemberS:
				b.WriteString(v.Value)
			case *dtypes.AttributeValueMemberB:
				b.Write(v.Value)
			default:
				fmt.Fprintf(&b, "%#v", v)
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func dumpRedis(t *testing.T, rdb *redis.Client) []byte {
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(k + "\n")
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if typ != "hash" {
			v, err := rdb.Dump(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(v + "\n")
			continue
		}
		m, err := rdb.HGetAll(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range m {
			b.WriteString(f + "=" + v + "\n")
		}
	}
	return b.Bytes()
}

func dumpPostgres(t *testing.T, pool *pgxpool.Pool) []byte {
	rows, err := pool.Query(context.Background(), `SELECT t::text, coalesce(data, ''::bytea) FROM idempotency t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b bytes.Buffer
	for rows.Next() {
		var row string
		var data []byte
		if err := rows.Scan(&row, &data); err != nil {
			t.Fatal(err)
		}
		b.WriteString(row + "\n")
		b.Write(data)
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// newKey creates a KMS key on moto and returns its id.
func newKey(t *testing.T) (*kms.Client, string) {
	c := kms.NewFromConfig(moto.Config(t))
	out, err := c.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String(t.Name())})
	if err != nil {
		t.Fatalf("moto KMS CreateKey: %v", err)
	}
	return c, aws.ToString(out.KeyMetadata.KeyId)
}

// countingKMS counts a Sealer's KMS calls.
type countingKMS struct {
	*kms.Client
	generates, decrypts atomic.Int32
}

func (c *countingKMS) GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, o ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	c.generates.Add(1)
	return c.Client.GenerateDataKey(ctx, in, o...)
}

func (c *countingKMS) Decrypt(ctx context.Context, in *kms.DecryptInput, o ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	c.decrypts.Add(1)
	return c.Client.Decrypt(ctx, in, o...)
}

func guard(t *testing.T, s driver.Store, ns string, sealer driver.Sealer) *idempotency.Guard {
	g, err := idempotency.New(idempotency.Config{Store: s, Namespace: ns, Sealer: sealer, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// TestSealedOnEveryStore: on DynamoDB (moto, with moto's KMS), Redis and
// PostgreSQL, a sealed result round-trips through another process's guard,
// its plaintext appears nowhere in the store, and a sealed result that is
// read without the sealer, moved to another record or changed fails its
// record (ErrUnsealed) without running the operation or replaying.
func TestSealedOnEveryStore(t *testing.T) {
	client, keyID := newKey(t)
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			ns := "sealed-" + st.name
			kc := &countingKMS{Client: client}
			writer, err := kmsseal.New(kc, keyID)
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			op := func(context.Context) (result, error) {
				runs.Add(1)
				return result{Answer: secret, Tokens: 42}, nil
			}
			k := idempotency.Raw([]byte(`"order-1"`))
			g := guard(t, st.s, ns, writer)
			got, err := idempotency.Do(ctx(t), g, k, op)
			if err != nil || got.Answer != secret {
				t.Fatalf("first call: %+v, %v", got, err)
			}

			// Another process: its own guard and Sealer (no cached data key).
			reader, err := kmsseal.New(kc, keyID)
			if err != nil {
				t.Fatal(err)
			}
			got, err = idempotency.Do(ctx(t), guard(t, st.s, ns, reader), k, op)
			if err != nil || got != (result{secret, 42}) || runs.Load() != 1 {
				t.Fatalf("replay in another process: %+v, %v, %d runs; want the result and 1 run", got, err, runs.Load())
			}
			if kc.generates.Load() != 1 || kc.decrypts.Load() != 1 {
				t.Errorf("%d GenerateDataKey, %d Decrypt; want 1 and 1", kc.generates.Load(), kc.decrypts.Load())
			}

			raw := st.raw(t)
			if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(`"answer"`)) {
				t.Fatalf("the stored records hold the plaintext result:\n%s", raw)
			}
			if !bytes.Contains(raw, []byte(strings.Trim(driver.SealedPrefix, `"`))) || !bytes.Contains(raw, []byte("COMPLETED")) {
				t.Fatalf("the stored records hold no sealed COMPLETED result:\n%s", raw)
			}

			// The sealed result as stored, put under other records: moved as
			// it is, and with one byte changed.
			id, _ := g.ID(k)
			found, err := st.s.(driver.Inspector).Inspect(ctx(t), id)
			if err != nil || !driver.IsSealed(found.Data) {
				t.Fatalf("Inspect: %v, sealed %v", err, driver.IsSealed(found.Data))
			}
			plain, _ := json.Marshal(result{secret, 42})
			t.Logf("a %d-byte result is stored sealed in %d bytes", len(plain), len(found.Data))
			moved, tampered := idempotency.Raw([]byte(`"order-2"`)), idempotency.Raw([]byte(`"order-3"`))
			changed := bytes.Clone(found.Data)
			i := len(changed) - 10 // a base64 letter of the tag
			changed[i] = map[bool]byte{true: 'B', false: 'A'}[changed[i] == 'A']
			put(t, st.s, g, moved, found.Data)
			put(t, st.s, g, tampered, changed)

			for _, c := range []struct {
				name string
				g    *idempotency.Guard
				k    idempotency.Selection
			}{
				{"without a sealer", guard(t, st.s, ns, nil), k},
				{"moved to another record", g, moved},
				{"changed", g, tampered},
			} {
				before := runs.Load()
				got, err := idempotency.Do(ctx(t), c.g, c.k, op)
				if !errors.Is(err, driver.ErrUnsealed) || got != (result{}) || runs.Load() != before {
					t.Errorf("%s: %+v, %v; want ErrUnsealed, no result and no run", c.name, got, err)
				}
				if err != nil && strings.Contains(err.Error(), secret) {
					t.Errorf("%s: the error quotes the result: %v", c.name, err)
				}
				t.Logf("%s: %v", c.name, err)
			}
		})
	}
}

// put stores data as the completed result of k's record, as a writer with
// the store's credentials could.
func put(t *testing.T, s driver.Store, g *idempotency.Guard, k idempotency.Selection, data []byte) {
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute), Owner: "planter"}
	if _, loaded, err := s.Acquire(ctx(t), rec, now, driver.Takeover); err != nil || loaded {
		t.Fatalf("Acquire: loaded %v, %v", loaded, err)
	}
	rec.Status, rec.Data = driver.StatusCompleted, data
	if _, err := s.Complete(ctx(t), rec); err != nil {
		t.Fatal(err)
	}
}

// TestPowertoolsSeesSealedText: a sealed record as Powertools for AWS
// Lambda reads it: the id, status, expiration and in-progress expiry are
// as without a sealer, and the data attribute the sealed text, not JSON,
// on which Powertools would fail every duplicate or which it would return
// as the handler's result; so
// dynamostore refuses a Sealer in its Powertools data formats, and the guard
// in Powertools' key formats (whose ids Powertools computes), in the default
// DataJSON, which Powertools Python reads.
func TestPowertoolsSeesSealedText(t *testing.T) {
	client, keyID := newKey(t)
	s, err := kmsseal.New(client, keyID)
	if err != nil {
		t.Fatal(err)
	}
	db := moto.DynamoDB(t)
	table := motoserver.NewTable(t, db)
	ds, err := dynamostore.New(db, table)
	if err != nil {
		t.Fatal(err)
	}
	g := guard(t, ds, "pt", s)
	k := idempotency.Raw([]byte(`"order-1"`))
	if _, err := idempotency.Do(ctx(t), g, k, func(context.Context) (string, error) { return secret, nil }); err != nil {
		t.Fatal(err)
	}
	id, _ := g.ID(k)
	out, err := db.GetItem(ctx(t), &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]dtypes.AttributeValue{
		driver.AttrID: &dtypes.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	item := out.Item
	if s, ok := item[driver.AttrStatus].(*dtypes.AttributeValueMemberS); !ok || s.Value != "COMPLETED" {
		t.Errorf("status %v, want S COMPLETED", item[driver.AttrStatus])
	}
	for _, a := range []string{driver.AttrExpiration, driver.AttrLeaseExpiry} {
		if _, ok := item[a].(*dtypes.AttributeValueMemberN); !ok {
			t.Errorf("%s: %#v, want a number", a, item[a])
		}
	}
	data, ok := item[driver.AttrData].(*dtypes.AttributeValueMemberS)
	if !ok {
		t.Fatalf("data: %#v, want S", item[driver.AttrData])
	}
	// What Powertools' json.loads / JSON.parse make of it: nothing; every
	// duplicate would fail (Python), or, read as a native string, return
	// the sealed text (TypeScript).
	if text := data.Value; json.Valid([]byte(text)) || !strings.HasPrefix(text, "sqsonce:sealed:1:") || strings.Contains(text, secret) {
		t.Errorf("Powertools reads the result as %.40q..., want the sealed text, not JSON", text)
	}
	for _, f := range []dynamostore.DataFormat{dynamostore.DataPowertoolsPython, dynamostore.DataPowertoolsTypeScript} {
		pt, err := dynamostore.New(db, table, dynamostore.WithDataFormat(f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := idempotency.New(idempotency.Config{Store: pt, Namespace: "pt", Sealer: s}); err == nil {
			t.Errorf("%v: a guard with a Sealer was accepted; Powertools would replay the sealed text", f)
		} else if _, err := idempotency.New(idempotency.Config{Store: pt, Namespace: "pt"}); err != nil {
			t.Errorf("%v without a Sealer: %v", f, err)
		}
	}
	for _, f := range []idempotency.Format{idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript} {
		if _, err := idempotency.New(idempotency.Config{Store: ds, Namespace: "pt", Format: f, Sealer: s}); err == nil {
			t.Errorf("Config.Format %v with a Sealer: accepted; a Powertools function on the same keys would return the sealed text", f)
		} else if _, err := idempotency.New(idempotency.Config{Store: ds, Namespace: "pt", Format: f}); err != nil {
			t.Errorf("Config.Format %v without a Sealer: %v", f, err)
		}
	}
}

// TestPreSealingReaderFailsSafe: a release that predates sealing reads a
// sealed record of any store during a rolling deploy or after a rollback.
// It decodes the stored result into the call's type, as its guard does
// (json.Unmarshal): the sealed result is not JSON, so the call fails and
// is retried, for any type, a string included; it never replays the sealed
// text, and the record stays COMPLETED, so the operation does not run.
// Records in the JSON string form earlier builds wrote still open here.
func TestPreSealingReaderFailsSafe(t *testing.T) {
	s := newGCMSealer(t)
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			g := guard(t, st.s, "presealing", s)
			k := idempotency.Raw([]byte(`"order-7"`))
			if _, err := idempotency.Do(ctx(t), g, k, func(context.Context) (string, error) { return "receipt-42", nil }); err != nil {
				t.Fatal(err)
			}
			id, _ := g.ID(k)
			now := time.Now()
			found, loaded, err := st.s.Acquire(ctx(t), driver.Record{ID: id, Status: driver.StatusInProgress,
				ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute), Owner: "old-release"}, now, driver.Takeover)
			if err != nil || !loaded || found.Status != driver.StatusCompleted || !driver.IsSealed(found.Data) {
				t.Fatalf("the record as a claim finds it: %+v, loaded %v, %v", found, loaded, err)
			}
			var str string
			var raw json.RawMessage
			var anything any
			for name, into := range map[string]any{"string": &str, "json.RawMessage": &raw, "any": &anything} {
				if err := json.Unmarshal(found.Data, into); err == nil {
					t.Errorf("a pre-sealing reader decodes the sealed result into %s: it would replay %.40q", name, found.Data)
				}
			}

			// The JSON string form of earlier builds: opened, replayed.
			legacy := idempotency.Raw([]byte(`"order-8"`))
			lid, _ := g.ID(legacy)
			sealed, err := driver.SealData(ctx(t), s, lid, []byte(`"receipt-43"`))
			if err != nil {
				t.Fatal(err)
			}
			put(t, st.s, g, legacy, []byte(`"`+string(sealed)+`"`))
			if v, err := idempotency.Do(ctx(t), g, legacy, func(context.Context) (string, error) { return "ran again", nil }); err != nil || v != "receipt-43" {
				t.Errorf("a record in the earlier JSON string form: %q, %v; want it opened and replayed", v, err)
			}
		})
	}
}
