package idempotency

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// A Selection is JSON taken from an input and the name of the selector
// that took it: an idempotency key, or a payload that must be the same
// whenever the key is reused. Its value keeps the rules of key material,
// in every format: I-JSON (RFC 7493: valid UTF-8, no unpaired surrogate
// escape such as \ud800, no object naming a member twice), nested at most
// 10,000 levels, no number longer than 100 characters. What breaks a rule
// is refused, never replaced, so that two different requests never read
// as one.
type Selection struct {
	// Selector names where Value was taken from, such as
	// `body ["idempotency_key"]` for BodyField("idempotency_key"); a
	// selector of your own uses a name of its own. The native format hashes
	// it with the value. It is empty for raw material ([Raw]).
	Selector string

	// Value is the JSON value as the input spells it (the Powertools formats
	// hash the spelling), or the raw material.
	Value json.RawMessage
}

// SelectionOf returns v encoded as JSON under the selector name, for a
// selector of your own ([SelectorFunc]). It fails with [ErrNoKey] when v
// holds an empty json.Number (an absent field, which json.Marshal writes
// as 0), and when a string in v is not valid UTF-8 (which json.Marshal
// writes as U+FFFD, so that "\xff" and "\xfe" would share a key).
func SelectionOf(selector string, v any) (Selection, error) {
	if selector == "" {
		return Selection{}, errors.New("idempotency: SelectionOf: empty selector")
	}
	if emptyNumber(reflect.ValueOf(v), 0) {
		return Selection{}, fmt.Errorf("%w: the value holds an empty json.Number (a field the body does not have), which encodes as 0", ErrNoKey)
	}
	b, err := jsonkey.Marshal(v)
	if err != nil {
		return Selection{}, fmt.Errorf("idempotency: selection: %w", err)
	}
	return Selection{Selector: selector, Value: b}, nil
}

// Raw returns raw material: bytes that identify the work, such as an id
// the caller holds, hashed as given. In the Powertools formats it must be
// a JSON value.
func Raw(material []byte) Selection {
	return Selection{Value: material}
}

// A Selector takes a [Selection] from the input of a function made by
// [Wrap] or [WrapJSON]: its key, or with [WithPayload] its payload. The
// zero Selector selects nothing.
//
// [BodyField], [BodySubset] and [FirstOf] read the input's JSON body in
// place (an SQS or SNS message's, a Kinesis record's data, an API request's,
// an EventBridge event's detail, []byte, string, or a type with a method
// JSONBody() []byte), to the rules of Selection.
type Selector struct {
	source string                               // names it in a *KeyError
	body   func(body string) (Selection, error) // a body selector's
	fn     *funcSelector                        // SelectorFunc's
	first  []Selector                           // FirstOf's
}

// funcSelector is SelectorFunc's function and the type it takes.
type funcSelector struct {
	in    reflect.Type
	typed any                          // func(In) (Selection, error)
	boxed func(any) (Selection, error) // the same, for an input in an interface
}

// SelectorFunc returns a Selector of your own: fn gets the input (in
// [WrapJSON], the decoded request when In is its type), and returns an
// error wrapping [ErrNoKey] when the input has no key. Its errors are
// logged: they must not quote the input. In must be the input's type, or
// an interface it implements. SelectorFunc panics if fn is nil.
func SelectorFunc[In any](fn func(In) (Selection, error)) Selector {
	if fn == nil {
		panic("idempotency: SelectorFunc: nil function")
	}
	return Selector{fn: &funcSelector{in: reflect.TypeFor[In](), typed: fn,
		boxed: func(v any) (Selection, error) { x, _ := v.(In); return fn(x) }}} // a nil input is In's nil
}

// BodyField returns a Selector of a field of the body, named by the
// members that lead to it: BodyField("document", "id") takes 4471 from
// {"document":{"id":4471}}. "abc" and 123 are keys; null, "" and an absent
// field are not (as a payload, [WithPayload], they are: an absent field is
// null). Its selector is `body ["document","id"]`. BodyField panics when a
// name is empty.
func BodyField(name string, nested ...string) Selector {
	path := append([]string{name}, nested...)
	if slices.Contains(path, "") {
		panic("idempotency: BodyField: an empty member name")
	}
	quoted, _ := json.Marshal(path)
	source := fmt.Sprintf("body field %q", name)
	if len(nested) > 0 {
		source = fmt.Sprintf("body field %s", quoted)
	}
	selector := "body " + string(quoted)
	return Selector{source: source, body: func(body string) (Selection, error) {
		values, err := bodyPaths(body, path)
		if errors.Is(err, ErrNoKey) { // a null body: the field is absent
			return Selection{}, &noKey{Selection{Selector: selector, Value: []byte("null")}, err}
		}
		if err != nil {
			return Selection{}, err
		}
		switch raw := values[0]; raw {
		case "", "null", `""`:
			if raw == "" {
				raw = "null"
			}
			return Selection{}, &noKey{Selection{Selector: selector, Value: []byte(raw)}, ErrNoKey}
		default:
			return Selection{Selector: selector, Value: []byte(raw)}, nil
		}
	}}
}

