package jsonkey

import (
	"cmp"
	"io"
	"iter"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// flushAt is the size at which a spelling is handed to its writer, so that
// a large value is hashed in pieces instead of spelled whole in memory.
const flushAt = 32 << 10

// style is what a spelling makes of each part of a value.
type style struct {
	comma, colon string                                     // the separators
	order        func(*speller, []member) ([]member, error) // an object's members, in the order written
	ascii        bool                                       // strings as Python writes them
	number       func(dst []byte, n string) ([]byte, error) // appends a number
}

var (
	python = style{comma: ", ", colon: ": ", ascii: true,
		order: func(p *speller, ms []member) ([]member, error) {
			return p.sorted(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
		},
		number: func(dst []byte, n string) ([]byte, error) { return AppendPythonNumber(dst, n), nil },
	}
	typeScript = style{comma: ",", colon: ":", order: (*speller).deepSort,
		number: func(dst []byte, n string) ([]byte, error) { return AppendJSNumber(dst, n), nil },
	}
	canonical = style{comma: ",", colon: ":",
		order: func(p *speller, ms []member) ([]member, error) {
			return p.sorted(ms, func(a, b member) int { return compareUTF16(a.name, b.name) })
		},
		number: func(dst []byte, n string) ([]byte, error) {
			if err := ExactNumber(n); err != nil {
				return nil, err
			}
			return AppendJSNumber(dst, n), nil
		},
	}
)

// sorted sorts ms by cmp, an order of names in which only equal names
// compare equal, and refuses two equal ones: the spellings check for
// duplicate names as they sort, not before.
func (p *speller) sorted(ms []member, cmp func(a, b member) int) ([]member, error) {
	slices.SortFunc(ms, cmp)
	for k := 1; k < len(ms); k++ {
		if ms[k].name == ms[k-1].name {
			return nil, &Error{ErrDuplicateName, int(p.nodes[max(ms[k].at, ms[k-1].at)].at)}
		}
	}
	return ms, nil
}

// speller writes a spelling of a tree to w, in pieces of about flushAt.
type speller struct {
	*tree
	style
	w   io.Writer
	buf []byte
	err error
}

func spell(w io.Writer, text string, st style) error {
	if err := check(text, false); err != nil { // duplicate names are found as members are sorted
		return err
	}
	t, err := newTree(text)
	if err != nil {
		return err
	}
	p := &speller{tree: t, style: st, w: w, buf: make([]byte, 0, min(2*len(text)+16, flushAt+64))}
	if err := p.value(0); err != nil {
		return err
	}
	p.flush(0)
	return p.err
}

// flush hands the spelling so far to w once it holds at least limit bytes.
func (p *speller) flush(limit int) {
	if p.w == nil || len(p.buf) < limit || len(p.buf) == 0 {
		return
	}
	if p.err == nil {
		_, p.err = p.w.Write(p.buf)
	}
	p.buf = p.buf[:0]
}

func (p *speller) write(s string) { p.buf = append(p.buf, s...) }

// value writes node n.
func (p *speller) value(n int) (err error) {
	switch p.kind(n) {
	case '{':
		ms, err := p.order(p, p.members(n))
		if err != nil {
			return err
		}
		p.write("{")
		for k, m := range ms {
			if k > 0 {
				p.write(p.comma)
			}
			p.string(runesOf(m.name))
			p.write(p.colon)
			if err := p.value(int(m.value)); err != nil {
				return err
			}
		}
		p.write("}")
	case '[':
		p.write("[")
		first := true
		for c := range p.children(n) {
			if !first {
				p.write(p.comma)
			}
			first = false
			if err = p.value(c); err != nil {
				return err
			}
		}
		p.write("]")
	case '"':
		p.string(quotedRunes(p.text(n)))
	case 't', 'f', 'n':
		p.write(p.text(n))
	default:
		p.buf, err = p.number(p.buf, p.text(n))
	}
	p.flush(flushAt)
	return err
}

// WritePython writes Python's json.dumps(json.loads(text), sort_keys=True)
// to w: ", " and ": " separators, object keys sorted by code point, every
// character outside ASCII space to "~" escaped as \uXXXX (surrogate pairs
// beyond the BMP), integers exactly as written, other numbers in Python's
// float repr (10.0, 1e-05, 1e+16, Infinity). text must keep the rules (see
// the package doc); an [*Error] says which it breaks.
func WritePython(w io.Writer, text string) error { return spell(w, text, python) }

// WriteTypeScript writes JavaScript's JSON.stringify(deepSort(JSON.parse(
// text))) to w, where deepSort (Powertools TypeScript's) sorts object keys
// with (a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1): compact,
// keys that are array indices (such as "7") first in numeric order, then
// the others by their lower case in UTF-16 order (ties in the order sent),
// "__proto__" dropped, non-ASCII characters as UTF-8, numbers as doubles
// in JavaScript's spelling (9007199254740993 becomes 9007199254740992, 1e400
// becomes null). text must keep the rules; besides, an object with two or
// more keys is refused ([ErrCaseVersioned]) when a key holds a character
// whose lower case, or whose part in the final-sigma rule, is not the same
// in every Unicode version from 15.0 on (see [CaseStable]), since the runtime
// sorts by the lower case of its own Unicode version; and an object whose
// keys the releases before this one ordered otherwise ([ErrSortChanged]: a
// final sigma after ª, Ⓐ, ‘, ·, …, which they read as not final), so that no
// id they gave changes.
func WriteTypeScript(w io.Writer, text string) error { return spell(w, text, typeScript) }

// deepSort orders an object's members as JSON.stringify writes the object
// that Powertools' deepSort builds.
func (p *speller) deepSort(ms []member) ([]member, error) {
	type sortKey struct {
		lower string
		index uint32 // an array-index key's number, or notIndex
		m     int32  // the member, in ms
	}
	const notIndex = 1<<32 - 1
	keys := make([]sortKey, 0, len(ms))
	protos, proto := 0, -1
	for i, m := range ms {
		if len(ms) > 1 && !CaseStable(m.name) {
			return nil, &Error{ErrCaseVersioned, int(p.nodes[m.at].at)}
		}
		if m.name == "__proto__" { // acc["__proto__"] = … sets the prototype: no own property
			if protos++; protos > 1 {
				return nil, &Error{ErrDuplicateName, int(p.nodes[m.at].at)}
			}
			// Its value is not spelled, and so not sorted: its names are
			// checked here.
			if err := p.duplicates(int(m.value), int(p.nodes[m.value].next)); err != nil {
				return nil, err
			}
			proto = i
			continue
		}
		index := uint32(notIndex)
		if n := arrayIndex(m.name); n >= 0 {
			index = uint32(n)
		}
		keys = append(keys, sortKey{lower: jsLower(m.name), index: index, m: int32(i)})
	}
	// JavaScript enumerates array-index keys first, in numeric order, then
	// the others in the order deepSort created them: a stable sort by lower
	// case (V8's sort is stable, and the comparator's 1 for equal keys keeps
	// them in the order sent).
	byKey := func(a, b sortKey) int {
		if c := cmp.Compare(a.index, b.index); c != 0 || a.index != notIndex {
			return c
		}
		return compareUTF16(a.lower, b.lower)
	}
	slices.SortStableFunc(keys, byKey)
	if changed := slices.IndexFunc(ms, func(m member) bool { return sigmaChanged(m.name) }); changed >= 0 {
		// Earlier releases lower-cased this key otherwise: if they ordered
		// the object otherwise, its id would change; it is refused instead.
		before := slices.Clone(keys)
		for i := range before {
			before[i].lower = lowerBefore(ms[before[i].m].name)
		}
		slices.SortStableFunc(before, func(a, b sortKey) int {
			if c := byKey(a, b); c != 0 || a.index != notIndex {
				return c
			}
			return cmp.Compare(a.m, b.m) // stable: the order sent
		})
		for i := range keys {
			if keys[i].m != before[i].m {
				return nil, &Error{ErrSortChanged, int(p.nodes[ms[changed].at].at)}
			}
		}
	}
	// Equal names sort together, among the keys of one lower case.
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && byKey(keys[i], keys[j]) == 0 {
			j++
		}
		if j-i > 1 {
			run := make([]member, 0, j-i)
			for _, k := range keys[i:j] {
				run = append(run, ms[k.m])
			}
			if _, err := p.sorted(run, func(a, b member) int { return strings.Compare(a.name, b.name) }); err != nil {
				return nil, err
			}
		}
		i = j
	}
	// Put ms in the order of keys, in place: ms[k] becomes ms[keys[k].m],
	// cycle by cycle.
	ms = slices.DeleteFunc(ms, func(m member) bool { return m.name == "__proto__" })
	if protos > 0 { // the indices of keys are those of ms before the deletion
		for k := range keys {
			if int(keys[k].m) > proto {
				keys[k].m--
			}
		}
	}
	for start := range keys {
		if keys[start].m < 0 {
			continue
		}
		first, k := ms[start], start
		for {
			next := int(keys[k].m)
			keys[k].m = -1
			if next == start {
				ms[k] = first
				break
			}
			ms[k], k = ms[next], next
		}
	}
	return ms, nil
}

// WriteCanonical writes the canonical form of text (RFC 8785, the JSON
// Canonicalization Scheme) to w: compact, object members sorted by their
// names' UTF-16 code units, strings and numbers as JSON.stringify writes
// them. text must keep the rules, and every number must be one a double
// holds exactly ([ExactNumber]), since the canonical form writes the double.
func WriteCanonical(w io.Writer, text string) error { return spell(w, text, canonical) }

// AppendString appends s as JSON.stringify and RFC 8785 write a string:
// the escapes JSON requires (the short ones where they exist), everything
// else as UTF-8. Invalid UTF-8 in s is written as U+FFFD.
func AppendString(dst []byte, s string) []byte {
	p := speller{buf: dst}
	p.string(runesOf(s))
	return p.buf
}

// string writes a string as JSON.stringify does, or, with ascii, as
// Python's json.dumps does (every character outside ASCII space to "~" as
// \uXXXX, surrogate pairs beyond the BMP).
func (p *speller) string(s iter.Seq[rune]) {
	p.buf = append(p.buf, '"')
	for r := range s {
		switch e := shortEscape(r); {
		case e != "":
			p.write(e)
		case r < ' ' || p.ascii && r > '~' && r <= 0xffff:
			p.buf = appendU(p.buf, r)
		case p.ascii && r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			p.buf = appendU(appendU(p.buf, hi), lo)
		default:
			p.buf = utf8.AppendRune(p.buf, r)
		}
		p.flush(flushAt)
	}
	p.buf = append(p.buf, '"')
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

func appendU(dst []byte, r rune) []byte {
	const hexDigits = "0123456789abcdef"
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// runesOf is the code points of s.
func runesOf(s string) iter.Seq[rune] {
	return func(yield func(rune) bool) {
		for _, r := range s {
			if !yield(r) {
				return
			}
		}
	}
}

// quotedRunes is the code points of the checked JSON string quoted, read
// without building it.
func quotedRunes(quoted string) iter.Seq[rune] {
	return func(yield func(rune) bool) {
		s := quoted[1 : len(quoted)-1]
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == '\\' {
				r, n = unescape(s, i)
			}
			if !yield(r) {
				return
			}
			i += n
		}
	}
}

// unescape reads the escape at s[i] of a checked string: its code point
// and its length (12 for a surrogate pair).
func unescape(s string, i int) (rune, int) {
	switch e := s[i+1]; e {
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, _ := hex4(s, i+2)
		if utf16.IsSurrogate(r) {
			r, _, _ = pair(s, i+6, r)
			return r, 12
		}
		return r, 6
	default: // " \ /
		return rune(e), 2
	}
}

// compareUTF16 compares a and b by their UTF-16 code units, as JavaScript
// compares strings.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := units(ra), units(rb)
			if c := cmp.Compare(ua[0], ub[0]); c != 0 {
				return c
			}
			return cmp.Compare(ua[1], ub[1])
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// units is r's UTF-16 code units; the second is 0 in the BMP.
func units(r rune) [2]rune {
	if r < 0x10000 {
		return [2]rune{r, 0}
	}
	hi, lo := utf16.EncodeRune(r)
	return [2]rune{hi, lo}
}

// arrayIndex returns the number of a key that JavaScript treats as an array
// index (the canonical decimal spelling of 0 to 2^32-2), or -1.
func arrayIndex(k string) int64 {
	if len(k) == 0 || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return -1
	}
	var n int64
	for _, c := range []byte(k) {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	if n > 1<<32-2 {
		return -1
	}
	return n
}
