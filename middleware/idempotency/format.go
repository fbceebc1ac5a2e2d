package idempotency

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/sqsonce/sqsonce/internal/redact"
)

// Format is the whole recipe that turns a [Key] into the digest of a record
// id ("{Namespace}#{digest}") and into a validation hash: how the selected
// JSON value is spelled, which hash is applied, and how the hash is written.
// The zero value is [FormatNative].
type Format int

const (
	// FormatNative is the default: the key's selector and value, as the
	// canonical JSON (RFC 8785) of {"selector": …, "value": …}, hashed with
	// SHA-256 and written in hex. Field order, whitespace and number
	// spelling (0.7, 0.70, 7e-1) do not change it, and values taken by
	// different selectors never share a digest (see [Key]). Raw material
	// ([RawKey]) is hashed as given, behind a prefix of its own, so it
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
	// in UTF-16 order, ties in the order sent; keys that are array indices,
	// such as "7", first in numeric order; "__proto__" dropped), non-ASCII
	// characters as UTF-8, numbers as doubles in JavaScript's spelling
	// (9007199254740993 becomes 9007199254740992, 1e400 becomes null). The
	// selector is not hashed and Powertools' collisions are kept, as for
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

// Key is key material: a JSON value and the name of the selector that
// took it, as a [KeyFunc] returns it, or raw material made by [RawKey]. A
// [Format] turns it into the digest of a record id or a validation hash.
type Key struct {
	// Selector names where Value was taken from, such as
	// `body ["idempotency_key"]` for BodyField("idempotency_key"). The
	// native format hashes it with the value, so that two selectors (a
	// field, and a subset of fields) never give one record id to two
	// different requests. Each selector of this package documents its
	// spelling; a KeyFunc of your own should use a name of its own. It is
	// empty for raw material ([RawKey]).
	Selector string

	// Value is the JSON value selected, as the message spells it (the
	// Powertools formats hash the spelling), or the raw material.
	Value json.RawMessage
}

// Hash returns the digest of k in format f: the part of a record id after
// the "#", or the hash stored for payload validation. It fails when k's
// value is not JSON or holds a number that f refuses.
func (f Format) Hash(k Key) (string, error) {
	b, err := f.appendHash(nil, k)
	return string(b), err
}

// rawDomain prefixes raw key material ([RawKey]) in the native format. The material of a key with a selector is canonical JSON,
// which begins with '{'.
const rawDomain = "raw\x00"

func (f Format) appendHash(dst []byte, k Key) ([]byte, error) {
	switch f {
	case FormatNative:
		h := sha256.New()
		if k.Selector == "" {
			// Raw material (RawKey) is hashed in a domain of its own:
			// behind rawDomain, which no canonical JSON of a selector's key
			// begins with, so raw material spelling another request's
			// {"selector":…,"value":…} never gets that request's id.
			h.Write([]byte(rawDomain))
			h.Write(k.Value)
		} else {
			material, err := nativeMaterial(k)
			if err != nil {
				return nil, err
			}
			h.Write(material)
		}
		return hex.AppendEncode(dst, h.Sum(nil)), nil
	case FormatPowertoolsPython:
		v, err := parseValue(k.Value)
		if err != nil {
			return nil, err
		}
		s := md5.Sum(appendPython(nil, v))
		return hex.AppendEncode(dst, s[:]), nil
	case FormatPowertoolsTypeScript:
		v, err := parseValue(k.Value)
		if err != nil {
			return nil, err
		}
		s := md5.Sum(appendTypeScript(nil, v))
		return base64.StdEncoding.AppendEncode(dst, s[:]), nil
	}
	return nil, fmt.Errorf("unknown format %d", int(f))
}

// spell returns the bytes format f hashes for k: for the Powertools
// formats, the value as that runtime spells it before hashing; for the
// native format, the canonical JSON of the tagged key (or the raw material).
func (f Format) spell(k Key) ([]byte, error) {
	switch f {
	case FormatNative:
		if k.Selector == "" {
			return k.Value, nil
		}
		return nativeMaterial(k)
	case FormatPowertoolsPython, FormatPowertoolsTypeScript:
		v, err := parseValue(k.Value)
		if err != nil {
			return nil, err
		}
		if f == FormatPowertoolsPython {
			return appendPython(nil, v), nil
		}
		return appendTypeScript(nil, v), nil
	}
	return nil, fmt.Errorf("unknown format %d", int(f))
}

// nativeMaterial is the canonical JSON (RFC 8785) of
// {"selector": k.Selector, "value": k.Value}.
func nativeMaterial(k Key) ([]byte, error) {
	if err := exactNumbers(k.Value); err != nil {
		return nil, err
	}
	value, err := jcs.Transform(k.Value)
	if err != nil {
		return nil, err
	}
	// RFC 8785 orders the two members by name and writes strings as
	// JavaScript does, so the document is built as is.
	doc := make([]byte, 0, len(k.Selector)+len(value)+24)
	doc = appendJSString(append(doc, `{"selector":`...), []rune(k.Selector))
	doc = append(append(append(doc, `,"value":`...), value...), '}')
	return doc, nil
}

// exactNumbers validates raw, a single JSON value with no number longer
// than maxNumberLen, and returns an error for the first number the native
// format could confuse with another (see exactNumber).
func exactNumbers(raw []byte) error {
	s := scanner{b: string(raw)}
	end, err := s.value(s.space(0), 0, true)
	if err != nil {
		return err
	}
	if s.space(end) != len(s.b) {
		return errSyntax
	}
	for i := 0; i < len(s.b); {
		switch c := s.b[i]; {
		case c == '"':
			i, _ = s.str(i)
		case c == '-' || (c >= '0' && c <= '9'):
			end, _ := s.number(i, true)
			if err := exactNumber(s.b[i:end]); err != nil {
				return err
			}
			i = end
		default:
			i++
		}
	}
	return nil
}

// value is a parsed JSON value, keeping what the formats need: numbers as
// spelled, strings as code points (a lone surrogate escape kept as one), the
// members of an object once each, at the position of their first
// occurrence with the value of their last (as both JSON.parse and
// json.loads keep them).
type value struct {
	kind byte // '{', '[', '"', '0' (number), 't', 'f', 'n'
	num  []byte
	str  []rune
	arr  []value
	keys [][]rune
	vals []value
}

// parseValue parses raw, a single JSON value; numbers longer than
// maxNumberLen are refused.
func parseValue(raw []byte) (value, error) {
	s := scanner{b: string(raw)}
	i := s.space(0)
	end, err := s.value(i, 0, true)
	if err != nil {
		return value{}, err
	}
	if s.space(end) != len(raw) {
		return value{}, errSyntax
	}
	p := parser{b: raw}
	v, _ := p.parse(i)
	return v, nil
}

// parser parses JSON that a scanner accepted.
type parser struct{ b []byte }

func (p *parser) parse(i int) (value, int) {
	b := p.b
	switch c := b[i]; {
	case c == '{':
		v := value{kind: '{'}
		var index map[string]int
		i = skipSpace(b, i+1)
		for b[i] != '}' {
			var k []rune
			k, i = p.str(i)
			i = skipSpace(b, skipSpace(b, i)+1)
			var e value
			e, i = p.parse(i)
			if index == nil {
				index = make(map[string]int)
			}
			if at, ok := index[runeKey(k)]; ok {
				v.vals[at] = e
			} else {
				index[runeKey(k)] = len(v.keys)
				v.keys, v.vals = append(v.keys, k), append(v.vals, e)
			}
			if i = skipSpace(b, i); b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		return v, i + 1
	case c == '[':
		v := value{kind: '['}
		i = skipSpace(b, i+1)
		for b[i] != ']' {
			var e value
			e, i = p.parse(i)
			v.arr = append(v.arr, e)
			if i = skipSpace(b, i); b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		return v, i + 1
	case c == '"':
		s, end := p.str(i)
		return value{kind: '"', str: s}, end
	case c == 't':
		return value{kind: 't'}, i + 4
	case c == 'f':
		return value{kind: 'f'}, i + 5
	case c == 'n':
		return value{kind: 'n'}, i + 4
	}
	end := i
	for end < len(b) && strings.IndexByte("+-.0123456789eE", b[end]) >= 0 {
		end++
	}
	return value{kind: '0', num: b[i:end]}, end
}

// runeKey is a map key for s that keeps lone surrogates apart from U+FFFD,
// which string(s) would make of them.
func runeKey(s []rune) string {
	b := make([]byte, 0, 3*len(s))
	for _, r := range s {
		b = append(b, byte(r>>16), byte(r>>8), byte(r))
	}
	return string(b)
}

// str decodes the string at b[i] into code points; a pair of surrogate
// escapes becomes one code point, a lone one stays, invalid UTF-8 becomes
// U+FFFD.
func (p *parser) str(i int) ([]rune, int) {
	b := p.b
	var s []rune
	for i++; b[i] != '"'; {
		c := b[i]
		if c != '\\' {
			r, n := utf8.DecodeRune(b[i:])
			s = append(s, r)
			i += n
			continue
		}
		switch e := b[i+1]; e {
		case 'b':
			s = append(s, '\b')
		case 'f':
			s = append(s, '\f')
		case 'n':
			s = append(s, '\n')
		case 'r':
			s = append(s, '\r')
		case 't':
			s = append(s, '\t')
		case 'u':
			r := hex4(b[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) && r < 0xdc00 && i+5 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
				if lo := hex4(b[i+2 : i+6]); lo >= 0xdc00 && lo < 0xe000 {
					s = append(s, utf16.DecodeRune(r, lo))
					i += 6
					continue
				}
			}
			s = append(s, r)
			continue
		default: // " \ /
			s = append(s, rune(e))
		}
		i += 2
	}
	return s, i + 1
}

func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(n)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// maxExactInt is 2^53: every integer up to it in magnitude is a double.
const maxExactInt = 1 << 53

// exactNumber refuses a number by a rule that depends on how it is written,
// not on its value's luck: an integer (no fraction, no exponent) beyond
// ±2^53, or any other number whose shortest double spelling is a different
// number (a decimal with more than about 17 significant digits, or one out
// of a double's range). The number is at most maxNumberLen long, and the
// check is a few strconv calls: no arbitrary-precision arithmetic.
func exactNumber(n string) error {
	if !strings.ContainsAny(n, ".eE") {
		digits := strings.TrimPrefix(n, "-")
		// 2^53 has 16 digits: a longer integer is beyond it.
		if i, err := strconv.ParseInt(digits, 10, 64); len(digits) > 16 || err != nil || i > maxExactInt {
			return fmt.Errorf("integer %s is beyond ±2^53, which a key cannot tell from its neighbours: send it as a string", shorten(n))
		}
		return nil
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return fmt.Errorf("number %s is out of range for a key: send it as a string", shorten(n))
	}
	nearest := strconv.FormatFloat(f, 'g', -1, 64)
	if !sameDecimal(n, nearest) {
		return fmt.Errorf("number %s has more precision than a key keeps (it would equal %s): send it as a string", shorten(n), nearest)
	}
	return nil
}

func shorten(n string) string { return redact.String(n) }

// sameDecimal reports whether two JSON numbers have the same value, by
// comparing their significant digits and decimal exponents.
func sameDecimal(a, b string) bool {
	da, ea, na, oka := decimal(a)
	db, eb, nb, okb := decimal(b)
	if !oka || !okb {
		return false
	}
	if da == "" || db == "" { // zero, whatever its sign
		return da == db
	}
	return da == db && ea == eb && na == nb
}

// decimal splits a JSON number into its sign, its significant digits
// (without leading or trailing zeros) and the exponent e such that the
// number is 0.digits × 10^e.
func decimal(n string) (digits string, exp int, neg bool, ok bool) {
	neg = strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	mant, e, hasExp := strings.Cut(strings.ToLower(n), "e")
	if hasExp {
		x, err := strconv.Atoi(e)
		if err != nil || x > 1<<20 || x < -1<<20 {
			return "", 0, false, false
		}
		exp = x
	}
	whole, frac, _ := strings.Cut(mant, ".")
	all := whole + frac
	exp += len(whole)
	trimmed := strings.TrimLeft(all, "0")
	exp -= len(all) - len(trimmed)
	return strings.TrimRight(trimmed, "0"), exp, neg, true
}

// appendPython appends Python's json.dumps(v, sort_keys=True) of v.
func appendPython(dst []byte, v value) []byte {
	switch v.kind {
	case '{':
		order := make([]int, len(v.keys))
		for n := range order {
			order[n] = n
		}
		slices.SortFunc(order, func(a, b int) int { return slices.Compare(v.keys[a], v.keys[b]) })
		dst = append(dst, '{')
		for n, at := range order {
			if n > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendPythonString(dst, v.keys[at])
			dst = append(dst, ": "...)
			dst = appendPython(dst, v.vals[at])
		}
		return append(dst, '}')
	case '[':
		dst = append(dst, '[')
		for n, e := range v.arr {
			if n > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendPython(dst, e)
		}
		return append(dst, ']')
	case '"':
		return appendPythonString(dst, v.str)
	case 't':
		return append(dst, "true"...)
	case 'f':
		return append(dst, "false"...)
	case 'n':
		return append(dst, "null"...)
	}
	n := string(v.num)
	if !strings.ContainsAny(n, ".eE") { // a Python int, printed exactly
		if strings.Trim(n, "-0") == "" {
			return append(dst, '0')
		}
		return append(dst, n...)
	}
	f, _ := strconv.ParseFloat(n, 64) // ±Inf when out of range, as float() gives
	return appendPythonFloat(dst, f)
}

// appendPythonFloat appends Python's repr of f.
func appendPythonFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	digits, decpt, neg := shortest(f)
	if neg {
		dst = append(dst, '-')
	}
	if decpt > -4 && decpt <= 16 { // repr's fixed notation
		switch {
		case decpt <= 0:
			dst = append(dst, "0."...)
			dst = append(dst, strings.Repeat("0", -decpt)...)
			return append(dst, digits...)
		case decpt >= len(digits):
			dst = append(dst, digits...)
			dst = append(dst, strings.Repeat("0", decpt-len(digits))...)
			return append(dst, ".0"...)
		}
		return append(append(append(dst, digits[:decpt]...), '.'), digits[decpt:]...)
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(append(dst, '.'), digits[1:]...)
	}
	e := decpt - 1
	dst = append(dst, 'e')
	if e < 0 {
		dst, e = append(dst, '-'), -e
	} else {
		dst = append(dst, '+')
	}
	if e < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(e), 10)
}

// shortest returns the shortest decimal digits that read back as f, and
// the position of the decimal point: f = 0.digits × 10^decpt. Zero is "0"
// with decpt 1.
func shortest(f float64) (digits string, decpt int, neg bool) {
	s := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±dd
	neg = s[0] == '-'
	s = strings.TrimPrefix(s, "-")
	mant, e, _ := strings.Cut(s, "e")
	x, _ := strconv.Atoi(e)
	return strings.Replace(mant, ".", "", 1), x + 1, neg
}

// shortEscape returns the two-character escape that both Python's
// json.dumps and JavaScript's JSON.stringify write for r, or "" when r has
// none.
func shortEscape(r rune) string {
	switch r {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	}
	return ""
}

func appendPythonString(dst []byte, s []rune) []byte {
	dst = append(dst, '"')
	for _, r := range s {
		if e := shortEscape(r); e != "" {
			dst = append(dst, e...)
			continue
		}
		switch {
		case r >= ' ' && r <= '~':
			dst = append(dst, byte(r))
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			dst = appendU(appendU(dst, hi), lo)
		default:
			dst = appendU(dst, r)
		}
	}
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	const hexDigits = "0123456789abcdef"
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// appendTypeScript appends JavaScript's JSON.stringify(deepSort(v)), where
// deepSort (Powertools') sorts object keys with
// (a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1).
func appendTypeScript(dst []byte, v value) []byte {
	switch v.kind {
	case '{':
		type member struct {
			index int64 // an array-index key's number, else -1
			lower []uint16
			at    int
		}
		ms := make([]member, 0, len(v.keys))
		for n, k := range v.keys {
			if string(k) == "__proto__" { // acc["__proto__"] = … sets the prototype: no own property
				continue
			}
			ms = append(ms, member{index: arrayIndex(k), lower: utf16.Encode(jsLower(k)), at: n})
		}
		// JavaScript enumerates array-index keys first, in numeric order,
		// then the others in the order deepSort created them: a stable
		// sort by lower case (V8's sort is stable, and the comparator's 1
		// for equal keys keeps them in the order sent).
		slices.SortStableFunc(ms, func(a, b member) int {
			switch {
			case a.index >= 0 && b.index >= 0:
				return cmpInt(a.index, b.index)
			case a.index >= 0:
				return -1
			case b.index >= 0:
				return 1
			}
			return slices.Compare(a.lower, b.lower)
		})
		dst = append(dst, '{')
		for n, m := range ms {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSString(dst, v.keys[m.at])
			dst = append(dst, ':')
			dst = appendTypeScript(dst, v.vals[m.at])
		}
		return append(dst, '}')
	case '[':
		dst = append(dst, '[')
		for n, e := range v.arr {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = appendTypeScript(dst, e)
		}
		return append(dst, ']')
	case '"':
		return appendJSString(dst, v.str)
	case 't':
		return append(dst, "true"...)
	case 'f':
		return append(dst, "false"...)
	case 'n':
		return append(dst, "null"...)
	}
	f, _ := strconv.ParseFloat(string(v.num), 64)
	return appendJSNumber(dst, f)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// arrayIndex returns the number of a key that JavaScript treats as an array
// index (the canonical decimal spelling of 0 to 2^32-2), or -1.
func arrayIndex(k []rune) int64 {
	if len(k) == 0 || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return -1
	}
	var n int64
	for _, r := range k {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int64(r-'0')
	}
	if n > 1<<32-2 {
		return -1
	}
	return n
}

// jsLower is JavaScript's String.prototype.toLowerCase: Unicode's full
// lower-case mapping, with its one unconditional special case (U+0130) and
// the final sigma.
func jsLower(s []rune) []rune {
	out := make([]rune, 0, len(s))
	for n, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
			out = append(out, r)
		case r == 0x130:
			out = append(out, 'i', 0x307)
		case r == 0x3a3 && finalSigma(s, n):
			out = append(out, 0x3c2)
		case utf16.IsSurrogate(r):
			out = append(out, r)
		default:
			out = append(out, unicode.ToLower(r))
		}
	}
	return out
}

