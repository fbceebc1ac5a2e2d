package driver_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// gcm is a Sealer: AES-256-GCM under one key, the record id as associated
// data. It records the record ids it was asked to seal for.
type gcm struct {
	aead cipher.AEAD
	ids  []string
}

func newGCM(t testing.TB) *gcm {
	t.Helper()
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
	return &gcm{aead: aead}
}

func (g *gcm) Seal(_ context.Context, id string, plain []byte) ([]byte, error) {
	g.ids = append(g.ids, id)
	nonce := make([]byte, g.aead.NonceSize())
	rand.Read(nonce)
	return g.aead.Seal(nonce, nonce, plain, []byte(id)), nil
}

func (g *gcm) Open(_ context.Context, id string, sealed []byte) ([]byte, error) {
	n := g.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("too short")
	}
	return g.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
}

// fitter is a store that keeps a result of at most limit bytes, and
// records what it was asked.
type fitter struct {
	driver.Store
	limit int
	asked []driver.Record
}

func (f *fitter) FitsData(rec driver.Record) bool {
	f.asked = append(f.asked, rec)
	return len(rec.Data) <= f.limit
}

// plainStore is a store without driver.DataFitter.
type plainStore struct{ driver.Store }

const id = "orders#0123abcd"

// compressible is a large result that gzip shrinks to almost nothing.
var compressible = []byte(`"` + strings.Repeat("abcdefgh", 1<<17) + `"`) // 1 MiB

