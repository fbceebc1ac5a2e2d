package jsonkey

import (
	"hash/maphash"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner validates JSON text in one pass. Every value is checked for
// syntax and depth; a strict value also keeps the rest of the rules (see
// the package doc), duplicate names only when dups is set.
type scanner struct {
	s    string
	dups bool
	// hashes holds the hashes of the member names of the strict objects
	// being scanned, each object's after the ones of the objects around
	// it, for the duplicate check: only names of one hash are compared.
	hashes []uint64
	// tree, when set, gets a node for each value and member name scanned
	// (see newTree).
	tree *tree
}

// nameSeed seeds nameHash, anew in each process, so that no text can be
// built to make its names' hashes collide.
var nameSeed = maphash.MakeSeed()

// nameHash is the hash of a member name for the duplicate check; a test
// replaces it to make hashes collide.
var nameHash = func(name string) uint64 { return maphash.String(nameSeed, name) }

// smallObject is the number of members up to which duplicates are found
// as each name comes, by comparing it with the others; a larger object's
// names are sorted once it ends.
const smallObject = 16

// Space returns the index of the first byte at or after i in text that is
// not JSON white space.
func Space(text string, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
		i++
	}
	return i
}

func (s *scanner) space(i int) int { return Space(s.s, i) }

// value scans the value at s[i], depth levels deep, and returns the index
// after it.
func (s *scanner) value(i, depth int, strict bool) (int, error) {
	if s.tree == nil {
		return s.scan(i, depth, strict)
	}
	n := s.tree.begin(i)
	end, err := s.scan(i, depth, strict)
	s.tree.done(n)
	return end, err
}

// scan is value, without the node.
func (s *scanner) scan(i, depth int, strict bool) (int, error) {
	b := s.s
	if i >= len(b) {
		return 0, &Error{ErrSyntax, i}
	}
	switch c := b[i]; {
	case c == '"':
		return s.str(i, strict)
	case c == '{':
		return s.object(i, depth, strict)
	case c == '[':
		i, depth, more, err := s.open(i, depth, ']')
		for more {
			if i, err = s.value(i, depth, strict); err != nil {
				return 0, err
			}
			i, more, err = s.next(s.space(i), ']')
		}
		return i, err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i, strict)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	}
	return 0, &Error{ErrSyntax, i}
}

// object scans the object at s[i]; a strict one may not name a member
// twice.
func (s *scanner) object(i, depth int, strict bool) (int, error) {
	begin := i
	i, depth, more, err := s.open(i, depth, '}')
	start := len(s.hashes)
	for more {
		at := i
		var quoted string
		if quoted, i, err = s.member(i, strict); err != nil {
			return 0, err
		}
		if s.tree != nil {
			s.tree.done(s.tree.begin(at))
		}
		if strict && s.dups {
			n, _ := Unquote(quoted) // valid: the string was scanned strictly
			h := nameHash(n)
			if len(s.hashes)-start < smallObject && slices.Contains(s.hashes[start:], h) && s.names(begin, at, n) {
				return 0, &Error{ErrDuplicateName, at}
			}
			if len(s.hashes) == cap(s.hashes) { // double: append grows large slices by a quarter, allocating five times their size
				s.hashes = slices.Grow(s.hashes, max(len(s.hashes), smallObject))
			}
			s.hashes = append(s.hashes, h)
		}
		if i, err = s.value(i, depth, strict); err != nil {
			return 0, err
		}
		i, more, err = s.next(s.space(i), '}')
	}
	if hashes := s.hashes[start:]; err == nil && len(hashes) > smallObject {
		// Equal hashes sort together; only their names are compared, as
		// the object is read again.
		slices.Sort(hashes)
		if at := s.duplicate(begin, hashes); at >= 0 {
			err = &Error{ErrDuplicateName, at}
		}
	}
	s.hashes = s.hashes[:start]
	return i, err
}

// members calls fn with the offset and name of each member of the checked
// object at s[i] that starts before end, in order, until fn returns false.
func (s *scanner) members(i, end int, fn func(at int, name string) bool) {
	r := scanner{s: s.s} // reads again: no duplicate check, no nodes
	i = r.space(i + 1)
	for more := r.s[i] != '}'; more && i < end; {
		quoted, v, _ := r.member(i, false)
		if name, _ := Unquote(quoted); !fn(i, name) {
			return
		}
		i, _ = r.value(v, 0, false)
		i, more, _ = r.next(r.space(i), '}')
	}
}

// names reports whether the checked members of the object at s[i] before
// end name one n.
func (s *scanner) names(i, end int, n string) bool {
	found := false
	s.members(i, end, func(_ int, name string) bool {
		found = name == n
		return !found
	})
	return found
}

// duplicate returns the offset of the second member named m of the
// checked object at s[i], where m is the least name it has twice, or -1
// when it names no member twice. sorted holds the hashes of its names,
// sorted.
func (s *scanner) duplicate(i int, sorted []uint64) int {
	var shared []uint64 // the hashes of more than one name, sorted
	for k := 1; k < len(sorted); k++ {
		if sorted[k] == sorted[k-1] && (len(shared) == 0 || shared[len(shared)-1] != sorted[k]) {
			shared = append(shared, sorted[k])
		}
	}
	if len(shared) == 0 {
		return -1
	}
	type member struct {
		name string
		at   int
	}
	var same []member // the members whose names have those hashes, in order
	s.members(i, len(s.s), func(at int, name string) bool {
		if _, ok := slices.BinarySearch(shared, nameHash(name)); ok {
			same = append(same, member{name, at})
		}
		return true
	})
	slices.SortStableFunc(same, func(a, b member) int { return strings.Compare(a.name, b.name) })
	for k := 1; k < len(same); k++ {
		if same[k].name == same[k-1].name {
			return same[k].at
		}
	}
	return -1
}

