package idempotency

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// maxNumberLen bounds the length of a number in key material, in bytes. A
// longer number is refused before it is parsed, so that the work done for a
// key stays linear in the body with a small constant, whatever the number.
const maxNumberLen = 100

// maxDepth is encoding/json's nesting limit: a body nested deeper is not
// JSON that the rest of the program could decode.
const maxDepth = 10000

// errSyntax is the error of a body that is not valid JSON.
var errSyntax = errors.New("invalid JSON")

// errTooDeep is the error of a body nested deeper than maxDepth.
var errTooDeep = errors.New("exceeded max depth")

// numberTooLongError reports a number in key material longer than
// maxNumberLen.
type numberTooLongError struct{ n string }

func (e numberTooLongError) Error() string {
	return fmt.Sprintf("number %s... is longer than %d characters, the most a key takes: send it as a string",
		e.n[:20], maxNumberLen)
}

// bodyPaths returns the raw JSON values at the given paths of a message body
// (each a list of object member names from the top), nil for a path that is
// absent; for a duplicated member, the last value, as encoding/json keeps. It
// validates the whole body in one pass without decoding it: key extraction
// runs for every record, and decoding a body into a map costs several times
// more. The selected values are checked for numbers longer than
// maxNumberLen as they are scanned, so a huge number is refused after
// reading maxNumberLen of its digits.
func bodyPaths(m events.SQSMessage, source string, paths ...[]string) ([][]byte, error) {
	b := m.Body // scanned in place: a body can be large
	s := scanner{b: b}
	values := make([][]byte, len(paths))
	i := s.space(0)
	if i < len(b) && b[i] == 'n' && strings.TrimSpace(b) == "null" {
		return nil, &KeyError{MessageID: m.MessageId, Source: source,
			Err: fmt.Errorf("%w: message body is null", ErrNoKey)}
	}
	live := make([]int, len(paths)) // the paths still to follow
	for n := range live {
		live[n] = n
	}
	end, err := s.selectValue(i, 0, paths, live, 0, values)
	if err == nil && s.space(end) != len(b) {
		err = errSyntax
	}
	if err != nil {
		var nt numberTooLongError
		if errors.As(err, &nt) {
			return nil, &KeyError{MessageID: m.MessageId, Source: source, Err: err}
		}
		if err == errSyntax { // the standard library's message names the offset and the cause
			var v any
			if jerr := json.Unmarshal([]byte(b), &v); jerr != nil {
				err = jerr
			}
		}
		return nil, &KeyError{MessageID: m.MessageId, Source: source,
			Err: fmt.Errorf("message body is not a JSON object: %w", err)}
	}
	if i < len(b) && b[i] != '{' {
		return nil, &KeyError{MessageID: m.MessageId, Source: source,
			Err: fmt.Errorf("message body is not a JSON object but %s", kind(b[i]))}
	}
	return values, nil
}

// scanner validates JSON in one pass, as strictly as encoding/json.
type scanner struct{ b string }

func (s *scanner) space(i int) int {
	b := s.b
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// selectValue scans the value at b[i] (at depth levels of nesting), which is
// at level `level` of the paths in live, storing in values the values where
// a path ends. A selected value's numbers are bounded by maxNumberLen.
func (s *scanner) selectValue(i, depth int, paths [][]string, live []int, level int, values [][]byte) (int, error) {
	var ended []int
	for _, n := range live {
		if len(paths[n]) == level {
			ended = append(ended, n)
		}
	}
	var end int
	var err error
	switch {
	case len(ended) > 0:
		end, err = s.value(i, depth, true)
		if err == nil {
			for _, n := range ended {
				values[n] = []byte(s.b[i:end])
			}
		}
		// A path that ends here cannot go deeper: the others still can.
		var deeper []int
		for _, n := range live {
			if len(paths[n]) > level {
				deeper = append(deeper, n)
			}
		}
		if err == nil && len(deeper) > 0 && s.b[i] == '{' {
			_, err = s.object(i, depth, paths, deeper, level, values)
		}
	case len(live) > 0 && i < len(s.b) && s.b[i] == '{':
		end, err = s.object(i, depth, paths, live, level, values)
	default:
		end, err = s.value(i, depth, false)
	}
	return end, err
}

// object scans the object at b[i], following the paths in live into its
// members.
func (s *scanner) object(i, depth int, paths [][]string, live []int, level int, values [][]byte) (int, error) {
	i, depth, more, err := s.open(i, depth, '}')
	var next []int
	for more {
		var key string
		if key, i, err = s.member(i); err != nil {
			return 0, err
		}
		next = next[:0]
		for _, n := range live {
			if keyIs(key, paths[n][level]) {
				next = append(next, n)
			}
		}
		if i, err = s.selectValue(i, depth, paths, next, level+1, values); err != nil {
			return 0, err
		}
		i, more, err = s.next(s.space(i), '}')
	}
	return i, err
}

// value scans the value at b[i] and returns the index after it. With bound,
// a number longer than maxNumberLen is an error found after reading
// maxNumberLen+1 of its bytes.
func (s *scanner) value(i, depth int, bound bool) (int, error) {
	b := s.b
	if i >= len(b) {
		return 0, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		return s.str(i)
	case c == '{':
		i, depth, more, err := s.open(i, depth, '}')
		for more {
			if _, i, err = s.member(i); err != nil {
				return 0, err
			}
			if i, err = s.value(i, depth, bound); err != nil {
				return 0, err
			}
			i, more, err = s.next(s.space(i), '}')
		}
		return i, err
	case c == '[':
		i, depth, more, err := s.open(i, depth, ']')
		for more {
			if i, err = s.value(i, depth, bound); err != nil {
				return 0, err
			}
			i, more, err = s.next(s.space(i), ']')
		}
		return i, err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i, bound)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	}
	return 0, errSyntax
}

