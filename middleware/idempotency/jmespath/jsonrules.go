package jmespath

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON reading rules for key material: what powertools_json and JSON
// literals accept. A text that Python's json.loads and JavaScript's
// JSON.parse could read as different values, or that one of them refuses,
// is refused.
const (
	// maxNumberLen is the longest number read, as package idempotency
	// bounds numbers in key material.
	maxNumberLen = 100
	// maxDepth bounds the nesting of arrays and objects.
	maxDepth = 10000
)

// jsonError is a JSON text that the rules refuse: where, and why, never
// what.
type jsonError struct {
	offset int
	why    string
}

func (e *jsonError) Error() string { return fmt.Sprintf("%s at offset %d", e.why, e.offset) }

// validJSON checks that s is one JSON value (with JSON space around it)
// under the rules: valid UTF-8, no lone surrogate escape, no member name
// twice in an object (after unescaping), numbers of at most maxNumberLen
// characters, nesting of at most maxDepth.
func validJSON(s string) error { return validJSONCharged(s, nil) }

// validJSONCharged is validJSON that charges what it allocates (the names
// of the objects it reads) to charge before allocating it.
func validJSONCharged(s string, charge func(int64) error) error {
	v := validator{s: s, charge: charge}
	i := skipSpace(s, 0)
	end, err := v.value(i)
	if err != nil {
		return err
	}
	if end = skipSpace(s, end); end != len(s) {
		return &jsonError{end, "text after the JSON value"}
	}
	return nil
}

type validator struct {
	s     string
	depth int
	// names holds the member names of the objects being read, innermost
	// last, to find a name given twice.
	names  []string
	charge func(int64) error
}

// addName adds the member name q (quoted) to names.
func (v *validator) addName(q string) error {
	if len(v.names) == cap(v.names) {
		size := 2*cap(v.names) + 8
		if v.charge != nil {
			if err := v.charge(int64(size) * 16); err != nil {
				return err
			}
		}
		v.names = append(make([]string, 0, size), v.names...)
	}
	if v.charge != nil && strings.IndexByte(q, '\\') >= 0 {
		if err := v.charge(int64(len(q))); err != nil {
			return err
		}
	}
	v.names = append(v.names, decodeString(q))
	return nil
}

// duplicate reports whether the names from names[from:] (one object's)
// hold one name twice, and drops them.
func (v *validator) duplicate(from int) bool {
	seg := v.names[from:]
	dup := false
	if len(seg) <= 8 {
		for i := range seg {
			for j := i + 1; j < len(seg) && !dup; j++ {
				dup = seg[i] == seg[j]
			}
		}
	} else {
		slices.Sort(seg)
		for i := 1; i < len(seg) && !dup; i++ {
			dup = seg[i] == seg[i-1]
		}
	}
	clear(seg)
	v.names = v.names[:from]
	return dup
}

func (v *validator) syntax(i int) error { return &jsonError{i, "invalid JSON"} }

func (v *validator) value(i int) (int, error) {
	s := v.s
	if i >= len(s) {
		return 0, v.syntax(i)
	}
	switch c := s[i]; {
	case c == '"':
		return v.str(i)
	case c == '{' || c == '[':
		if v.depth++; v.depth > maxDepth {
			return 0, &jsonError{i, fmt.Sprintf("nested deeper than %d", maxDepth)}
		}
		defer func() { v.depth-- }()
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		from := len(v.names)
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == closing {
			return i + 1, nil
		}
		for {
			if c == '{' {
				if i >= len(s) || s[i] != '"' {
					return 0, v.syntax(i)
				}
				end, err := v.str(i)
				if err != nil {
					return 0, err
				}
				if err := v.addName(s[i:end]); err != nil {
					return 0, err
				}
				i = skipSpace(s, end)
				if i >= len(s) || s[i] != ':' {
					return 0, v.syntax(i)
				}
				i = skipSpace(s, i+1)
			}
			end, err := v.value(i)
			if err != nil {
				return 0, err
			}
			i = skipSpace(s, end)
			if i >= len(s) {
				return 0, v.syntax(i)
			}
			if s[i] == closing {
				if c == '{' && v.duplicate(from) {
					return 0, &jsonError{i, "a member name that appears twice in one object"}
				}
				return i + 1, nil
			}
			if s[i] != ',' {
				return 0, v.syntax(i)
			}
			i = skipSpace(s, i+1)
		}
	case c == '-' || c >= '0' && c <= '9':
		return v.number(i)
	case c == 't':
		return v.literal(i, "true")
	case c == 'f':
		return v.literal(i, "false")
	case c == 'n':
		return v.literal(i, "null")
	}
	return 0, v.syntax(i)
}

func (v *validator) literal(i int, lit string) (int, error) {
	if len(v.s)-i < len(lit) || v.s[i:i+len(lit)] != lit {
		return 0, v.syntax(i)
	}
	return i + len(lit), nil
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at s[i],
// refusing it once it is longer than maxNumberLen.
func (v *validator) number(i int) (int, error) {
	s, start := v.s, i
	digits := func(i int) (int, bool) {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			if j-start >= maxNumberLen {
				return j, false
			}
			j++
		}
		return j, j > i
	}
	var ok bool
	if s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if i, ok = digits(i); !ok {
		return 0, v.numberError(start, i)
	}
	if i < len(s) && s[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return 0, v.numberError(start, i)
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return 0, v.numberError(start, i)
		}
	}
	if i-start > maxNumberLen {
		return 0, v.numberError(start, i)
	}
	return i, nil
}

func (v *validator) numberError(start, i int) error {
	if i-start >= maxNumberLen {
		return &jsonError{start, fmt.Sprintf("a number longer than %d characters (send it as a string)", maxNumberLen)}
	}
	return v.syntax(i)
}

// str reads the string at s[i]: valid UTF-8, no control characters, valid
// escapes, no lone surrogate.
func (v *validator) str(i int) (int, error) {
	s := v.s
	for i++; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(s) {
				return 0, v.syntax(i)
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex4(s[i+2:i+6]) {
					return 0, v.syntax(i)
				}
				r := hex4(s[i+2 : i+6])
				at := i
				i += 6
				if !utf16.IsSurrogate(r) {
					continue
				}
				if r < 0xdc00 && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' && isHex4(s[i+2:i+6]) {
					if lo := hex4(s[i+2 : i+6]); lo >= 0xdc00 && lo < 0xe000 {
						i += 6
						continue
					}
				}
				return 0, &jsonError{at, "a lone surrogate escape (Python and JavaScript keep it, encoding/json makes it U+FFFD)"}
			default:
				return 0, v.syntax(i)
			}
		case c < 0x20:
			return 0, v.syntax(i)
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return 0, &jsonError{i, "invalid UTF-8"}
			}
			i += n
		}
	}
	return 0, v.syntax(i)
}

func isHex4(s string) bool {
	for i := range 4 {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
