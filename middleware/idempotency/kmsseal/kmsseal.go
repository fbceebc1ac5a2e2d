package kmsseal

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// KMS is the part of *kms.Client a Sealer calls.
type KMS interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// Cache bounds the data keys a Sealer keeps in memory. A zero field takes
// its default.
type Cache struct {
	MaxRecords int           // results a data key seals or opens before KMS is asked again; default 10,000
	MaxAge     time.Duration // how long a data key is used after KMS returned it; default 5 minutes
	MaxKeys    int           // decrypted data keys kept for opening, least recently added out first; default 100
}

func (c Cache) withDefaults() Cache {
	if c.MaxRecords == 0 {
		c.MaxRecords = 10000
	}
	if c.MaxAge == 0 {
		c.MaxAge = 5 * time.Minute
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = 100
	}
	return c
}

// Option configures a [Sealer].
type Option func(*Sealer)

// WithCache sets the bounds of the data key cache; zero fields keep their
// defaults (see [Cache]).
func WithCache(c Cache) Option {
	return func(s *Sealer) { s.cache, s.noCache = c, false }
}

// WithoutCache turns the data key cache off: every Seal calls
// GenerateDataKey and every Open calls Decrypt.
func WithoutCache() Option {
	return func(s *Sealer) { s.noCache = true }
}

// Sealer is a driver.Sealer with envelope encryption under a KMS key (see
// the package documentation). It is safe for concurrent use.
type Sealer struct {
	client  KMS
	keyID   string
	cache   Cache
	noCache bool
	now     func() time.Time

	mu   sync.Mutex
	cur  *dataKey            // the key Seal uses, nil when none is usable
	keys map[string]*dataKey // by encrypted data key, for Open
	fifo []string            // keys' entries, oldest first
}

var _ driver.Sealer = (*Sealer)(nil)

// dataKey is a data key in use: its cipher, its encrypted form, when KMS
// returned it and how many results it sealed or opened.
type dataKey struct {
	aead cipher.AEAD
	edk  []byte
	born time.Time
	uses int
}

// encryptionContext is the KMS encryption context of every data key.
var encryptionContext = map[string]string{"sqsonce": "sealed-result"}

const (
	version  = 1
	nonceLen = 12
)

// New returns a Sealer that seals under the KMS key keyID (a key id, key
// ARN, alias name or alias ARN), calling client. It fails when client is
// nil, keyID is empty or a Cache bound is negative.
func New(client KMS, keyID string, opts ...Option) (*Sealer, error) {
	s := &Sealer{client: client, keyID: keyID, now: time.Now, keys: map[string]*dataKey{}}
	for _, o := range opts {
		o(s)
	}
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("kmsseal: the KMS client is nil"))
	}
	if keyID == "" {
		errs = append(errs, errors.New("kmsseal: the KMS key id is empty"))
	}
	if s.cache.MaxRecords < 0 || s.cache.MaxAge < 0 || s.cache.MaxKeys < 0 {
		errs = append(errs, fmt.Errorf("kmsseal: a Cache bound is negative: %+v", s.cache))
	}
	s.cache = s.cache.withDefaults()
	return s, errors.Join(errs...)
}

// usable reports whether k may seal or open one more result at now.
func (s *Sealer) usable(k *dataKey, now time.Time) bool {
	return k != nil && k.uses < s.cache.MaxRecords && now.Sub(k.born) < s.cache.MaxAge
}

// Seal encrypts plaintext for recordID under a data key (see the package
// documentation).
func (s *Sealer) Seal(ctx context.Context, recordID string, plaintext []byte) ([]byte, error) {
	k, err := s.sealKey(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 3+len(k.edk)+nonceLen+len(plaintext)+k.aead.Overhead())
	out = append(out, version)
	out = binary.BigEndian.AppendUint16(out, uint16(len(k.edk)))
	out = append(out, k.edk...)
	header := len(out)
	nonce := make([]byte, nonceLen)
	rand.Read(nonce)
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, plaintext, associated(out[:header], recordID)), nil
}