// openV1 is OpenData as releases before the compressed seal have it: it
// knows SealedPrefix only. It shows what an older worker sharing the store
// does with a record this release writes.
func openV1(ctx context.Context, s driver.Sealer, id string, data []byte) ([]byte, error) {
	if !driver.IsSealed(data) {
		return data, nil
	}
	if driver.IsWithheld(data) {
		return nil, fmt.Errorf("%w: withheld", driver.ErrUnsealed)
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

func permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// TestSealDataVersion1: SealData writes SealedPrefix and base64 (no
// compression), which both this release's OpenData and an older one's open,
// which holds no plaintext, and which is not JSON text: a reader that
// predates sealing fails to decode it into any type, never replays it.
func TestSealDataVersion1(t *testing.T) {
	ctx, s := context.Background(), newGCM(t)
	data := []byte(`{"answer":"the customer's secret"}`)
	sealed, err := driver.SealData(ctx, s, id, data)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimPrefix(string(sealed), driver.SealedPrefix)
	if !bytes.HasPrefix(sealed, []byte(driver.SealedPrefix)) || bytes.HasPrefix(sealed, []byte(driver.SealedGzipPrefix)) {
		t.Fatalf("sealed %q: want %s and base64", sealed, driver.SealedPrefix)
	}
	var str string
	var raw json.RawMessage
	var anything any
	if json.Valid(sealed) || json.Unmarshal(sealed, &str) == nil || json.Unmarshal(sealed, &raw) == nil || json.Unmarshal(sealed, &anything) == nil {
		t.Errorf("sealed %q decodes as JSON: a reader that predates sealing would replay it", sealed)
	}
	if _, err := base64.StdEncoding.DecodeString(body); err != nil || bytes.Contains(sealed, []byte("secret")) {
		t.Fatalf("the body is not base64 (%v), or holds the plaintext", err)
	}
	for name, open := range map[string]func(context.Context, driver.Sealer, string, []byte) ([]byte, error){"OpenData": driver.OpenData, "an older release": openV1} {
		if got, err := open(ctx, s, id, sealed); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if got, err := driver.SealData(ctx, s, id, nil); got != nil || err != nil {
		t.Errorf("SealData(nil) = %q, %v; want nil", got, err)
	}
}

// TestSealCompressedData: the compressed seal holds neither the plaintext
// nor its gzip, is smaller than the uncompressed seal of a compressible
// result, opens to the result, and is sealed for the record id followed by
// "#gzip": relabelled as uncompressed, or the uncompressed seal relabelled
// as compressed, or moved to another record, it does not open. An older
// release fails it with ErrUnsealed, never replays its text.
func TestSealCompressedData(t *testing.T) {
	ctx, s := context.Background(), newGCM(t)
	v1, err := driver.SealData(ctx, s, id, compressible)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := driver.SealCompressedData(ctx, s, id, compressible)
	if err != nil {
		t.Fatal(err)
	}
	if !driver.IsSealed(v2) || !bytes.HasPrefix(v2, []byte(`sqsonce:sealed:1:gzip:`)) || json.Valid(v2) {
		t.Fatalf("compressed seal %.40q: want %s…, not JSON", v2, driver.SealedGzipPrefix)
	}
	if s.ids[1] != id+"#gzip" {
		t.Errorf("sealed for %q, want %q", s.ids[1], id+"#gzip")
	}
	t.Logf("a %d-byte result: %d bytes sealed, %d sealed compressed", len(compressible), len(v1), len(v2))
	if len(v2) > 10<<10 {
		t.Errorf("compressed seal of %d bytes; want a few KiB", len(v2))
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(compressible)
	zw.Close()
	if bytes.Contains(v2, []byte("abcdefgh")) || bytes.Contains(v2, z.Bytes()[10:40]) {
		t.Error("the compressed seal holds the plaintext or its gzip")
	}
	if got, err := driver.OpenData(ctx, s, id, v2); err != nil || !bytes.Equal(got, compressible) {
		t.Fatalf("OpenData: %d bytes, %v", len(got), err)
	}

	relabel := func(data []byte, from, to string) []byte {
		return append([]byte(to), data[len(from):]...)
	}
	for _, c := range []struct {
		name string
		id   string
		data []byte
	}{
		{"compressed, relabelled uncompressed", id, relabel(v2, driver.SealedGzipPrefix, driver.SealedPrefix)},
		{"uncompressed, relabelled compressed", id, relabel(v1, driver.SealedPrefix, driver.SealedGzipPrefix)},
		{"moved to another record", "orders#other", v2},
		{"moved to the record id + #gzip", id + "#gzip", v2},
		{"without a sealer", id, v2},
	} {
		var sealer driver.Sealer = s
		if c.name == "without a sealer" {
			sealer = nil
		}
		got, err := driver.OpenData(ctx, sealer, c.id, c.data)
		if !errors.Is(err, driver.ErrUnsealed) || got != nil || permanent(err) {
			t.Errorf("%s: %d bytes, %v; want ErrUnsealed, not permanent", c.name, len(got), err)
		}
	}
	if got, err := openV1(ctx, s, id, v2); !errors.Is(err, driver.ErrUnsealed) || got != nil {
		t.Errorf("an older release: %d bytes, %v; want ErrUnsealed", len(got), err)
	}
	if got, err := driver.SealCompressedData(ctx, s, id, nil); got != nil || err != nil {
		t.Errorf("SealCompressedData(nil) = %q, %v; want nil", got, err)
	}
}

// TestSealDataFor: the store decides. A store without DataFitter, and one
// that keeps the uncompressed seal, get SealData's form (older releases
// open it); one that would not keep it gets the compressed seal, asked
// with the record as the completion writes it, the seal as its data.
func TestSealDataFor(t *testing.T) {
	ctx := context.Background()
	rec := driver.Record{ID: id, Status: driver.StatusCompleted, Owner: "owner-token", Validation: "v", Data: compressible}
	for _, c := range []struct {
		name       string
		store      driver.Store
		data       []byte
		compressed bool
	}{
		{"no DataFitter, large", plainStore{}, compressible, false},
		{"fits, small", &fitter{limit: 400 << 10}, []byte(`"small"`), false},
		{"fits, large", &fitter{limit: 2 << 20}, compressible, false},
		{"does not fit", &fitter{limit: 400 << 10}, compressible, true},
		{"nothing fits", &fitter{limit: 0}, compressible, true},
	} {
		s := newGCM(t)
		r := rec
		r.Data = c.data
		got, err := driver.SealDataFor(ctx, s, c.store, r)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if bytes.HasPrefix(got, []byte(driver.SealedGzipPrefix)) != c.compressed || !driver.IsSealed(got) {
			t.Errorf("%s: stored %.30q; want compressed %v", c.name, got, c.compressed)
		}
		if plain, err := driver.OpenData(ctx, s, id, got); err != nil || !bytes.Equal(plain, c.data) {
			t.Errorf("%s: OpenData: %d bytes, %v", c.name, len(plain), err)
		}
		if !c.compressed {
			if plain, err := openV1(ctx, s, id, got); err != nil || !bytes.Equal(plain, c.data) {
				t.Errorf("%s: an older release: %d bytes, %v", c.name, len(plain), err)
			}
		}
		if f, ok := c.store.(*fitter); ok {
			if len(f.asked) != 1 {
				t.Fatalf("%s: FitsData asked %d times, want once", c.name, len(f.asked))
			}
			a := f.asked[0]
			if a.ID != rec.ID || a.Owner != rec.Owner || a.Validation != rec.Validation || a.Status != driver.StatusCompleted ||
				!bytes.HasPrefix(a.Data, []byte(driver.SealedPrefix)) || bytes.HasPrefix(a.Data, []byte(driver.SealedGzipPrefix)) {
				t.Errorf("%s: FitsData asked of %+.60v; want the record with its uncompressed seal", c.name, a)
			}
		}
	}
	if got, err := driver.SealDataFor(ctx, newGCM(t), &fitter{}, driver.Record{ID: id}); got != nil || err != nil {
		t.Errorf("SealDataFor of no result = %q, %v; want nil", got, err)
	}
}

// TestSealDataForTooLarge: a result larger than MaxSealedInflated is never
// compressed (OpenData could not inflate it): it is sealed uncompressed,
// for the store to keep or leave out.
func TestSealDataForTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("seals 64 MiB")
	}
	data := bytes.Repeat([]byte("a"), driver.MaxSealedInflated+1)
	got, err := driver.SealDataFor(context.Background(), newGCM(t), &fitter{limit: 400 << 10}, driver.Record{ID: id, Data: data})
	if err != nil || bytes.HasPrefix(got, []byte(driver.SealedGzipPrefix)) || !driver.IsSealed(got) {
		t.Errorf("%.30q, %v; want the uncompressed seal", got, err)
	}
	if _, err := driver.SealCompressedData(context.Background(), newGCM(t), id, data); err == nil {
		t.Error("SealCompressedData accepted a result it could not open")
	}
}

// sealedRaw is payload sealed as a compressed seal is, whatever payload is:
// what a writer holding the key could store.
func sealedRaw(t *testing.T, s driver.Sealer, payload []byte) []byte {
	t.Helper()
	sealed, err := s.Seal(context.Background(), id+"#gzip", payload)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(driver.SealedGzipPrefix + base64.StdEncoding.EncodeToString(sealed))
}

// gzipOf is the gzip of n zero bytes, streamed.
func gzipOf(t *testing.T, n int64) []byte {
	t.Helper()
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed) // fast: the test runs under -race
	if _, err := io.CopyN(zw, zeros{}, n); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return z.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestOpenDataHostileCompressed: a compressed seal that opens (its writer
// held the key) but whose payload is not one gzip member within
// MaxSealedInflated (a gzip bomb, a trailer that lies about the size, not
// gzip, truncated, a second member) fails with a permanent ErrUnsealed
// that quotes nothing, in bounded memory, without a panic.
func TestOpenDataHostileCompressed(t *testing.T) {
	ctx, s := context.Background(), newGCM(t)
	bomb := gzipOf(t, driver.MaxSealedInflated+1<<20) // 65 MiB of zeros
	lying := bytes.Clone(gzipOf(t, 1<<20))
	copy(lying[len(lying)-4:], []byte{0xff, 0xff, 0xff, 0xff}) // claims 4 GiB
	small := gzipOf(t, 10)
	t.Logf("the bomb: %d bytes of gzip", len(bomb))
	for _, c := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"gzip bomb", bomb, "once inflated"},
		{"a trailer that lies", lying, "checksum"},
		{"not gzip", []byte(`{"answer":"secret"}`), "gzip"},
		{"truncated", small[:len(small)-6], "EOF"},
		{"two members", append(bytes.Clone(small), small...), "after the gzip member"},
		{"empty", nil, "EOF"},
	} {
		data := sealedRaw(t, s, c.payload)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := driver.OpenData(ctx, s, id, data)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, driver.ErrUnsealed) || got != nil || !permanent(err) {
			t.Errorf("%s: %d bytes, %v; want a permanent ErrUnsealed", c.name, len(got), err)
			continue
		}
		if !strings.Contains(err.Error(), "does not inflate") || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error %q; want it to say it does not inflate (%s), quoting nothing", c.name, err, c.want)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*driver.MaxSealedInflated+uint64(4*len(data)) {
			t.Errorf("%s: %d bytes allocated to open a %d-byte record; want at most about %d", c.name, alloc, len(data), driver.MaxSealedInflated)
		}
		t.Logf("%s: %v", c.name, err)
	}
	// At the bound exactly, it opens.
	if got, err := driver.OpenData(ctx, s, id, sealedRaw(t, s, gzipOf(t, driver.MaxSealedInflated))); err != nil || len(got) != driver.MaxSealedInflated {
		t.Errorf("a result of MaxSealedInflated bytes: %d bytes, %v", len(got), err)
	}
}

