package idempotency

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// KeyFunc returns the key of a message: a JSON value that identifies the
// work it asks for, and the selector that took it (see [Key]). The
// configured [Format] turns the key into the record id, so it must be the
// same for every delivery and every re-send of one request, and must never
// be the broker's message id. A KeyFunc returns an error wrapping [ErrNoKey]
// when the message carries no key.
//
// A KeyFunc hands the format the value as the message spells it, and the
// format spells it for hashing: the Powertools formats need the original
// spelling. (A KeyFunc used to return canonical bytes; the project is
// pre-1.0. Write your own as a func(events.SQSMessage) (Key, error) that
// returns [KeyOf] with a selector of its own.) Package jmespath makes
// KeyFuncs from JMESPath expressions.
type KeyFunc func(events.SQSMessage) (Key, error)

// BodyField returns a KeyFunc that takes the key from one top-level field of
// a JSON message body, such as "idempotency_key": BodyPath(name). The
// field's value is the key, so "abc" and 123 are keys while null, "" and an
// absent field are not. BodyField panics when name is empty.
func BodyField(name string) KeyFunc {
	if name == "" {
		panic("idempotency: BodyField: empty field name")
	}
	return bodyPath(fmt.Sprintf("body field %q", name), []string{name})
}

// BodyPath returns a KeyFunc that takes the key from a field nested in a
// JSON message body, named by the member names that lead to it from the
// top: BodyPath("document", "id") takes 4471 from {"document":{"id":4471}}.
// As for [BodyField], null, "" and an absent field are not keys. Its
// selector is "body" and the path as a JSON array, such as
// `body ["document","id"]`: BodyField(name) is BodyPath(name).
//
// BodyPath panics when given no names or an empty one.
func BodyPath(path ...string) KeyFunc {
	if len(path) == 0 || slices.Contains(path, "") {
		panic("idempotency: BodyPath: an empty path or member name")
	}
	quoted, _ := json.Marshal(path)
	return bodyPath(fmt.Sprintf("body path %s", quoted), slices.Clone(path))
}

func bodyPath(source string, path []string) KeyFunc {
	quoted, _ := json.Marshal(path)
	selector := "body " + string(quoted)
	return func(m events.SQSMessage) (Key, error) {
		values, err := bodyPaths(m, source, path)
		if err != nil {
			return Key{}, err
		}
		raw := trimSpace(values[0])
		if raw == nil || string(raw) == "null" || string(raw) == `""` {
			return Key{}, &KeyError{MessageID: m.MessageId, Source: source, Err: ErrNoKey}
		}
		return Key{Selector: selector, Value: raw}, nil
	}
}

// BodyFields returns a KeyFunc whose key is the object of the named
// top-level fields of a JSON message body: a subset of the fields that
// define the work, such as {"document_id":"4471","version":9}. In the
// native format field order, whitespace and number spelling (0.7, 0.70,
// 7e-1) do not change it; fields not named (timestamps, request ids) are
// left out. Every named field must be present and not null. Its selector is
// "body fields": the value names the fields.
//
// BodyFields panics when given no names or an empty one: a configuration
// error.
func BodyFields(names ...string) KeyFunc {
	if len(names) == 0 || slices.Contains(names, "") {
		panic("idempotency: BodyFields: no field names, or an empty one")
	}
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	source := fmt.Sprintf("body fields %s", strings.Join(names, ", "))
	paths := make([][]string, len(names))
	quoted := make([][]byte, len(names))
	for n, name := range names {
		paths[n] = []string{name}
		quoted[n], _ = json.Marshal(name)
	}
	return func(m events.SQSMessage) (Key, error) {
		values, err := bodyPaths(m, source, paths...)
		if err != nil {
			return Key{}, err
		}
		size := 2
		for n, raw := range values {
			if raw = trimSpace(raw); raw == nil || string(raw) == "null" {
				return Key{}, &KeyError{MessageID: m.MessageId, Source: source,
					Err: fmt.Errorf("%w: field %q is missing", ErrNoKey, names[n])}
			}
			size += len(quoted[n]) + len(raw) + 2
		}
		v := make([]byte, 0, size)
		v = append(v, '{')
		for n, raw := range values {
			if n > 0 {
				v = append(v, ',')
			}
			v = append(append(append(v, quoted[n]...), ':'), trimSpace(raw)...)
		}
		return Key{Selector: "body fields", Value: append(v, '}')}, nil
	}
}

func trimSpace(b []byte) []byte {
	if b == nil {
		return nil
	}
	return b[skipSpace(b, 0):]
}

// FirstOf returns a KeyFunc that tries each of fns in order and returns the
// first key found. A function that finds no key (its error wraps [ErrNoKey])
// passes to the next; any other error, such as a body that is not JSON, is
// returned at once. FirstOf panics when given no functions or a nil one.
//
// Keys from different functions keep their selectors, so in the native
// format a producer cannot make one function's key equal another's: a
// producer key holding another request's subset of fields does not land on
// that request's record. The Powertools formats hash the value alone.
func FirstOf(fns ...KeyFunc) KeyFunc {
	if len(fns) == 0 || slices.ContainsFunc(fns, func(f KeyFunc) bool { return f == nil }) {
		panic("idempotency: FirstOf: no key functions, or a nil one")
	}
	return func(m events.SQSMessage) (Key, error) {
		var why []string
		for _, fn := range fns {
			k, err := fn(m)
			if err == nil {
				return k, nil
			}
			if !errors.Is(err, ErrNoKey) {
				return Key{}, err
			}
			source, detail := "", err.Error()
			var ke *KeyError
			if errors.As(err, &ke) {
				source, detail = ke.Source+": ", ke.Err.Error()
			}
			if detail = strings.TrimPrefix(strings.TrimPrefix(detail, ErrNoKey.Error()), ": "); detail == "" {
				detail = "missing"
			}
			why = append(why, source+detail)
		}
		return Key{}, &KeyError{MessageID: m.MessageId, Source: fmt.Sprintf("any of %d key sources", len(fns)),
			Err: fmt.Errorf("%w (%s)", ErrNoKey, strings.Join(why, "; "))}
	}
}

// KeyOf returns a [Key] with the given selector whose value is v encoded as
// JSON, for a [KeyFunc] of your own: name the selector after what the
// function selects (a name no other KeyFunc of the guard uses), so that in
// the native format its keys never equal another function's.
func KeyOf(selector string, v any) (Key, error) {
	if selector == "" {
		return Key{}, errors.New("idempotency: KeyOf: empty selector")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Key{}, fmt.Errorf("idempotency: key material: %w", err)
	}
	return Key{Selector: selector, Value: b}, nil
}

// JSONKey returns the canonical JSON (RFC 8785) encoding of v, for use as key
// material with [Do]: two values that encode to equal JSON give equal keys,
// whatever their field order or number spelling. Like every native key, it
// refuses integers beyond ±2^53 (see the package doc): encode such fields as
// strings, for example with the `json:",string"` tag option.
func JSONKey(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("idempotency: key material: %w", err)
	}
	c, err := canonicalJSON(b)
	if err != nil {
		return nil, fmt.Errorf("idempotency: key material: %w", err)
	}
	return c, nil
}
