package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// Prefix is the most bytes of a value that [String] shows.
const Prefix = 8

// MinShown is the shortest value of which [String] shows a prefix: [Prefix]
// bytes are then at most an eighth of it. Of a shorter value (a key, an
// e-mail address, a field name) it shows nothing.
const MinShown = 8 * Prefix

// String describes s by its length in bytes and the first 8 hex digits of
// its SHA-256, e.g. (17 bytes, sha256:5f1d2a0c). A value of at least
// [MinShown] bytes is preceded by its first [Prefix] bytes (cut at a
// character boundary, quoted as Go quotes strings) and "…", e.g.
// "document"… (100000 bytes, sha256:5f1d2a0c); nothing of a shorter value
// is shown.
func String(s string) string {
	b := make([]byte, 0, 64)
	if len(s) >= MinShown {
		p := s[:Prefix]
		for len(p) > 0 && !utf8.ValidString(p) {
			p = p[:len(p)-1]
		}
		b = strconv.AppendQuote(b, p)
		b = append(b, "… "...)
	}
	b = append(b, '(')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, " bytes, "...)
	b = append(b, Digest(s)...)
	return string(append(b, ')'))
}

// Digest describes s by the first 8 hex digits of its SHA-256 alone, e.g.
// "sha256:5f1d2a0c": for text that may begin with a value, such as another
// package's error message.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:4])
}

// Bytes is [String] of b.
func Bytes(b []byte) string { return String(string(b)) }
