package jmespath

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// SelectJSON returns the key material e selects from doc, a JSON document:
// a whole Lambda event as the function receives it, on which Powertools
// for AWS Lambda evaluates eventKeyJmesPath for a handler made idempotent
// with makeIdempotent or @idempotent (API Gateway, EventBridge, a direct
// invocation). The selector, the functions, the numbers and the missing keys
// are as for [Expression.Select], so the same expression on the same value
// gives the same record id. Its method value is the KeyFunc of an
// idempotency.EventKeys[json.RawMessage].
//
// SelectJSON fails with a [*idempotency.KeyError] as Select does, and for
// a document that is not one JSON value, holds a number longer than 100
// characters, is not valid UTF-8 or holds a lone surrogate escape such as
// "\ud800": encoding/json would read those as U+FFFD, and two events that
// differ there would share a record.
func (e *Expression) SelectJSON(doc json.RawMessage) (idempotency.Key, error) {
	return e.selectJSON(doc, "")
}

// EventKey returns a key function for events of type E: e evaluated, as
// [Expression.SelectJSON] does, on the event's JSON encoding (json.Marshal),
// for idempotency.EventKeys.KeyFunc or PayloadFunc. The encoding holds what
// E declares: a field E lacks is absent from it (its selection is missing
// and the call fails), and strings are as the Lambda runtime decoded them,
// with a lone surrogate already read as U+FFFD. For the event exactly as
// delivered, make E json.RawMessage: EventKey then evaluates it as it is.
func EventKey[E any](e *Expression) func(E) (idempotency.Key, error) {
	return func(ev E) (idempotency.Key, error) {
		if raw, ok := any(ev).(json.RawMessage); ok {
			return e.SelectJSON(raw)
		}
		doc, err := json.Marshal(ev)
		if err != nil {
			return idempotency.Key{}, &idempotency.KeyError{Source: e.source,
				Err: fmt.Errorf("encoding the %s event as JSON: %w", reflect.TypeFor[E](), err)}
		}
		return e.selectJSON(doc, "")
	}
}

func (e *Expression) selectJSON(doc []byte, messageID string) (idempotency.Key, error) {
	fail := func(err error) (idempotency.Key, error) {
		return idempotency.Key{}, &idempotency.KeyError{MessageID: messageID, Source: e.source, Err: err}
	}
	if err := checkDocument(doc); err != nil {
		return fail(err)
	}
	approx, err := decodeDocument(doc, e.need, false)
	if err != nil {
		return fail(err)
	}
	sel, err := e.valued.Search(approx)
	if err != nil {
		return fail(err)
	}
	if missing(sel) {
		return fail(fmt.Errorf("%w: the expression selects %s", idempotency.ErrNoKey, describe(sel)))
	}
	if hasNumber(sel) { // read the event again, keeping the numbers' spelling
		exact, err := decodeDocument(doc, e.need, true)
		if err != nil {
			return fail(err)
		}
		if spelled, err := e.spelled.Search(exact); err == nil && reflect.DeepEqual(toDoubles(spelled), sel) {
			sel = spelled // the numbers as the event spelled them
		}
	}
	b, err := json.Marshal(sel)
	if err != nil {
		return fail(err)
	}
	return idempotency.Key{Selector: e.selector, Value: b}, nil
}

// maxEventDepth bounds the nesting of an event's JSON: each level costs a
// map or a slice, and no Lambda event nests deep.
const maxEventDepth = 512

// checkDocument refuses what encoding/json would read with a loss or at a
// cost out of proportion: invalid UTF-8, a lone surrogate escape, a number
// longer than maxNumberLen, nesting deeper than maxEventDepth. Its errors
// name a position, never content.
func checkDocument(doc []byte) error {
	if !utf8.Valid(doc) {
		return errors.New("the event is not valid UTF-8")
	}
	if longNumber(string(doc)) {
		return fmt.Errorf("the event holds a number longer than %d characters", maxNumberLen)
	}
	depth := 0
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > maxEventDepth {
				return fmt.Errorf("the event nests deeper than %d levels (at byte %d)", maxEventDepth, i)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// decodeDocument decodes of doc, one JSON value, what n says the expression
// reads (see prune), with its numbers as float64 or, with numbers set, as
// json.Number, keeping their spelling; and refuses a lone surrogate escape.
// Its errors name a position, never content.
func decodeDocument(doc []byte, n *need, numbers bool) (any, error) {
	if !json.Valid(doc) {
		var v any
		var se *json.SyntaxError
		if err := json.Unmarshal(doc, &v); errors.As(err, &se) {
			return nil, fmt.Errorf("the event is not one JSON value (at byte %d)", se.Offset)
		}
		return nil, errors.New("the event is not one JSON value")
	}
	if off := loneSurrogate(doc); off >= 0 {
		return nil, fmt.Errorf("the event holds a lone surrogate escape (at byte %d)", off)
	}
	budget := maxWholeValues
	v, err := prune(doc, n, numbers, &budget)
	switch {
	case errors.Is(err, errTooManyValues):
		return nil, err
	case err != nil:
		return nil, errors.New("the event is not valid JSON")
	}
	return v, nil
}

// hasNumber reports whether v holds a number.
func hasNumber(v any) bool {
	switch v := v.(type) {
	case float64, json.Number:
		return true
	case map[string]any:
		for _, e := range v {
			if hasNumber(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasNumber(e) {
				return true
			}
		}
	}
	return false
}

// loneSurrogate returns the offset of the first \u escape in doc, valid
// JSON, that is a surrogate not paired with the next, or -1.
func loneSurrogate(doc []byte) int {
	for i := 0; i < len(doc); i++ {
		if doc[i] != '\\' {
			continue
		}
		if i++; doc[i] != 'u' {
			continue // the escaped character
		}
		r := hex4(doc[i+1 : i+5])
		if !utf16.IsSurrogate(r) {
			i += 4
			continue
		}
		if r >= 0xdc00 || i+10 >= len(doc) || doc[i+5] != '\\' || doc[i+6] != 'u' {
			return i - 1
		}
		if lo := hex4(doc[i+7 : i+11]); lo < 0xdc00 || lo >= 0xe000 {
			return i - 1
		}
		i += 10
	}
	return -1
}

// hex4 is the value of four hex digits.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
