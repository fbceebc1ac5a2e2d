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

// Format is the whole recipe that turns a [Selection] into the digest of a record
// id ("{Namespace}#{digest}") and into a validation hash: how the selected
// JSON value is spelled, which hash is applied, and how the hash is written.
// The zero value is [FormatNative].
type Format int

const (
	// FormatNative is the default: the key's selector and value, as the
	// canonical JSON (RFC 8785) of {"selector": …, "value": …}, hashed with
	// SHA-256 and written in hex. Field order, whitespace and number
	// spelling (0.7, 0.70, 7e-1) do not change it, and values taken by
	// different selectors never share a digest (see [Selection]). Raw material
	// ([Raw]) is hashed as given, behind a prefix of its own, so it
	// never shares a digest with a selector's key either. Numbers that a
	// double cannot hold exactly are refused (see the package doc).
	FormatNative Format = iota

	// FormatPowertoolsPython is Powertools for AWS Lambda (Python)'s recipe:
	// md5 of json.dumps(value, sort_keys=True), written with hexdigest().
	// The value is spelled as Python spells what json.loads made of it: ", "
	// and ": " separators, keys sorted by code point, every character outside
	// ASCII space to "~" escaped as \uXXXX (surrogate pairs beyond the BMP),
	// integers exactly as sent, other numbers in Python's float repr (10.0,
	// 1e-05, 1e+16, Infinity). The selector is not hashed: use it only to
	// share a table with Powertools Python. It keeps Powertools' collisions:
	// equal selections from different fields, or from a field and a subset,
	// share a record, and md5 is not collision resistant.
	FormatPowertoolsPython

	// FormatPowertoolsTypeScript is Powertools for AWS Lambda (TypeScript)'s
	// recipe: md5 of JSON.stringify(deepSort(value)), written in base64.
	// The value is spelled as JavaScript spells what JSON.parse made of it:
	// compact, object keys sorted case-insensitively (by their toLowerCase
	// in UTF-16 order, as V8 lower-cases, final sigma included; ties in the
	// order sent; keys that are array indices, such as "7", first in
	// numeric order; "__proto__" dropped), non-ASCII characters as UTF-8,
	// numbers as doubles in JavaScript's spelling (9007199254740993 becomes
	// 9007199254740992, 1e400 becomes null). An object of two or more keys
	// is refused when a key holds a character unassigned in Unicode 15.0 or
	// whose case changed since (U+0295, U+1171E): runtimes of other Unicode
	// versions sort it otherwise; so is one whose order a final sigma after
	// ª, Ⓐ, ‘, … decides (see Upgrading in the README). The selector is not
	// hashed and Powertools' collisions are kept, as for
	// [FormatPowertoolsPython].
	FormatPowertoolsTypeScript
)

// String returns the format's name, as in its constant.
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
// the "#", or the hash stored for payload validation. It fails when k's
// value breaks the rules of key material (see the package doc: not I-JSON,
// too deep, a number over 100 characters) or holds a number or key that f
// refuses; raw material ([Raw]) is hashed as given in the native format.
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
