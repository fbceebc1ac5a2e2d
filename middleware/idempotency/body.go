package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// bodyFields returns the raw JSON values of the named top-level fields of a
// message body, nil for a field that is absent; for a duplicated field, the
// last value, as encoding/json keeps. It validates the whole body with
// json.Valid and then scans only the top level, without decoding the
// values: key extraction runs for every record, and decoding a body into a
// map costs several times more.
func bodyFields(m events.SQSMessage, source string, names ...string) ([][]byte, error) {
	b := []byte(m.Body)
	if !json.Valid(b) {
		var err error
		var v any
		if err = json.Unmarshal(b, &v); err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, &KeyError{MessageID: m.MessageId, Source: source,
			Err: fmt.Errorf("message body is not a JSON object: %w", err)}
	}
	i := skipSpace(b, 0)
	switch b[i] {
	case '{':
	case 'n': // null
		return nil, &KeyError{MessageID: m.MessageId, Source: source,
			Err: fmt.Errorf("%w: message body is null", ErrNoKey)}
	default:
		return nil, &KeyError{MessageID: m.MessageId, Source: source,
			Err: fmt.Errorf("message body is not a JSON object but %s", kind(b[i]))}
	}
	values := make([][]byte, len(names))
	i = skipSpace(b, i+1)
	for b[i] != '}' {
		keyEnd := skipString(b, i)
		key := b[i:keyEnd]
		i = skipSpace(b, skipSpace(b, keyEnd)+1) // past the ':'
		valueEnd := skipValue(b, i)
		for n, name := range names {
			if keyIs(key, name) {
				values[n] = b[i:valueEnd]
			}
		}
		i = skipSpace(b, valueEnd)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return values, nil
}

// keyIs reports whether the quoted JSON string key spells name.
func keyIs(key []byte, name string) bool {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == name
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == name
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

// The scanners below run on JSON that json.Valid accepted.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for ; i < len(b); i++ { // a number, true, false or null
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}
