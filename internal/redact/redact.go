package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// Prefix is the most bytes of a value that [String] shows.
const Prefix = 8

// String describes s without showing more than its first [Prefix] bytes
// (cut at a character boundary, quoted as Go quotes strings): the prefix,
// "…" if s is longer, its length in bytes and the first 8 hex digits of its
// SHA-256, e.g. "document"… (100000 bytes, sha256:5f1d2a0c).
func String(s string) string {
	p := s
	if len(p) > Prefix {
		p = p[:Prefix]
		for len(p) > 0 && !utf8.ValidString(p) {
			p = p[:len(p)-1]
		}
	}
	b := strconv.AppendQuote(make([]byte, 0, 64), p)
	if len(p) < len(s) {
		b = append(b, "…"...)
	}
	b = append(b, " ("...)
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