// open enters the object or array that opens at b[i], one level deeper
// than depth, and returns the index of its first member or element (more)
// or, when it is empty, the index after its closing byte.
func (s *scanner) open(i, depth int, closing byte) (next, inner int, more bool, err error) {
	if depth++; depth > maxDepth {
		return 0, 0, false, errTooDeep
	}
	i = s.space(i + 1)
	if i < len(s.b) && s.b[i] == closing {
		return i + 1, depth, false, nil
	}
	return i, depth, true, nil
}

// member scans an object member's `"name":` at b[i] and returns the name
// (quoted, as written) and the index of its value.
func (s *scanner) member(i int) (key string, value int, err error) {
	b := s.b
	if i >= len(b) || b[i] != '"' {
		return "", 0, errSyntax
	}
	end, err := s.str(i)
	if err != nil {
		return "", 0, err
	}
	key = b[i:end]
	i = s.space(end)
	if i >= len(b) || b[i] != ':' {
		return "", 0, errSyntax
	}
	return key, s.space(i + 1), nil
}

// next scans what follows a member or element at b[i], after any space: a
// comma (more, and the index of the next one) or closing (the index after
// it).
func (s *scanner) next(i int, closing byte) (int, bool, error) {
	if i < len(s.b) {
		if c := s.b[i]; c == ',' {
			return s.space(i + 1), true, nil
		} else if c == closing {
			return i + 1, false, nil
		}
	}
	return 0, false, errSyntax
}

func (s *scanner) literal(i int, lit string) (int, error) {
	if !strings.HasPrefix(s.b[i:], lit) {
		return 0, errSyntax
	}
	return i + len(lit), nil
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func (s *scanner) number(i int, bound bool) (int, error) {
	b, start := s.b, i
	limit := len(b)
	if bound && limit-start > maxNumberLen+1 {
		limit = start + maxNumberLen + 1
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
	var ok bool
	switch {
	case i < limit && b[i] == '0':
		i++
	default:
		if i, ok = digits(i); !ok {
			return s.numberEnd(start, i, bound)
		}
	}
	if i < limit && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return s.numberEnd(start, i, bound)
		}
	}
	if i < limit && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < limit && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return s.numberEnd(start, i, bound)
		}
	}
	return s.numberEnd(start, i, bound)
}

// numberEnd tells a number cut short by the bound (when bound is set)
// from a malformed one.
func (s *scanner) numberEnd(start, i int, bound bool) (int, error) {
	if bound && i-start > maxNumberLen {
		return 0, numberTooLongError{s.b[start:i]}
	}
	if i == start || s.b[i-1] == '-' || s.b[i-1] == '.' || s.b[i-1] == 'e' || s.b[i-1] == 'E' || s.b[i-1] == '+' {
		return 0, errSyntax
	}
	return i, nil
}

// str scans the string at b[i] and returns the index after it.
func (s *scanner) str(i int) (int, error) {
	b := s.b
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			i++
			if i >= len(b) {
				return 0, errSyntax
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return 0, errSyntax
				}
				i += 4
			default:
				return 0, errSyntax
			}
		case c < 0x20:
			return 0, errSyntax
		}
	}
	return 0, errSyntax
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// keyIs reports whether the quoted JSON string key spells name.
func keyIs(key, name string) bool {
	inner := key[1 : len(key)-1]
	if strings.IndexByte(inner, '\\') < 0 && utf8.ValidString(inner) {
		return inner == name
	}
	var s string
	return json.Unmarshal([]byte(key), &s) == nil && s == name
}

func kind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
