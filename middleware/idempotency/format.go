package idempotency

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// Format is the whole recipe that turns a [Selection] into the digest of a
// record id ("{Namespace}#{digest}") and into a validation hash: how the
// value is spelled, hashed and written. The zero value is FormatNative.
type Format int

const (
	// FormatNative hashes the canonical JSON (RFC 8785) of
	// {"selector": …, "value": …} with SHA-256, in hex: field order, white
	// space and number spelling (0.7, 0.70, 7e-1) do not change it, and
	// values of different selectors never share a digest. Raw material is
	// hashed as given, behind a prefix of its own. A number a double does
	// not hold exactly (an integer beyond ±2^53 by size, a decimal with
	// more digits than a double keeps) is refused, not rounded into another
	// request's key: send such ids as strings.
	FormatNative Format = iota

	// FormatPowertoolsPython is Powertools for AWS Lambda (Python)'s recipe,
	// byte for byte: md5 of json.dumps(value, sort_keys=True) of the value
	// json.loads reads (integers as sent, other numbers as Python's float
	// repr), in hex. The selector is not hashed, so Powertools' collisions
	// are kept: use it only to share a table with Powertools Python.
	FormatPowertoolsPython

	// FormatPowertoolsTypeScript is Powertools for AWS Lambda
	// (TypeScript)'s recipe, byte for byte: md5 of
	// JSON.stringify(deepSort(value)) of the value JSON.parse reads
	// (numbers as doubles, keys sorted as V8 lower-cases them), in base64.
	// An object is refused whose key order another Unicode version would
	// sort otherwise (a character unassigned in Unicode 15.0, or whose case
	// changed since; a final sigma after ª, Ⓐ, ‘). The selector is not
	// hashed, as for FormatPowertoolsPython.
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

func (f Format) appendHash(dst []byte, k Selection) ([]byte, error) {
	var h hash.Hash
	switch f {
	case FormatNative:
		h = sha256.New()
	case FormatPowertoolsPython, FormatPowertoolsTypeScript:
		h = md5.New()
	default:
		return nil, fmt.Errorf("unknown format %d", int(f))
	}
	if err := f.write(h, k); err != nil {
		return nil, err
	}
	if f == FormatPowertoolsTypeScript {
		return base64.StdEncoding.AppendEncode(dst, h.Sum(nil)), nil
	}
	return hex.AppendEncode(dst, h.Sum(nil)), nil
}

// write writes the bytes format f hashes for k to w: for the Powertools
// formats, the value as that runtime spells it before hashing; for the
// native format, the canonical JSON (RFC 8785) of
// {"selector": k.Selector, "value": k.Value}, or raw material behind
// rawDomain.
func (f Format) write(w io.Writer, k Selection) error {
	switch f {
	case FormatNative:
		if k.Selector == "" {
			// Raw material (Raw) is hashed in a domain of its own:
			// behind rawDomain, which no canonical JSON of a selector's key
			// begins with, so raw material spelling another request's
			// {"selector":…,"value":…} never gets that request's id.
			w.Write([]byte(rawDomain))
			w.Write(k.Value)
			return nil
		}
		// RFC 8785 orders the two members by name and writes strings as
		// JavaScript does, so the document is written as is.
		w.Write(jsonkey.AppendString([]byte(`{"selector":`), k.Selector))
		w.Write([]byte(`,"value":`))
		if err := jsonkey.WriteCanonical(w, string(k.Value)); err != nil {
			return err
		}
		w.Write([]byte("}"))
		return nil
	case FormatPowertoolsPython:
		return jsonkey.WritePython(w, string(k.Value))
	case FormatPowertoolsTypeScript:
		return jsonkey.WriteTypeScript(w, string(k.Value))
	}
	return fmt.Errorf("unknown format %d", int(f))
}

// spell returns the bytes format f hashes for k (see write).
func (f Format) spell(k Selection) ([]byte, error) {
	var b bytes.Buffer
	err := f.write(&b, k)
	return b.Bytes(), err
}

// ID returns the record id of k: "{Namespace}#{digest}", the digest in the
// configured [Format]. It fails when the format cannot hash k (see
// [Format.Hash]).
func (g *Guard) ID(k Selection) (string, error) {
	ns := g.cfg.Namespace
	b := make([]byte, 0, len(ns)+1+64)
	b = append(append(b, ns...), '#')
	b, err := g.cfg.Format.appendHash(b, k)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
