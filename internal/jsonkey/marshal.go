package jsonkey

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"
)

// Marshal returns json.Marshal's encoding of v, and fails where that
// encoding would replace invalid UTF-8 with U+FFFD: in a string of v, a
// map key, or what a TextMarshaler in v returns. Two values that differ
// only there would encode alike, and so share a key. The error wraps
// [ErrInvalidUTF8] and names v's type, never its text. What a
// json.Marshaler writes is its own, not replaced: [Check] finds invalid
// UTF-8 there.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// json.Marshal writes a replaced byte as the escape \ufffd, and a U+FFFD
	// of v as itself: only an encoding that holds the escape is looked into.
	if bytes.Contains(b, []byte(`\ufffd`)) && invalidText(reflect.ValueOf(v), 0) {
		return nil, fmt.Errorf("%w: a string in the %T value, which JSON encoding would replace with U+FFFD", ErrInvalidUTF8, v)
	}
	return b, nil
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshaler returns the method json.Marshal would encode v with, if any:
// "json" (MarshalJSON) or "text" (MarshalText), and the value to call it on.
func marshaler(v reflect.Value) (string, reflect.Value) {
	t := v.Type()
	for _, c := range []struct {
		name string
		typ  reflect.Type
	}{{"json", jsonMarshalerType}, {"text", textMarshalerType}} {
		switch {
		case t.Implements(c.typ):
			return c.name, v
		case t.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(t).Implements(c.typ):
			return c.name, v.Addr()
		}
	}
	return "", v
}

// invalidText reports whether json.Marshal replaces invalid UTF-8 in v.
// It walks what json.Marshal encodes (it runs after json.Marshal took v:
// v holds no cycle), no deeper than a key may nest.
func invalidText(v reflect.Value, depth int) bool {
	if !v.IsValid() || depth > MaxDepth+1 {
		return false
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		return false // null
	}
	switch how, m := marshaler(v); how {
	case "json":
		return false // its own text, not replaced
	case "text":
		b, err := m.Interface().(encoding.TextMarshaler).MarshalText()
		return err == nil && !utf8.Valid(b)
	}
	switch v.Kind() {
	case reflect.String:
		return !utf8.ValidString(v.String())
	case reflect.Pointer, reflect.Interface:
		return invalidText(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if !sf.IsExported() && !sf.Anonymous || sf.Tag.Get("json") == "-" {
				continue
			}
			if invalidText(v.Field(i), depth+1) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			k := it.Key()
			if k.Kind() == reflect.String && !utf8.ValidString(k.String()) ||
				k.Kind() != reflect.String && invalidText(k, depth+1) ||
				invalidText(it.Value(), depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if e := v.Type().Elem(); v.Kind() == reflect.Slice && e.Kind() == reflect.Uint8 &&
			!reflect.PointerTo(e).Implements(jsonMarshalerType) && !reflect.PointerTo(e).Implements(textMarshalerType) {
			return false // base64
		}
		for i := range v.Len() {
			if invalidText(v.Index(i), depth+1) {
				return true
			}
		}
	}
	return false
}
