package sealed

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/failure"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

// TestSealedLargeResult: a 1 MiB compressible result replays sealed as it
// does unsealed, on every store. Before, its seal (~1.4 MB of base64
// ciphertext, which gzip cannot shrink) did not fit a DynamoDB item or
// redisstore's WithMaxData: the record completed without its result, and
// the call and every duplicate got the zero value.
func TestSealedLargeResult(t *testing.T) {
	client, keyID := newKey(t)
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = "abcdefgh"[i%8]
	}
	for _, st := range stores(t) {
		for _, sealed := range []bool{false, true} {
			var sealer driver.Sealer
			ns := "plainbig"
			if sealed {
				s, err := kmsseal.New(client, keyID)
				if err != nil {
					t.Fatal(err)
				}
				sealer, ns = s, "sealedbig"
			}
			g := guard(t, st.s, ns, sealer)
			k := idempotency.Raw([]byte(`"order-big"`))
			runs := 0
			op := func(context.Context) (result, error) { runs++; return result{Answer: string(big)}, nil }
			first, err := idempotency.Do(ctx(t), g, k, op)
			if err != nil || len(first.Answer) != len(big) {
				t.Errorf("%s, sealed %v: the first call got %d bytes, %v", st.name, sealed, len(first.Answer), err)
			}
			got, err := idempotency.Do(ctx(t), g, k, op)
			if err != nil || len(got.Answer) != len(big) || runs != 1 {
				t.Errorf("%s, sealed %v: duplicate got %d bytes, %v, %d runs; want the %d-byte result, 1 run", st.name, sealed, len(got.Answer), err, runs, len(big))
			}
		}
	}
}

// openV1 is driver.OpenData as releases before the compressed seal have it
// (SealedPrefix only): what an older worker sharing the table does with a
// record this release writes.
func openV1(ctx context.Context, s driver.Sealer, id string, data []byte) ([]byte, error) {
	if !driver.IsSealed(data) {
		return data, nil
	}
	body := data[len(driver.SealedPrefix):]
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: malformed", driver.ErrUnsealed)
	}
	sealed, err := base64.StdEncoding.AppendDecode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64", driver.ErrUnsealed)
	}
	plain, err := s.Open(ctx, id, sealed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrUnsealed, err)
	}
	return plain, nil
}

// rawItem is the item of record id, as DynamoDB holds it.
func rawItem(t *testing.T, db *dynamodb.Client, table, id string) map[string]dtypes.AttributeValue {
	t.Helper()
	out, err := db.GetItem(ctx(t), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]dtypes.AttributeValue{driver.AttrID: &dtypes.AttributeValueMemberS{Value: id}}})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem %s: %v", id, err)
	}
	return out.Item
}

