package sim

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal"
)

// fakeKMS is the simulated deployment's KMS, in process and deterministic:
// the n-th data key it generates is HMAC-SHA256(master, n), and its
// encrypted form is n with a tag over n and the encryption context, so
// that Decrypt refuses a changed blob or another context. Every worker's
// kmsseal.Sealer calls it; its calls are not scheduler steps (KMS neither
// fails nor stalls in the simulation).
type fakeKMS struct {
	mu sync.Mutex
	n  uint64
}

var _ kmsseal.KMS = (*fakeKMS)(nil)

var kmsMaster = []byte("sqsonce-sim-kms-master-key")

func (f *fakeKMS) derive(n uint64, ec map[string]string) (key, tag []byte) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	m := hmac.New(sha256.New, kmsMaster)
	m.Write([]byte("key"))
	m.Write(b[:])
	key = m.Sum(nil)
	m = hmac.New(sha256.New, kmsMaster)
	m.Write([]byte("tag"))
	m.Write(b[:])
	ks := make([]string, 0, len(ec))
	for k := range ec {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		fmt.Fprintf(m, "%q=%q;", k, ec[k])
	}
	return key, m.Sum(nil)[:16]
}

// GenerateDataKey implements kmsseal.KMS.
func (f *fakeKMS) GenerateDataKey(_ context.Context, in *kms.GenerateDataKeyInput, _ ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	key, tag := f.derive(n, in.EncryptionContext)
	blob := binary.BigEndian.AppendUint64(nil, n)
	return &kms.GenerateDataKeyOutput{Plaintext: key, CiphertextBlob: append(blob, tag...), KeyId: in.KeyId}, nil
}

// Decrypt implements kmsseal.KMS.
func (f *fakeKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	b := in.CiphertextBlob
	if len(b) != 8+16 {
		return nil, errors.New("InvalidCiphertextException")
	}
	key, tag := f.derive(binary.BigEndian.Uint64(b[:8]), in.EncryptionContext)
	if !hmac.Equal(tag, b[8:]) {
		return nil, errors.New("InvalidCiphertextException")
	}
	return &kms.DecryptOutput{Plaintext: key, KeyId: in.KeyId}, nil
}

// simKeyID is the simulated deployment's KMS key.
const simKeyID = "alias/sim"

// newSealer is a worker's Sealer: its own kmsseal.Sealer (its own data key
// cache, as a Lambda execution environment has) on the deployment's KMS.
func (w *world) newSealer() driver.Sealer {
	s, err := kmsseal.New(w.kms, simKeyID)
	if err != nil {
		panic(err)
	}
	return s
}

// sealedText is the digest the history records for a result that is
// sealed text (a replay that returned it unopened): every sealed text is
// this one string, which is no run's result.
const sealedText = "(sealed text, unopened)"

// resultOf is the history's digest of data, record id's result as stored:
// the JSON string it holds, a sealed result opened first by the harness's
// own Sealer (the recorder at the store reads the plaintext, as every
// other witness does; one that does not open is sealedText).
func (w *world) resultOf(id string, data []byte) string {
	if driver.IsSealed(data) {
		plain, err := driver.OpenData(context.Background(), w.opener, id, data)
		if err != nil {
			return sealedText
		}
		data = plain
	}
	var s string
	if json.Unmarshal(data, &s) != nil {
		return ""
	}
	return s
}

// digestResult is the history's digest of a result the record function
// returned: the result itself, but sealed text, which is sealedText.
func digestResult(s string) string {
	if strings.HasPrefix(s, strings.Trim(driver.SealedPrefix, `"`)) {
		return sealedText
	}
	return s
}