// sealKey returns the data key the next Seal uses, from KMS when the cache
// has none usable.
func (s *Sealer) sealKey(ctx context.Context) (*dataKey, error) {
	if !s.noCache {
		s.mu.Lock()
		if k := s.cur; s.usable(k, s.now()) {
			k.uses++
			s.mu.Unlock()
			return k, nil
		}
		s.mu.Unlock()
	}
	out, err := s.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             aws.String(s.keyID),
		KeySpec:           types.DataKeySpecAes256,
		EncryptionContext: encryptionContext,
	})
	if err != nil {
		return nil, fmt.Errorf("kmsseal: GenerateDataKey: %w", err)
	}
	if len(out.CiphertextBlob) == 0 || len(out.CiphertextBlob) > 0xffff {
		return nil, fmt.Errorf("kmsseal: GenerateDataKey returned an encrypted data key of %d bytes", len(out.CiphertextBlob))
	}
	k, err := newDataKey(out.Plaintext, out.CiphertextBlob, s.now())
	if err != nil {
		return nil, err
	}
	k.uses = 1
	if !s.noCache {
		s.mu.Lock()
		s.cur = k
		s.remember(k) // results this process seals open without KMS
		s.mu.Unlock()
	}
	return k, nil
}

// Open decrypts what Seal returned for recordID. It fails when sealed was
// changed, was sealed for another record id or under another KMS key, or
// KMS refuses its data key.
func (s *Sealer) Open(ctx context.Context, recordID string, sealed []byte) ([]byte, error) {
	if len(sealed) < 3 || sealed[0] != version {
		return nil, errors.New("kmsseal: not a sealed result of this version")
	}
	n := int(binary.BigEndian.Uint16(sealed[1:3]))
	header := 3 + n
	if n == 0 || len(sealed) < header+nonceLen+16 {
		return nil, errors.New("kmsseal: sealed result truncated")
	}
	k, err := s.openKey(ctx, sealed[3:header])
	if err != nil {
		return nil, err
	}
	plain, err := k.aead.Open(nil, sealed[header:header+nonceLen], sealed[header+nonceLen:], associated(sealed[:header], recordID))
	if err != nil {
		return nil, errors.New("kmsseal: the sealed result does not open: changed, or sealed for another record")
	}
	return plain, nil
}

// openKey returns the data key whose encrypted form is edk, from KMS when
// the cache has it not, or not usable.
func (s *Sealer) openKey(ctx context.Context, edk []byte) (*dataKey, error) {
	if !s.noCache {
		s.mu.Lock()
		if k := s.keys[string(edk)]; s.usable(k, s.now()) {
			k.uses++
			s.mu.Unlock()
			return k, nil
		}
		s.mu.Unlock()
	}
	out, err := s.client.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    edk,
		KeyId:             aws.String(s.keyID),
		EncryptionContext: encryptionContext,
	})
	if err != nil {
		return nil, fmt.Errorf("kmsseal: Decrypt of the data key: %w", err)
	}
	k, err := newDataKey(out.Plaintext, bytes.Clone(edk), s.now())
	if err != nil {
		return nil, err
	}
	k.uses = 1
	if !s.noCache {
		s.mu.Lock()
		s.remember(k)
		s.mu.Unlock()
	}
	return k, nil
}

// remember adds k to the keys for Open, dropping the oldest beyond
// MaxKeys. s.mu is held.
func (s *Sealer) remember(k *dataKey) {
	id := string(k.edk)
	if _, ok := s.keys[id]; !ok {
		s.fifo = append(s.fifo, id)
	}
	s.keys[id] = k
	for len(s.fifo) > s.cache.MaxKeys {
		delete(s.keys, s.fifo[0])
		s.fifo = s.fifo[1:]
	}
}

// newDataKey is the data key plain (whose encrypted form is edk), with
// plain cleared once its cipher holds it.
func newDataKey(plain, edk []byte, now time.Time) (*dataKey, error) {
	defer clear(plain)
	if len(plain) != 32 {
		return nil, fmt.Errorf("kmsseal: KMS returned a data key of %d bytes, want 32", len(plain))
	}
	b, err := aes.NewCipher(plain)
	if err != nil {
		return nil, fmt.Errorf("kmsseal: %w", err)
	}
	aead, err := cipher.NewGCM(b)
	if err != nil {
		return nil, fmt.Errorf("kmsseal: %w", err)
	}
	return &dataKey{aead: aead, edk: edk, born: now}, nil
}

// associated is the associated data of a result: its header (version and
// encrypted data key) and the record id.
func associated(header []byte, recordID string) []byte {
	ad := make([]byte, 0, len(header)+len(recordID))
	return append(append(ad, header...), recordID...)
}
