package kmsseal

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// fakeKMS is an in-process KMS with one key: it wraps data keys with
// AES-GCM under a master key, and counts its calls.
type fakeKMS struct {
	master              cipher.AEAD
	generates, decrypts atomic.Int32
}

func newFakeKMS(t testing.TB) *fakeKMS {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	b, _ := aes.NewCipher(key)
	aead, err := cipher.NewGCM(b)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeKMS{master: aead}
}

func ecBytes(ec map[string]string) []byte { return fmt.Appendf(nil, "%v", ec) }

func (f *fakeKMS) GenerateDataKey(_ context.Context, in *kms.GenerateDataKeyInput, _ ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	f.generates.Add(1)
	key := make([]byte, 32)
	rand.Read(key)
	nonce := make([]byte, 12)
	rand.Read(nonce)
	blob := f.master.Seal(nonce, nonce, key, ecBytes(in.EncryptionContext))
	return &kms.GenerateDataKeyOutput{Plaintext: key, CiphertextBlob: blob, KeyId: in.KeyId}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	f.decrypts.Add(1)
	b := in.CiphertextBlob
	if len(b) < 12 {
		return nil, errors.New("InvalidCiphertextException")
	}
	key, err := f.master.Open(nil, b[:12], b[12:], ecBytes(in.EncryptionContext))
	if err != nil {
		return nil, errors.New("InvalidCiphertextException")
	}
	return &kms.DecryptOutput{Plaintext: key, KeyId: in.KeyId}, nil
}

