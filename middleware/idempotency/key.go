package idempotency

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// KeyFunc returns the key of a message: the JSON value that identifies the
// work it asks for, and the selector that took it (see [Key]). The
// configured [Format] turns the key into the record id, so it must be the
// same for every delivery and every re-send of one request, and must never
// be the broker's message id. A KeyFunc returns an error wrapping [ErrNoKey]
// when the message carries no key. Write your own with [KeyOf] and a
// selector of its own; package jmespath makes KeyFuncs from JMESPath
// expressions.
type KeyFunc func(events.SQSMessage) (Key, error)

// BodyField returns a KeyFunc that takes the key from a field of a JSON
// message body, named by the member names that lead to it from the top:
// BodyField("idempotency_key") takes a top-level field, and
// BodyField("document", "id") takes 4471 from {"document":{"id":4471}}.
// The field's value is the key, so "abc" and 123 are keys while null, ""
// and an absent field are not. A member on the path must appear once in its
// object, and the value must keep the rules of key material (see the
// package doc). Its selector is "body" and the names as a JSON array:
// `body ["document","id"]`.
//
// BodyField panics when a name is empty.
func BodyField(name string, nested ...string) KeyFunc {
	path := append([]string{name}, nested...)
	if slices.Contains(path, "") {
		panic("idempotency: BodyField: an empty member name")
	}
	source := fmt.Sprintf("body field %q", name)
	if len(nested) > 0 {
		quoted, _ := json.Marshal(path)
		source = fmt.Sprintf("body field %s", quoted)
	}
	return bodyPath(source, path)
}

// BodyKey returns the Key that [BodyField](name, nested...) takes from a
// body whose field holds v: for a typed handler ([WrapJSON]) that decoded
// the body itself and must find the records written through [Wrap] with
// BodyField. BodyKey fails for an empty name, and with [ErrNoKey] when v
// encodes to null or "" or holds an empty json.Number. WrapJSON checks
// that the key hashes as the body's field does, and fails the message with
// a [*KeyError] when it does not (the type read the field with a loss).
func BodyKey(v any, name string, nested ...string) (Key, error) {
	path := append([]string{name}, nested...)
	if slices.Contains(path, "") {
		return Key{}, errors.New("idempotency: BodyKey: an empty member name")
	}
	quoted, _ := json.Marshal(path)
	k, err := KeyOf("body "+string(quoted), v)
	if err == nil && (string(k.Value) == "null" || string(k.Value) == `""`) {
		return Key{}, ErrNoKey
	}
	return k, err
}

func bodyPath(source string, path []string) KeyFunc {
	quoted, _ := json.Marshal(path)
	selector := "body " + string(quoted)
	return func(m events.SQSMessage) (Key, error) {
		values, err := bodyPaths(m, source, path)
		if err != nil {
			return Key{}, err
		}
		raw := values[0]
		if raw == "" || raw == "null" || raw == `""` {
			return Key{}, &KeyError{MessageID: m.MessageId, Source: source, Err: ErrNoKey}
		}
		return Key{Selector: selector, Value: []byte(raw)}, nil
	}
}

// BodySubset returns a KeyFunc whose key is the object of the named
// top-level fields of a JSON message body: a subset of the fields that
// define the work, such as {"document_id":"4471","version":9}, leaving out
// fields not named (timestamps, request ids). Every named field must be
// present and not null. Its selector is "body fields": the value names the
// fields.
//
// BodySubset panics when given no names or an empty one.
func BodySubset(names ...string) KeyFunc {
	if len(names) == 0 || slices.Contains(names, "") {
		panic("idempotency: BodySubset: no field names, or an empty one")
	}
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	source := fmt.Sprintf("body subset %s", strings.Join(names, ", "))
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
			if raw == "" || raw == "null" {
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
			v = append(append(append(v, quoted[n]...), ':'), raw...)
		}
		return Key{Selector: "body fields", Value: append(v, '}')}, nil
	}
}

// FirstOf returns a KeyFunc that tries each of fns in order and returns the
// first key found. A function that finds no key (its error wraps [ErrNoKey])
// passes to the next; any other error, such as a body that is not JSON, is
// returned at once. FirstOf panics when given no functions or a nil one.
//
// Keys from different functions keep their selectors, so in the native
// format they never share a record id; the Powertools formats hash the
// value alone.
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
// the native format its keys never equal another function's. KeyOf fails
// with [ErrNoKey] when v holds an empty json.Number (an absent field, which
// json.Marshal writes as 0).
func KeyOf(selector string, v any) (Key, error) {
	if selector == "" {
		return Key{}, errors.New("idempotency: KeyOf: empty selector")
	}
	if emptyNumber(reflect.ValueOf(v), 0) {
		return Key{}, fmt.Errorf("%w: key material holds an empty json.Number (a field the body does not have), which encodes as 0", ErrNoKey)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Key{}, fmt.Errorf("idempotency: key material: %w", err)
	}
	return Key{Selector: selector, Value: b}, nil
}

// emptyNumber reports whether json.Marshal would encode an empty
// json.Number in v: as 0, the same as a present 0.
func emptyNumber(v reflect.Value, depth int) bool {
	if !v.IsValid() || depth > 1000 || !mayHoldNumber(v.Type()) {
		return false
	}
	if v.Type() == numberType {
		return v.String() == ""
	}
	if v.Type().Implements(marshalerType) {
		return false // it encodes itself
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && emptyNumber(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			tag := sf.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if !sf.IsExported() && !sf.Anonymous || name == "-" && opts == "" ||
				strings.Contains(","+opts+",", ",omitempty,") && v.Field(i).IsZero() {
				continue
			}
			if emptyNumber(v.Field(i), depth+1) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if emptyNumber(it.Value(), depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if emptyNumber(v.Index(i), depth+1) {
				return true
			}
		}
	}
	return false
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

var mayHoldCache sync.Map // reflect.Type: bool

// mayHoldNumber reports whether a value of t can hold a json.Number.
func mayHoldNumber(t reflect.Type) bool {
	if b, ok := mayHoldCache.Load(t); ok {
		return b.(bool)
	}
	mayHoldCache.Store(t, true) // while t is looked into: a type that holds itself
	held := false
	switch t.Kind() {
	case reflect.Interface:
		held = true
	case reflect.String:
		held = t == numberType
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		held = mayHoldNumber(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			held = held || mayHoldNumber(t.Field(i).Type)
		}
	}
	mayHoldCache.Store(t, held)
	return held
}

// RawKey returns raw key material: bytes that identify the work, such as
// an id the caller already holds, hashed as given (see [Format]). In the
// Powertools formats the material must be a JSON value. Give [Do] a Key
// from [KeyOf] instead when the material is a value to encode.
func RawKey(material []byte) Key {
	return Key{Value: material}
}
