package idempotency

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// Format is the whole recipe that turns a [Selection] into the digest of a
// record id ("{Namespace}#{digest}") and into a validation hash: how the
// value is spelled, hashed and written. The zero value is FormatNative.
type Format int

const (
	// FormatNative hashes the canonical JSON (RFC 8785) of
	// {"selector": …, "value": …} with SHA-256, in hex: field order, white
	// space and number spelling do not change it. A number a double does
	// not hold exactly is refused, not rounded: send such ids as strings.
	FormatNative Format = iota

	// FormatPowertoolsPython is Powertools for AWS Lambda (Python)'s recipe,
	// byte for byte (md5 of json.dumps(value, sort_keys=True), in hex), for
	// a table shared with it: the selector is not hashed.
	FormatPowertoolsPython

	// FormatPowertoolsTypeScript is Powertools for AWS Lambda
	// (TypeScript)'s recipe, byte for byte (md5 of
	// JSON.stringify(deepSort(value)), in base64), for a table shared with
	// it. An object whose key order depends on the Unicode version is
	// refused.
	FormatPowertoolsTypeScript
)

// String returns the format's constant's name.
func (f Format) String() string {
	switch f {
	case FormatNative:
		return "FormatNative"
	case FormatPowertoolsPython:
		return "FormatPowertoolsPython"
	case FormatPowertoolsTypeScript:
		return "FormatPowertoolsTypeScript"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

func (f Format) valid() bool {
	return f >= FormatNative && f <= FormatPowertoolsTypeScript
}

// Hash returns the digest of k in format f: the part of a record id after
// the "#", or the hash stored for payload validation. It fails when k
// breaks the rules of [Selection], or holds a number or key that f refuses.
func (f Format) Hash(k Selection) (string, error) {
	b, err := f.appendHash(nil, k)
	return string(b), err
}

// rawDomain prefixes raw key material ([Raw]) in the native format. The
// material of a key with a selector is canonical JSON, which begins with '{'.
const rawDomain = "raw\x00"

// spelling is what format f hashes for a key, as it is written: held in
// a buffer and hashed at once (sum) while it is small, as keys are, and
// streamed into the hash past maxHeldSpelling, so that a large key costs no
// copy of itself. With keep, all of it is held (spell).
type spelling struct {
	f    Format
	keep bool
	buf  bytes.Buffer
	h    hash.Hash // past maxHeldSpelling
}

const maxHeldSpelling = 64 << 10

// spellings holds the spellings appendHash uses: a record id costs no
// buffer of its own.
var spellings = sync.Pool{New: func() any { return new(spelling) }}

func (s *spelling) Write(p []byte) (int, error) {
	if s.h == nil && (s.keep || s.buf.Len()+len(p) <= maxHeldSpelling) {
		return s.buf.Write(p)
	}
	if s.h == nil {
		if s.f == FormatNative {
			s.h = sha256.New()
		} else {
			s.h = md5.New()
		}
		s.h.Write(s.buf.Bytes())
		s.buf.Reset()
	}
	return s.h.Write(p)
}

func (s *spelling) WriteString(p string) {
	if s.h == nil && (s.keep || s.buf.Len()+len(p) <= maxHeldSpelling) {
		s.buf.WriteString(p)
		return
	}
	s.Write([]byte(p))
}

// appendSum appends the spelling's digest to dst, in format f.
func (s *spelling) appendSum(dst []byte) []byte {
	var sum []byte
	switch {
	case s.h != nil:
		sum = s.h.Sum(nil)
	case s.f == FormatNative:
		d := sha256.Sum256(s.buf.Bytes())
		sum = d[:]
	default:
		d := md5.Sum(s.buf.Bytes())
		sum = d[:]
	}
	if s.f == FormatPowertoolsTypeScript {
		return base64.StdEncoding.AppendEncode(dst, sum)
	}
	return hex.AppendEncode(dst, sum)
}

func (f Format) appendHash(dst []byte, k Selection) ([]byte, error) {
	if !f.valid() {
		return nil, fmt.Errorf("unknown format %d", int(f))
	}
	s := spellings.Get().(*spelling)
	defer func() {
		*s = spelling{buf: s.buf}
		if s.buf.Cap() <= maxHeldSpelling {
			s.buf.Reset()
			spellings.Put(s)
		}
	}()
	s.f = f
	if err := f.write(s, k); err != nil {
		return nil, err
	}
	return s.appendSum(dst), nil
}

// write writes the bytes format f hashes for k to s: for the Powertools
// formats, the value as that runtime spells it before hashing; for the
// native format, the canonical JSON (RFC 8785) of
// {"selector": k.Selector, "value": k.Value}, or raw material behind
// rawDomain.
func (f Format) write(s *spelling, k Selection) error {
	switch f {
	case FormatNative:
		if k.Selector == "" {
			// Raw material (Raw) is hashed in a domain of its own:
			// behind rawDomain, which no canonical JSON of a selector's key
			// begins with, so raw material spelling another request's
			// {"selector":…,"value":…} never gets that request's id.
			s.WriteString(rawDomain)
			s.Write(k.Value)
			return nil
		}
		// RFC 8785 orders the two members by name and writes strings as
		// JavaScript does, so the document is written as is.
		s.WriteString(`{"selector":`)
		s.Write(jsonkey.AppendString(s.buf.AvailableBuffer(), k.Selector)) // s holds 12 bytes: the buffer's own
		s.WriteString(`,"value":`)
		if err := jsonkey.WriteCanonical(s, string(k.Value)); err != nil {
			return err
		}
		s.WriteString("}")
		return nil
	case FormatPowertoolsPython:
		return jsonkey.WritePython(s, string(k.Value))
	case FormatPowertoolsTypeScript:
		return jsonkey.WriteTypeScript(s, string(k.Value))
	}
	return fmt.Errorf("unknown format %d", int(f))
}

// spell returns the bytes format f hashes for k (see write).
func (f Format) spell(k Selection) ([]byte, error) {
	s := spelling{f: f, keep: true}
	err := f.write(&s, k)
	return s.buf.Bytes(), err
}

// ID returns the record id of k: "{Namespace}#{digest}", the digest in the
// configured [Format]. It fails when the format cannot hash k (see
// [Format.Hash]).
func (g *Guard) ID(k Selection) (string, error) {
	ns := g.cfg.Namespace
	var buf [128]byte // the id is built here, and copied once into its string
	b := append(append(buf[:0], ns...), '#')
	b, err := g.cfg.Format.appendHash(b, k)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