// TestSealedLegacyForm: earlier builds wrote a sealed result as a JSON
// string (the same text between two '"'). This release takes that form for
// sealed, opens it (and its compressed form), and fails its withheld form
// for good; it never writes it.
func TestSealedLegacyForm(t *testing.T) {
	ctx, s := context.Background(), newGCM(t)
	data := []byte(`"a string result"`)
	for name, seal := range map[string]func(context.Context, driver.Sealer, string, []byte) ([]byte, error){
		"sealed": driver.SealData, "compressed": driver.SealCompressedData,
	} {
		sealed, err := seal(ctx, s, id, data)
		if err != nil {
			t.Fatal(err)
		}
		legacy := []byte(`"` + string(sealed) + `"`)
		if !driver.IsSealed(legacy) || driver.IsWithheld(legacy) {
			t.Errorf("%s: the legacy form %.30q is not taken for sealed", name, legacy)
		}
		if got, err := driver.OpenData(ctx, s, id, legacy); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: OpenData of the legacy form = %q, %v; want the result", name, got, err)
		}
		for _, bad := range [][]byte{legacy[:len(legacy)-1], []byte(`"` + driver.SealedPrefix)} {
			if _, err := driver.OpenData(ctx, s, id, bad); !errors.Is(err, driver.ErrUnsealed) {
				t.Errorf("%s: OpenData(%.30q) = %v, want ErrUnsealed", name, bad, err)
			}
		}
	}
	for _, withheld := range [][]byte{[]byte(driver.WithheldData), []byte(`"` + driver.WithheldData + `"`)} {
		if !driver.IsSealed(withheld) || !driver.IsWithheld(withheld) {
			t.Errorf("%q: sealed %v, withheld %v; want both", withheld, driver.IsSealed(withheld), driver.IsWithheld(withheld))
		}
		if _, err := driver.OpenData(ctx, s, id, withheld); !errors.Is(err, driver.ErrUnsealed) || !permanent(err) {
			t.Errorf("OpenData(%q) = %v, want a permanent ErrUnsealed", withheld, err)
		}
	}
}