// open enters the object or array that opens at s[i], one level deeper
// than depth, and returns the index of its first member or element (more)
// or, when it is empty, the index after its closing byte.
func (s *scanner) open(i, depth int, closing byte) (next, inner int, more bool, err error) {
	if depth++; depth > MaxDepth {
		return 0, 0, false, &Error{ErrTooDeep, i}
	}
	i = s.space(i + 1)
	if i < len(s.s) && s.s[i] == closing {
		return i + 1, depth, false, nil
	}
	return i, depth, true, nil
}

// member scans an object member's `"name":` at s[i] and returns the name
// as written (quoted) and the index of its value.
func (s *scanner) member(i int, strict bool) (quoted string, value int, err error) {
	b := s.s
	if i >= len(b) || b[i] != '"' {
		return "", 0, &Error{ErrSyntax, i}
	}
	end, err := s.str(i, strict)
	if err != nil {
		return "", 0, err
	}
	quoted = b[i:end]
	i = s.space(end)
	if i >= len(b) || b[i] != ':' {
		return "", 0, &Error{ErrSyntax, i}
	}
	return quoted, s.space(i + 1), nil
}

// next scans what follows a member or element at s[i]: a comma (more, and
// the index of the next one) or closing (the index after it).
func (s *scanner) next(i int, closing byte) (int, bool, error) {
	if i < len(s.s) {
		if c := s.s[i]; c == ',' {
			return s.space(i + 1), true, nil
		} else if c == closing {
			return i + 1, false, nil
		}
	}
	return 0, false, &Error{ErrSyntax, i}
}

func (s *scanner) literal(i int, lit string) (int, error) {
	if !strings.HasPrefix(s.s[i:], lit) {
		return 0, &Error{ErrSyntax, i}
	}
	return i + len(lit), nil
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at s[i]; a
// strict one is refused after MaxNumberLen+1 of its bytes.
func (s *scanner) number(i int, strict bool) (int, error) {
	b, start := s.s, i
	limit := len(b)
	if strict && limit-start > MaxNumberLen+1 {
		limit = start + MaxNumberLen + 1
	}
	digits := func(i int) (int, bool) {
		j := i
		for j < limit && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	ok := true
	if i < limit && b[i] == '0' {
		i++
	} else {
		i, ok = digits(i)
	}
	if ok && i < limit && b[i] == '.' {
		i, ok = digits(i + 1)
	}
	if ok && i < limit && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < limit && (b[i] == '+' || b[i] == '-') {
			i++
		}
		i, ok = digits(i)
	}
	switch {
	case strict && i-start > MaxNumberLen:
		return 0, &Error{ErrNumberTooLong, start}
	case !ok:
		return 0, &Error{ErrSyntax, i}
	}
	return i, nil
}

// str scans the string at s[i] and returns the index after it. A strict
// string must be valid UTF-8 and pair every surrogate escape.
func (s *scanner) str(i int, strict bool) (int, error) {
	b := s.s
	for i++; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return 0, &Error{ErrSyntax, i}
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(b, i+2)
				if !ok {
					return 0, &Error{ErrSyntax, i}
				}
				at := i
				if i += 6; strict && utf16.IsSurrogate(r) {
					if _, i, ok = pair(b, i, r); !ok {
						return 0, &Error{ErrLoneSurrogate, at}
					}
				}
			default:
				return 0, &Error{ErrSyntax, i}
			}
		case c < 0x20:
			return 0, &Error{ErrSyntax, i}
		case c < utf8.RuneSelf || !strict:
			i++
		default:
			r, n := utf8.DecodeRuneInString(b[i:])
			if r == utf8.RuneError && n == 1 {
				return 0, &Error{ErrInvalidUTF8, i}
			}
			i += n
		}
	}
	return 0, &Error{ErrSyntax, len(b)}
}

// hex4 reads the four hex digits at b[i:i+4].
func hex4(b string, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(b[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// pair reads the low surrogate escape at b[i] that must follow the
// surrogate r, and returns the code point of the two and the index after
// them; false when r is not a high surrogate or no low one follows.
func pair(b string, i int, r rune) (rune, int, bool) {
	lo, ok := hex4(b, i+2)
	if r >= 0xdc00 || !strings.HasPrefix(b[i:], `\u`) || !ok || lo < 0xdc00 || lo >= 0xe000 {
		return 0, i, false
	}
	return utf16.DecodeRune(r, lo), i + 6, true
}

// Unquote returns the string that quoted, a JSON string as written
// (quotes included) in text that is JSON, spells. It reports false when
// the string breaks a rule (invalid UTF-8, an unpaired surrogate escape):
// such a string equals no Go string, and is never replaced by one. For
// other text it reports false or returns some string; it never panics.
func Unquote(quoted string) (string, bool) {
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return "", false
	}
	inner := quoted[1 : len(quoted)-1]
	if strings.IndexByte(inner, '\\') < 0 {
		return inner, utf8.ValidString(inner)
	}
	out := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); {
		c := inner[i]
		if c != '\\' {
			r, n := utf8.DecodeRuneInString(inner[i:])
			if r == utf8.RuneError && n == 1 {
				return "", false
			}
			out = append(out, inner[i:i+n]...)
			i += n
			continue
		}
		if i+1 >= len(inner) {
			return "", false
		}
		e := inner[i+1]
		i += 2
		switch e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(inner, i)
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r, i, ok = pair(inner, i, r); !ok {
					return "", false
				}
			}
			out = utf8.AppendRune(out, r)
		case '"', '\\', '/':
			out = append(out, e)
		default:
			return "", false
		}
	}
	return string(out), true
}
