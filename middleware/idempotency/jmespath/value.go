package jmespath

import (
	"strings"
	"unsafe"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// kind is a value's JMESPath type, plus the two kinds that only the
// evaluator sees.
type kind uint8

const (
	kNull kind = iota
	kFalse
	kTrue
	kNumber
	kString
	kArray
	kObject
	// kUndef is the value of an ordering comparison that Python answers
	// with None (or False) and TypeScript with undefined: both are false
	// when tested, but they differ as values, so only a test may use it.
	kUndef
	// kExpref is an expression reference (&expr), an argument of map,
	// sort_by, min_by and max_by.
	kExpref
)

func (k kind) String() string {
	return [...]string{"null", "boolean", "boolean", "number", "string", "array", "object", "comparison", "expression"}[k]
}

// flags qualify a value.
type flags uint8

const (
	// fRaw: s is the value's JSON text as a validated document spells it
	// (a string quoted and escaped, an array or object with its members).
	fRaw flags = 1 << iota
	// fUnordered: an object whose member order Lambda's event does not
	// give (the record's attributes and messageAttributes): whatever
	// reveals the order (keys, values, *, to_string) is refused.
	fUnordered
	// fOpaque: an object rebuilt from the Go event that Lambda may spell
	// with other members (the record itself, a message attribute): only
	// its members may be selected.
	fOpaque
)

// value is a JSON value as the evaluator holds it: scalars and raw values
// are a string (s), computed arrays and objects a composite (c). A value
// is 32 bytes; raw values share the document's text.
type value struct {
	s string
	c *composite
	k kind
	f flags
}

// composite is an array or object the evaluation built, or an expression
// reference.
type composite struct {
	keys []string // an object's member names, in insertion order; nil for an array
	vals []value
	expr *node // kExpref
}

var (
	null   = value{k: kNull}
	vTrue  = value{k: kTrue}
	vFalse = value{k: kFalse}
	undef  = value{k: kUndef}
)

func boolean(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

// str is a string value holding s, decoded.
func str(s string) value { return value{k: kString, s: s} }

// number is a number value spelled s (a JSON number).
func number(s string) value { return value{k: kNumber, s: s} }

func array(vals []value) value { return value{k: kArray, c: &composite{vals: vals}} }

// rawValue is the value of the validated JSON text s (no surrounding
// space).
func rawValue(s string) value {
	switch s[0] {
	case '{':
		return value{k: kObject, s: s, f: fRaw}
	case '[':
		return value{k: kArray, s: s, f: fRaw}
	case '"':
		return value{k: kString, s: s, f: fRaw}
	case 't':
		return vTrue
	case 'f':
		return vFalse
	case 'n':
		return null
	}
	return number(s)
}

func (v value) raw() bool { return v.f&fRaw != 0 }

// identity is what tells two arrays apart as TypeScript does (by
// reference): a raw array is its text's position in its document (two
// powertools_json calls on one string share it, which only makes the check
// that uses it stricter), a built one its composite.
type identity struct {
	p unsafe.Pointer
	n int
}

func (v value) identity() identity {
	if v.c != nil {
		return identity{p: unsafe.Pointer(v.c)}
	}
	return identity{p: unsafe.Pointer(unsafe.StringData(v.s)), n: len(v.s)}
}

// JSON text helpers. They read text that jsonkey.Check accepted, so they
// check nothing.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func trimJSONSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// skipValue returns the index after the value that begins at s[i].
func skipValue(s string, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch s[i] {
			case '"':
				i = skipString(s, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	}
	for i < len(s) && strings.IndexByte("+-.0123456789eE", s[i]) >= 0 {
		i++
	}
	return i
}

// skipString returns the index after the string that begins at s[i].
func skipString(s string, i int) int {
	for i++; ; i++ {
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
}

// eachRaw calls fn with the text of each element of the raw array s, or
// with each member's quoted name and value text of the raw object s, in
// document order, until fn returns false.
func eachRaw(s string, fn func(key, val string) bool) {
	object := s[0] == '{'
	i := skipSpace(s, 1)
	if s[i] == ']' || s[i] == '}' {
		return
	}
	for {
		var key string
		if object {
			end := skipString(s, i)
			key = s[i:end]
			i = skipSpace(s, skipSpace(s, end)+1) // past ':'
		}
		end := skipValue(s, i)
		if !fn(key, s[i:end]) {
			return
		}
		i = skipSpace(s, end)
		if s[i] != ',' {
			return
		}
		i = skipSpace(s, i+1)
	}
}

// decodeString decodes the quoted JSON string q.
func decodeString(q string) string {
	s, _ := jsonkey.Unquote(q) // checked text: always valid
	return s
}

// keyEquals reports whether the quoted JSON string q spells name, without
// allocating when q has no escapes.
func keyEquals(q, name string) bool {
	inner := q[1 : len(q)-1]
	if strings.IndexByte(inner, '\\') < 0 {
		return inner == name
	}
	return decodeString(q) == name
}
