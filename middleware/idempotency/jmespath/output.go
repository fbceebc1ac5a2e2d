package jmespath

import (
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// spell appends v as JSON.stringify writes it, which is to_string's
// result in both runtimes only where Python's json.dumps(v, separators=(',',
// ':')) writes the same: it refuses a string or name with a character
// beyond '~' (Python escapes it), a number the two spell differently, and
// an object whose members the two list in different orders.
func (ev *evaluator) spell(dst []byte, v value) ([]byte, error) {
	if err := ev.step(1); err != nil {
		return nil, err
	}
	var err error
	switch v.k {
	case kNull, kTrue, kFalse:
		if dst, err = ev.reserve(dst, 5); err != nil {
			return nil, err
		}
		return append(dst, [...]string{kNull: "null", kTrue: "true", kFalse: "false"}[v.k]...), nil
	case kNumber:
		var py, js [64]byte
		p, j := jsonkey.AppendPythonNumber(py[:0], v.s), jsonkey.AppendJSNumber(js[:0], v.s)
		if string(p) != string(j) {
			return nil, refuse(errSpelling)
		}
		if dst, err = ev.reserve(dst, len(j)); err != nil {
			return nil, err
		}
		return append(dst, j...), nil
	case kString:
		s, err := ev.text(v)
		if err != nil {
			return nil, err
		}
		return ev.appendASCII(dst, s)
	case kArray, kObject:
		if v.k == kObject {
			if err := ev.ordered(v); err != nil {
				return nil, err
			}
		}
		return ev.appendComposite(dst, v, ev.appendASCII, ev.spell)
	}
	return nil, refuse(errUndef)
}

// appendComposite appends the array or object v without space, its names
// by name and its values by elem.
func (ev *evaluator) appendComposite(dst []byte, v value,
	name func([]byte, string) ([]byte, error), elem func([]byte, value) ([]byte, error)) ([]byte, error) {
	open, closing := byte('['), byte(']')
	if v.k == kObject {
		open, closing = '{', '}'
	}
	dst, err := ev.reserve(dst, 2)
	if err != nil {
		return nil, err
	}
	dst = append(dst, open)
	first := true
	err = ev.each(v, func(key string, e value) (bool, error) {
		var err error
		if !first {
			if dst, err = ev.reserve(dst, 1); err != nil {
				return false, err
			}
			dst = append(dst, ',')
		}
		first = false
		if v.k == kObject {
			if dst, err = name(dst, key); err != nil {
				return false, err
			}
			if dst, err = ev.reserve(dst, 1); err != nil {
				return false, err
			}
			dst = append(dst, ':')
		}
		dst, err = elem(dst, e)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if dst, err = ev.reserve(dst, 1); err != nil {
		return nil, err
	}
	return append(dst, closing), nil
}

// appendASCII appends the string s, which both runtimes escape alike only
// when it has no character beyond '~'.
func (ev *evaluator) appendASCII(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if s[i] > '~' {
			return nil, refuse(errSpelling)
		}
	}
	return ev.appendString(dst, s)
}

// appendString appends s as a JSON string, as JavaScript's JSON.stringify
// escapes it, charging the budget for the room it takes.
func (ev *evaluator) appendString(dst []byte, s string) ([]byte, error) {
	size := 2
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
			size += 2
		case r < 0x20:
			size += 6
		default:
			size += utf8.RuneLen(r)
		}
	}
	dst, err := ev.reserve(dst, size)
	if err != nil {
		return nil, err
	}
	return jsonkey.AppendString(dst, s), nil
}

// keyJSON is the selection as JSON text, the key's value: strings as
// JSON.stringify writes them, numbers as the message spelled them,
// arrays and objects without space, members in the order sent.
func (ev *evaluator) keyJSON(dst []byte, v value) ([]byte, error) {
	if err := ev.step(1); err != nil {
		return nil, err
	}
	var err error
	switch v.k {
	case kNull, kTrue, kFalse:
		return ev.spell(dst, v)
	case kNumber:
		if dst, err = ev.reserve(dst, len(v.s)); err != nil {
			return nil, err
		}
		return append(dst, v.s...), nil
	case kString:
		s, err := ev.text(v)
		if err != nil {
			return nil, err
		}
		return ev.appendUTF8(dst, s)
	case kArray, kObject:
		if v.f&fOpaque != 0 {
			return nil, refuse(errOpaque)
		}
		if v.raw() && len(ev.stale) == 0 {
			return ev.compact(dst, v.s)
		}
		if v.f&fUnordered != 0 && !v.raw() && caseTies(v.c.keys) {
			// Powertools TypeScript orders names that differ only in case
			// as they were sent, which Lambda's event does not fix.
			return nil, refuse(errUnordered)
		}
		return ev.appendComposite(dst, v, ev.appendUTF8, ev.keyJSON)
	}
	return nil, refuse(errUndef)
}

// appendUTF8 appends s as appendString does, refusing invalid UTF-8.
func (ev *evaluator) appendUTF8(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, refuse(errUTF8)
	}
	return ev.appendString(dst, s)
}

// compact appends the raw array or object text without space, its strings
// as JSON.stringify writes them, in one pass.
func (ev *evaluator) compact(dst []byte, text string) ([]byte, error) {
	if err := ev.step(int64(len(text))); err != nil {
		return nil, err
	}
	dst, err := ev.reserve(dst, len(text))
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case isSpace(c):
		case c == '"':
			end := skipString(text, i)
			q := text[i:end]
			if strings.IndexByte(q, '\\') < 0 {
				dst = append(dst, q...) // already as JSON.stringify writes it
			} else if dst, err = ev.appendString(dst, decodeString(q)); err != nil {
				return nil, err
			}
			i = end - 1
		default:
			dst = append(dst, c)
		}
	}
	return dst, nil
}

// caseTies reports whether two names differ only in case.
func caseTies(names []string) bool {
	seen := make(map[string]bool, len(names))
	for _, k := range names {
		l := strings.ToLower(k)
		if seen[l] {
			return true
		}
		seen[l] = true
	}
	return false
}

// keySize estimates the length of keyJSON's text of v, to allocate the
// key once.
func keySize(v value) int {
	switch v.k {
	case kNumber:
		return len(v.s)
	case kString:
		if v.raw() {
			return len(v.s)
		}
		return 2 + len(v.s) + len(v.s)/4
	case kArray, kObject:
		if v.raw() {
			return len(v.s)
		}
		n := 2
		for i, e := range v.c.vals {
			n += 1 + keySize(e)
			if v.c.keys != nil {
				n += 3 + len(v.c.keys[i]) + len(v.c.keys[i])/4
			}
		}
		return n
	}
	return 5
}

// missing reports whether a selection is no key: null, "", an empty array
// or object, or one whose values are all null.
func (ev *evaluator) missing(v value) (bool, error) {
	switch v.k {
	case kNull:
		return true, nil
	case kString:
		return !truthy(v), nil
	case kArray, kObject:
		all := true
		err := ev.each(v, func(_ string, e value) (bool, error) {
			all = e.k == kNull
			return all, nil
		})
		return all, err
	}
	return false, nil
}

func describe(v value) string {
	switch v.k {
	case kNull:
		return "null"
	case kString:
		return `""`
	case kArray:
		if !truthy(v) {
			return "an empty array"
		}
		return "an array of nulls"
	}
	if !truthy(v) {
		return "an empty object"
	}
	return "an object of nulls"
}

// unsafeString is b as a string, without a copy: b is not written again.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