// TestPlainStringLikeLegacyForm: a stored JSON string that begins as the
// legacy form does but holds other than base64 after the prefix (a result
// of a guard without a Sealer, or of a release that predates sealing) is
// not sealed: OpenData returns it as it is, with or without a Sealer.
// Before, it was taken for sealed and failed every delivery.
func TestPlainStringLikeLegacyForm(t *testing.T) {
	ctx, s := context.Background(), newGCM(t)
	for _, plain := range []string{
		`"sqsonce:sealed:1: hello"`, `"sqsonce:sealed:1:not base64!"`, `"sqsonce:sealed:1:QUJD\n"`,
		`"sqsonce:sealed:1:\u0041"`, `"sqsonce:sealed:1:gzip:"`, `"sqsonce:sealed:1:gzip:a b"`, `"sqsonce:sealed:1:QUJ"`,
	} {
		if driver.IsSealed([]byte(plain)) || driver.IsWithheld([]byte(plain)) {
			t.Errorf("%s: taken for sealed", plain)
		}
		for _, sealer := range []driver.Sealer{nil, s} {
			if got, err := driver.OpenData(ctx, sealer, id, []byte(plain)); err != nil || string(got) != plain {
				t.Errorf("%s: OpenData = %q, %v; want it as it is", plain, got, err)
			}
		}
	}
}