// finalSigma reports whether the sigma at s[n] ends a word: preceded by a
// cased letter and not followed by one, skipping case-ignorable characters.
func finalSigma(s []rune, n int) bool {
	before := false
	for i := n - 1; i >= 0; i-- {
		if caseIgnorable(s[i]) {
			continue
		}
		before = cased(s[i])
		break
	}
	if !before {
		return false
	}
	for i := n + 1; i < len(s); i++ {
		if caseIgnorable(s[i]) {
			continue
		}
		return !cased(s[i])
	}
	return true
}

func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
}

func caseIgnorable(r rune) bool {
	return r == '\'' || r == '.' || r == ':' || r == 0xb7 || r == 0x2019 ||
		unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// appendJSString appends JSON.stringify of a string: the escapes JSON
// requires, lone surrogates escaped, everything else as UTF-8.
func appendJSString(dst []byte, s []rune) []byte {
	dst = append(dst, '"')
	for _, r := range s {
		if e := shortEscape(r); e != "" {
			dst = append(dst, e...)
			continue
		}
		switch {
		case r < ' ' || utf16.IsSurrogate(r):
			dst = appendU(dst, r)
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, '"')
}

// appendJSNumber appends JavaScript's Number::toString of f, as
// JSON.stringify writes it (non-finite numbers as null).
func appendJSNumber(dst []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0')
	}
	digits, n, neg := shortest(f)
	if neg {
		dst = append(dst, '-')
	}
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		return append(dst, strings.Repeat("0", n-k)...)
	case 0 < n && n <= 21:
		return append(append(append(dst, digits[:n]...), '.'), digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, "0."...)
		dst = append(dst, strings.Repeat("0", -n)...)
		return append(dst, digits...)
	}
	dst = append(dst, digits[0])
	if k > 1 {
		dst = append(append(dst, '.'), digits[1:]...)
	}
	dst = append(dst, 'e')
	if n-1 >= 0 {
		dst = append(dst, '+')
	}
	return strconv.AppendInt(dst, int64(n-1), 10)
}