// BodySubset returns a Selector of the object of the named top-level
// fields of the body: those that define the work, such as
// {"document_id":"4471","version":9}, without timestamps or request ids.
// Every one must be present and not null (as a payload, [WithPayload], an
// absent field is null). Its selector is "body fields". BodySubset panics
// when given no names or an empty one.
func BodySubset(names ...string) Selector {
	if len(names) == 0 || slices.Contains(names, "") {
		panic("idempotency: BodySubset: no field names, or an empty one")
	}
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	paths := make([][]string, len(names))
	quoted := make([][]byte, len(names))
	for n, name := range names {
		paths[n] = []string{name}
		quoted[n], _ = json.Marshal(name)
	}
	return Selector{source: fmt.Sprintf("body subset %s", strings.Join(names, ", ")), body: func(body string) (Selection, error) {
		values, err := bodyPaths(body, paths...)
		var missing error
		if errors.Is(err, ErrNoKey) { // a null body: every field is absent
			values, missing = make([]string, len(names)), err
		} else if err != nil {
			return Selection{}, err
		}
		size := 2
		for n, raw := range values {
			if raw == "" || raw == "null" {
				if missing == nil {
					missing = fmt.Errorf("%w: field %q is missing", ErrNoKey, names[n])
				}
				values[n] = "null" // as a payload
			}
			size += len(quoted[n]) + len(values[n]) + 2
		}
		v := make([]byte, 0, size)
		v = append(v, '{')
		for n, raw := range values {
			if n > 0 {
				v = append(v, ',')
			}
			v = append(append(append(v, quoted[n]...), ':'), raw...)
		}
		sel := Selection{Selector: "body fields", Value: append(v, '}')}
		if missing != nil {
			return Selection{}, &noKey{sel, missing}
		}
		return sel, nil
	}}
}

// noKey is the error of a selector whose selection is no key but is a
// payload (see [payloadOf]): an absent, null or "" body field, in package
// jmespath a null or empty selection. It wraps ErrNoKey and says what err
// says.
type noKey struct {
	payload Selection // what WithPayload validates
	err     error     // wraps ErrNoKey
}

func (e *noKey) Error() string           { return e.err.Error() }
func (e *noKey) Unwrap() error           { return e.err }
func (e *noKey) NoKeyPayload() Selection { return e.payload }

// noKeyPayload is an error that wraps ErrNoKey and carries the payload its
// selection is: this package's noKey, package jmespath's missing selection
// (its noKeyError, which has the method without naming this interface).
type noKeyPayload interface {
	error
	NoKeyPayload() Selection
}

// payloadOf is what a payload selector's result validates: a selection
// that is no key (an error carrying its payload, noKeyPayload) is a
// payload like any other, hashed as Powertools hashes a null or empty
// payload; any other error is said to be about the payload.
func payloadOf(p Selection, err error) (Selection, error) {
	if err == nil {
		return p, nil
	}
	if c, ok := errors.AsType[noKeyPayload](err); ok && errors.Is(err, ErrNoKey) {
		return c.NoKeyPayload(), nil
	}
	return Selection{}, payloadError(err)
}

// FirstOf returns a Selector that tries sels in order: one that finds
// nothing (its error wraps [ErrNoKey]) passes to the next; any other error
// is returned at once. Each keeps its selector. As a payload
// ([WithPayload]), when none finds one, the payload of the first that
// carries one (a body selector or a jmespath one; see BodyField) is
// validated. FirstOf panics when given no selectors or a zero one.
func FirstOf(sels ...Selector) Selector {
	if len(sels) == 0 || slices.ContainsFunc(sels, Selector.zero) {
		panic("idempotency: FirstOf: no selectors, or a zero one")
	}
	return Selector{source: fmt.Sprintf("any of %d key sources", len(sels)), first: slices.Clone(sels)}
}

func (s Selector) zero() bool { return s.body == nil && s.fn == nil && s.first == nil }

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
			_, opts, _ := strings.Cut(tag, ",")
			if !sf.IsExported() && !sf.Anonymous || tag == "-" || // "-," names a field "-"
				omitted(opts, v.Field(i)) {
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

// omitted reports whether json.Marshal leaves out f, a field with the tag
// options opts: omitempty and an empty value as encoding/json defines it
// (false, 0, "", a nil pointer or interface, an empty array, slice or map;
// never a struct), or omitzero and a zero value. A type with its own
// IsZero method is never taken as left out under omitzero: what it reports
// is its own.
func omitted(opts string, f reflect.Value) bool {
	opts = "," + opts + ","
	if strings.Contains(opts, ",omitempty,") && emptyValue(f) {
		return true
	}
	if strings.Contains(opts, ",omitzero,") {
		// *T's methods include T's.
		_, own := reflect.PointerTo(f.Type()).MethodByName("IsZero")
		return !own && f.IsZero()
	}
	return false
}

// emptyValue is encoding/json's empty value, which omitempty leaves out.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

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