// itemBytes is every name and value of item, as stored.
func itemBytes(item map[string]dtypes.AttributeValue) []byte {
	var b bytes.Buffer
	for name, v := range item {
		b.WriteString(name + "=")
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
	return b.Bytes()
}

func gzipped(p []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(p)
	zw.Close()
	return z.Bytes()
}

// randomHex is n bytes of random hex: text gzip halves, no more.
func randomHex(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// randomBase64 is n bytes of random base64: text gzip shrinks to about 3/4.
func randomBase64(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// TestSealedForms: on DynamoDB with moto's KMS, which form each result is
// sealed in, as the item holds it, and who opens it. A small result, and a
// large one whose seal the store keeps by compressing it itself, are sealed
// as before ("sqsonce:sealed:1:" and base64), which an older release
// opens; a large compressible result whose seal does not fit is compressed
// before it is sealed ("sqsonce:sealed:1:gzip:"), which this release opens
// and an older one fails with ErrUnsealed (it had replayed the zero value:
// the record was completed without its result). No item holds the
// plaintext, or its gzip. Records sealed before (SealData) still open.
func TestSealedForms(t *testing.T) {
	client, keyID := newKey(t)
	db := moto.DynamoDB(t)
	table := motoserver.NewTable(t, db)
	ds, err := dynamostore.New(db, table, dynamostore.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	writer, err := kmsseal.New(client, keyID)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := kmsseal.New(client, keyID) // another process
	if err != nil {
		t.Fatal(err)
	}
	g, other := guard(t, ds, "forms", writer), guard(t, ds, "forms", reader)
	for _, c := range []struct {
		name       string
		answer     string
		compressed bool // sealed compressed
		storeGzip  bool // the store compressed the seal
	}{
		{"small", secret, false, false},
		{"large, its seal kept by the store's gzip", secret + randomHex(360_000), false, true},
		{"large, compressible", strings.Repeat(secret, 40_000), true, false},
	} {
		k := idempotency.Raw([]byte(`"` + c.name + `"`))
		runs := 0
		want := result{Answer: c.answer, Tokens: 3}
		op := func(context.Context) (result, error) { runs++; return want, nil }
		if got, err := idempotency.Do(ctx(t), g, k, op); err != nil || got != want {
			t.Fatalf("%s: first call: %d bytes, %v", c.name, len(got.Answer), err)
		}
		for _, gd := range []*idempotency.Guard{g, other} {
			if got, err := idempotency.Do(ctx(t), gd, k, op); err != nil || got != want || runs != 1 {
				t.Fatalf("%s: duplicate: %d bytes, %v, %d runs; want the result, 1 run", c.name, len(got.Answer), err, runs)
			}
		}

		id, _ := g.ID(k)
		item := rawItem(t, db, table, id)
		raw := itemBytes(item)
		plain, _ := json.Marshal(want)
		if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(`"answer"`)) || bytes.Contains(raw, gzipped(plain)[10:42]) {
			t.Errorf("%s: the item holds the plaintext or its gzip", c.name)
		}
		var data []byte // the data attribute, inflated when the store compressed it
		switch v := item[driver.AttrData].(type) {
		case *dtypes.AttributeValueMemberS:
			data = []byte(v.Value)
		case *dtypes.AttributeValueMemberB:
			zr, err := gzip.NewReader(bytes.NewReader(v.Value))
			if err != nil {
				t.Fatal(err)
			}
			data, _ = io.ReadAll(zr)
		}
		if _, ok := item[driver.AttrData].(*dtypes.AttributeValueMemberB); ok != c.storeGzip {
			t.Errorf("%s: data attribute %T; want the store's gzip %v", c.name, item[driver.AttrData], c.storeGzip)
		}
		form := `sqsonce:sealed:1:`
		if c.compressed {
			form = `sqsonce:sealed:1:gzip:`
		}
		after := strings.TrimPrefix(string(data), form)
		if !strings.HasPrefix(string(data), form) || len(after) < 2 || !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", rune(after[0])) {
			t.Errorf("%s: stored %.40q…; want %s and base64", c.name, data, form)
		}
		t.Logf("%s: a %d-byte result is stored as %d bytes of %s (data attribute %d bytes)", c.name, len(plain), len(data), form, len(attrBytes(item[driver.AttrData])))

		old, err := openV1(ctx(t), reader, id, data)
		if c.compressed {
			if !errors.Is(err, driver.ErrUnsealed) || old != nil {
				t.Errorf("%s: an older release: %d bytes, %v; want ErrUnsealed", c.name, len(old), err)
			}
		} else if err != nil || !bytes.Equal(old, plain) {
			t.Errorf("%s: an older release: %d bytes, %v; want the result", c.name, len(old), err)
		}
	}

	// Records an older release sealed (SealData): a small one, a large one.
	for _, answer := range []string{secret, secret + randomHex(200_000)} {
		k := idempotency.Raw([]byte(fmt.Sprintf(`"before-%d"`, len(answer))))
		id, _ := g.ID(k)
		plain, _ := json.Marshal(result{Answer: answer, Tokens: 9})
		sealed, err := driver.SealData(ctx(t), writer, id, plain)
		if err != nil {
			t.Fatal(err)
		}
		put(t, ds, g, k, sealed)
		got, err := idempotency.Do(ctx(t), other, k, func(context.Context) (result, error) {
			t.Error("the operation ran again")
			return result{}, nil
		})
		if err != nil || got.Answer != answer || got.Tokens != 9 {
			t.Errorf("a %d-byte result sealed before: %d bytes, %v", len(plain), len(got.Answer), err)
		}
	}
}

func attrBytes(v dtypes.AttributeValue) []byte {
	switch v := v.(type) {
	case *dtypes.AttributeValueMemberS:
		return []byte(v.Value)
	case *dtypes.AttributeValueMemberB:
		return v.Value
	}
	return nil
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSealedTooLargeEvenCompressed: a result that does not fit even
// compressed before it is sealed is left out as an unsealed one is: the
// record completes without it, dynamostore logs so, and every delivery gets
// the zero value without running the operation again.
func TestSealedTooLargeEvenCompressed(t *testing.T) {
	client, keyID := newKey(t)
	db := moto.DynamoDB(t)
	table := motoserver.NewTable(t, db)
	var logs syncBuffer
	ds, err := dynamostore.New(db, table, dynamostore.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	s, err := kmsseal.New(client, keyID)
	if err != nil {
		t.Fatal(err)
	}
	g := guard(t, ds, "toolarge", s)
	k := idempotency.Raw([]byte(`"order-huge"`))
	runs := 0
	op := func(context.Context) (result, error) { runs++; return result{Answer: randomBase64(1 << 20)}, nil }
	if _, err := idempotency.Do(ctx(t), g, k, op); err != nil {
		t.Fatal(err)
	}
	got, err := idempotency.Do(ctx(t), g, k, op)
	if err != nil || got != (result{}) || runs != 1 {
		t.Errorf("duplicate: %d bytes, %v, %d runs; want the zero value, no error, 1 run", len(got.Answer), err, runs)
	}
	id, _ := g.ID(k)
	item := rawItem(t, db, table, id)
	if _, has := item[driver.AttrData]; has || item["data_omitted"] == nil {
		t.Errorf("item %v: want no data, data_omitted set", item)
	}
	l := logs.String()
	if !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "record completed WITHOUT its result") || !strings.Contains(l, id) {
		t.Errorf("log:\n%s\nwant the error that %s was completed without its result", l, id)
	}
	t.Logf("log: %s", l)
}

// gcmSealer is a Sealer with a local key (AES-256-GCM, the record id as
// associated data): a writer holding the key, as a test can be.
type gcmSealer struct{ aead cipher.AEAD }

func newGCMSealer(t *testing.T) *gcmSealer {
	key := make([]byte, 32)
	rand.Read(key)
	b, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(b)
	if err != nil {
		t.Fatal(err)
	}
	return &gcmSealer{aead}
}

func (g *gcmSealer) Seal(_ context.Context, id string, plain []byte) ([]byte, error) {
	nonce := make([]byte, g.aead.NonceSize())
	rand.Read(nonce)
	return g.aead.Seal(nonce, nonce, plain, []byte(id)), nil
}

func (g *gcmSealer) Open(_ context.Context, id string, sealed []byte) ([]byte, error) {
	n := g.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("too short")
	}
	return g.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestSealedGzipBomb: a compressed seal that opens (sealed with the key)
// but inflates without bound, stored on DynamoDB (about 80 KB of gzip for
// 65 MiB of zeros, within the item), fails its duplicates with a permanent
// ErrUnsealed, in bounded memory, without running the operation; so does
// one that is not gzip.
func TestSealedGzipBomb(t *testing.T) {
	db := moto.DynamoDB(t)
	ds, err := dynamostore.New(db, motoserver.NewTable(t, db))
	if err != nil {
		t.Fatal(err)
	}
	s := newGCMSealer(t)
	g := guard(t, ds, "bomb", s)
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed)
	io.CopyN(zw, zeros{}, driver.MaxSealedInflated+1<<20)
	zw.Close()
	for name, payload := range map[string][]byte{"gzip bomb": bomb.Bytes(), "not gzip": []byte(`{"answer":"` + secret + `"}`)} {
		k := idempotency.Raw([]byte(`"` + name + `"`))
		id, _ := g.ID(k)
		sealed, err := s.Seal(ctx(t), id+"#gzip", payload)
		if err != nil {
			t.Fatal(err)
		}
		put(t, ds, g, k, []byte(driver.SealedGzipPrefix+base64.StdEncoding.EncodeToString(sealed)))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := idempotency.Do(ctx(t), g, k, func(context.Context) (result, error) {
			t.Errorf("%s: the operation ran", name)
			return result{}, nil
		})
		runtime.ReadMemStats(&after)
		var p failure.PermanentError
		if !errors.Is(err, driver.ErrUnsealed) || !errors.As(err, &p) || !p.Permanent() || got != (result{}) {
			t.Errorf("%s: %+v, %v; want a permanent ErrUnsealed", name, got, err)
		} else if !strings.Contains(err.Error(), "does not inflate") || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %v; want it to say the result does not inflate, quoting nothing", name, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*driver.MaxSealedInflated {
			t.Errorf("%s: %d MiB allocated; want at most about %d", name, alloc>>20, driver.MaxSealedInflated>>20)
		}
		t.Logf("%s (%d bytes of payload): %v", name, len(payload), err)
	}
}

// TestSealedLargeTraced: a traced store (oteltrace.Instrument) forwards
// driver.DataFitter: a guard on a traced dynamostore seals a large
// compressible result compressed and replays it, as on the store itself;
// on a traced store without DataFitter (memstore), it seals as before.
func TestSealedLargeTraced(t *testing.T) {
	client, keyID := newKey(t)
	db := moto.DynamoDB(t)
	ds, err := dynamostore.New(db, motoserver.NewTable(t, db), dynamostore.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := kmsseal.New(client, keyID)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("abcdefgh", 1<<17)
	for _, c := range []struct {
		name       string
		store      driver.Store
		compressed bool
	}{
		{"dynamodb", ds, true},
		{"memstore", memstore.New(), false},
	} {
		cfg := oteltrace.Instrument(idempotency.Config{Store: c.store, Namespace: "traced", Sealer: s, Logger: slog.New(slog.DiscardHandler)})
		if _, ok := cfg.Store.(driver.DataFitter); !ok {
			t.Errorf("%s: the traced store is no driver.DataFitter", c.name)
		}
		g, err := idempotency.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		k := idempotency.Raw([]byte(`"order-traced"`))
		runs := 0
		op := func(context.Context) (result, error) { runs++; return result{Answer: big}, nil }
		if _, err := idempotency.Do(ctx(t), g, k, op); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := idempotency.Do(ctx(t), g, k, op)
		if err != nil || got.Answer != big || runs != 1 {
			t.Errorf("%s: duplicate got %d bytes, %v, %d runs; want the %d-byte result, 1 run", c.name, len(got.Answer), err, runs, len(big))
		}
		id, _ := g.ID(k)
		rec, err := c.store.(driver.Inspector).Inspect(ctx(t), id)
		if err != nil || !driver.IsSealed(rec.Data) || bytes.HasPrefix(rec.Data, []byte(driver.SealedGzipPrefix)) != c.compressed {
			t.Errorf("%s: stored %.30q, %v; want sealed, compressed %v", c.name, rec.Data, err, c.compressed)
		}
	}
}