func newSealer(t testing.TB, k KMS, opts ...Option) *Sealer {
	t.Helper()
	s, err := New(k, "alias/test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const secret = `{"summary":"the customer's secret answer"}`

// TestKMSCallsPerRecords: the KMS calls to seal 200 results in one process
// and open them in another, with the default cache, a cache of 50 records
// per data key, and none.
func TestKMSCallsPerRecords(t *testing.T) {
	const n = 200
	for _, c := range []struct {
		name                string
		opts                []Option
		generates, decrypts int32
	}{
		{"default cache", nil, 1, 1},
		{"MaxRecords 50", []Option{WithCache(Cache{MaxRecords: 50})}, 4, 4},
		{"no cache", []Option{WithoutCache()}, n, n},
	} {
		k := newFakeKMS(t)
		writer, reader := newSealer(t, k, c.opts...), newSealer(t, k, c.opts...)
		ctx := context.Background()
		sealed := make([][]byte, n)
		for i := range n {
			var err error
			if sealed[i], err = writer.Seal(ctx, fmt.Sprintf("ns#%d", i), []byte(secret)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range n {
			got, err := reader.Open(ctx, fmt.Sprintf("ns#%d", i), sealed[i])
			if err != nil || string(got) != secret {
				t.Fatalf("%s: open %d: %q, %v", c.name, i, got, err)
			}
		}
		t.Logf("%s: %d records: %d GenerateDataKey, %d Decrypt", c.name, n, k.generates.Load(), k.decrypts.Load())
		if k.generates.Load() != c.generates || k.decrypts.Load() != c.decrypts {
			t.Errorf("%s: %d GenerateDataKey, %d Decrypt; want %d, %d", c.name, k.generates.Load(), k.decrypts.Load(), c.generates, c.decrypts)
		}
		// The process that sealed opens its own results without KMS (while its
		// data key has uses left).
		before := k.decrypts.Load()
		if _, err := writer.Open(ctx, "ns#199", sealed[199]); err != nil {
			t.Fatal(err)
		}
		if c.opts == nil && k.decrypts.Load() != before {
			t.Errorf("%s: the sealing process called Decrypt for its own data key", c.name)
		}
	}
}

// TestMaxAgeAndMaxKeys: a data key is not used past MaxAge, and at most
// MaxKeys decrypted data keys are kept.
func TestMaxAgeAndMaxKeys(t *testing.T) {
	k := newFakeKMS(t)
	now := time.Unix(1e9, 0)
	s := newSealer(t, k, WithCache(Cache{MaxAge: time.Minute, MaxKeys: 2}))
	s.now = func() time.Time { return now }
	ctx := context.Background()
	var sealed [][]byte
	for range 3 {
		b, err := s.Seal(ctx, "ns#a", []byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		sealed = append(sealed, b)
		now = now.Add(time.Minute)
	}
	if k.generates.Load() != 3 {
		t.Errorf("%d GenerateDataKey for 3 seals a minute apart with MaxAge 1m; want 3", k.generates.Load())
	}
	now = now.Add(-2 * time.Minute) // the last two keys young again
	if len(s.keys) != 2 {
		t.Errorf("%d keys kept, want MaxKeys 2", len(s.keys))
	}
	for i := len(sealed) - 1; i >= 0; i-- { // the newest first: opening the first drops the oldest kept
		if _, err := s.Open(ctx, "ns#a", sealed[i]); err != nil {
			t.Fatal(err)
		}
		want := int32(0)
		if i == 0 {
			want = 1 // dropped for MaxKeys
		}
		if got := k.decrypts.Load(); got != want {
			t.Errorf("open %d: %d Decrypt so far, want %d", i, got, want)
		}
	}
}

// TestOpenRefuses: a result opened for another record id, changed in any
// byte, or under another KMS key fails, and no error quotes the result.
func TestOpenRefuses(t *testing.T) {
	k := newFakeKMS(t)
	s := newSealer(t, k)
	ctx := context.Background()
	sealed, err := s.Seal(ctx, "ns#1", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("secret")) {
		t.Fatal("the sealed result holds the plaintext")
	}
	check := func(what string, id string, b []byte, s *Sealer) {
		t.Helper()
		got, err := s.Open(ctx, id, b)
		if err == nil {
			t.Errorf("%s: opened %q", what, got)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error quotes the result: %v", what, err)
		}
	}
	check("another record", "ns#2", sealed, s)
	for _, i := range []int{0, 1, 3, 3 + int(sealed[2]), len(sealed) - 20, len(sealed) - 1} {
		b := bytes.Clone(sealed)
		b[i] ^= 1
		check(fmt.Sprintf("byte %d changed", i), "ns#1", b, newSealer(t, k))
		check(fmt.Sprintf("byte %d changed, cached key", i), "ns#1", b, s)
	}
	check("truncated", "ns#1", sealed[:len(sealed)-1], s)
	check("another KMS key", "ns#1", sealed, newSealer(t, newFakeKMS(t)))
}

// TestNewRefuses: New reports a nil client, an empty key id and negative
// bounds.
func TestNewRefuses(t *testing.T) {
	_, err := New(nil, "", WithCache(Cache{MaxRecords: -1}))
	for _, want := range []string{"client is nil", "key id is empty", "negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v, want it to say %q", err, want)
		}
	}
}

func benchmarkSealOpen(b *testing.B, opts ...Option) {
	k := newFakeKMS(b)
	s := newSealer(b, k, opts...)
	ctx := context.Background()
	plain := bytes.Repeat([]byte("x"), 1024)
	b.Run("Seal", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			if _, err := s.Seal(ctx, "ns#1", plain); err != nil {
				b.Fatal(err)
			}
		}
	})
	sealed, _ := s.Seal(ctx, "ns#1", plain)
	b.Run("Open", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			if _, err := s.Open(ctx, "ns#1", sealed); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCached seals and opens 1 KiB results with the default cache;
// BenchmarkUncached with none, against an in-process KMS (the cost of the
// calls to real KMS, a network round trip each, is not in it).
func BenchmarkCached(b *testing.B)   { benchmarkSealOpen(b) }
func BenchmarkUncached(b *testing.B) { benchmarkSealOpen(b, WithoutCache()) }
