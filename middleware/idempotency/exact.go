package idempotency

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/internal/redact"
)

// exactDecode reports an error for a body (which keeps the rules of key
// material) that encoding/json would decode into a T with a loss, so that
// two requests that differ would decode alike, or a request would be read
// other than the producer and Powertools read it:
//
//   - a member whose name matches a struct field only by letter case
//     (encoding/json fills the field from "ID", "Id" or "ſ"/"K" folds);
//   - a number in a float32, float64 or any that the float does not hold
//     exactly (jsonkey.ExactNumber), spelled or in a ",string" field;
//   - a JSON string where a json.Number is expected ("1" decodes as 1);
//   - a []byte in a base64 spelling other than the canonical one (with
//     line breaks, or unused bits set);
//   - a map key that spells an integer key type's value otherwise than
//     strconv does ("01" and "1" are one key).
//
// With strict, a member that names no field is refused too, as
// DisallowUnknownFields does. Values that decode themselves (json.Unmarshaler,
// encoding.TextUnmarshaler) are not looked into: exactDecode returns their
// paths and types, so that an error of theirs can be placed.
func exactDecode(t *jsonkey.Tree, typ reflect.Type, strict bool) ([]opaque, error) {
	w := walker{strict: strict}
	err := w.value(t.Root(), typ, "", false)
	return w.opaque, err
}

// opaque is a value that decodes itself, with where it is.
type opaque struct {
	path string
	typ  reflect.Type
	text string
}

type walker struct {
	strict bool
	opaque []opaque
}

// lossError is a body that would decode with a loss. It names the field's
// path in the request type and the kind of loss, never the value.
type lossError struct {
	path, what string
}

func (e *lossError) Error() string {
	if e.path == "" {
		return e.what
	}
	return "field " + e.path + ": " + e.what
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// decodesItself reports whether a value of t decodes itself from a JSON
// value of kind c.
func decodesItself(t reflect.Type, c byte) bool {
	p := reflect.PointerTo(t)
	return p.Implements(unmarshalerType) || c == '"' && p.Implements(textUnmarshalerType)
}

// value checks v, decoded into t at path; quoted says the field has the
// ",string" option.
func (w *walker) value(v jsonkey.Node, t reflect.Type, path string, quoted bool) error {
	c := v.Kind()
	if c == 'n' {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t, c) || t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		w.opaque = append(w.opaque, opaque{path: path, typ: t, text: v.Text()})
		return nil
	}
	if t == numberType {
		if c == '"' && !quoted {
			return &lossError{path, "a JSON string where a number is expected (json.Number would read it as one)"}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return w.any(v, path)
		}
	case reflect.Struct:
		return w.object(v, t, path)
	case reflect.Map:
		return w.mapValue(v, t, path)
	case reflect.Slice:
		if c == '"' && t.Elem().Kind() == reflect.Uint8 {
			if s := v.Str(); !canonicalBase64(s) {
				return &lossError{path, "a base64 string spelled otherwise than the canonical way (line breaks, unused bits), which two spellings of one []byte would share"}
			}
			return nil
		}
		return w.elements(v, t.Elem(), path)
	case reflect.Array:
		return w.elements(v, t.Elem(), path)
	case reflect.Float32, reflect.Float64:
		n := v.Text()
		if quoted && c == '"' {
			n = v.Str()
		}
		if c == '"' && !quoted || jsonkey.Check(n) != nil {
			return nil // encoding/json refuses it
		}
		bits := 64
		if t.Kind() == reflect.Float32 {
			bits = 32
		}
		return exactFloat(n, bits, path)
	}
	return nil
}

func exactFloat(n string, bits int, path string) error {
	check := jsonkey.ExactNumber
	if bits == 32 {
		check = jsonkey.ExactNumber32
	}
	if err := check(n); err != nil {
		return &lossError{path, fmt.Sprintf("a float%d cannot hold the number exactly: %v", bits, detailOf(err))}
	}
	return nil
}

// detailOf is err's message after its kind.
func detailOf(err error) string {
	_, after, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return err.Error()
	}
	return after
}

func canonicalBase64(s string) bool {
	b, err := base64.StdEncoding.DecodeString(s)
	return err != nil || base64.StdEncoding.EncodeToString(b) == s // an invalid one is encoding/json's to refuse
}

// any checks a value decoded into an empty interface: its numbers become
// float64s.
func (w *walker) any(v jsonkey.Node, path string) error {
	switch v.Kind() {
	case '{':
		for name, m := range v.Members() {
			_ = name // names are kept exactly as map keys
			if err := w.any(m, path+"{}"); err != nil {
				return err
			}
		}
	case '[':
		for e := range v.Elements() {
			if err := w.any(e, path+"[]"); err != nil {
				return err
			}
		}
	case '"', 't', 'f', 'n':
	default:
		return exactFloat(v.Text(), 64, path)
	}
	return nil
}

func (w *walker) elements(v jsonkey.Node, elem reflect.Type, path string) error {
	if v.Kind() != '[' {
		return nil // encoding/json refuses it
	}
	for e := range v.Elements() {
		if err := w.value(e, elem, path+"[]", false); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) mapValue(v jsonkey.Node, t reflect.Type, path string) error {
	if v.Kind() != '{' {
		return nil
	}
	k := t.Key()
	intKey := !reflect.PointerTo(k).Implements(textUnmarshalerType) && k.Kind() != reflect.String
	for name, m := range v.Members() {
		if intKey && !canonicalInt(name, k.Kind()) {
			return &lossError{path, "a map key spelled otherwise than its integer is (\"01\" and \"1\" would be one key)"}
		}
		if err := w.value(m, t.Elem(), path+"{}", false); err != nil {
			return err
		}
	}
	return nil
}

func canonicalInt(s string, k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		return err != nil || strconv.FormatInt(n, 10) == s
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(s, 10, 64)
		return err != nil || strconv.FormatUint(n, 10) == s
	}
	return true
}

func (w *walker) object(v jsonkey.Node, t reflect.Type, path string) error {
	if v.Kind() != '{' {
		return nil
	}
	fs := fieldsOf(t)
	for name, m := range v.Members() {
		candidates, ok := fs.exact[name]
		if !ok {
			if field, folds := fs.folded[foldName(name)]; folds {
				return &lossError{joinPath(path, field), "a member " + redact.String(name) + " names the field only by letter case (encoding/json would fill the field from it)"}
			}
			if w.strict {
				return &lossError{path, "unknown field " + redact.String(name)}
			}
			continue
		}
		for _, f := range candidates {
			if err := w.value(m, f.typ, joinPath(path, name), f.quoted); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// structFields are the JSON names of a struct type's fields, as
// encoding/json finds them (promoted fields of embedded structs
// included), and each name's fold.
type structFields struct {
	exact  map[string][]field
	folded map[string]string // a fold of a name: the name
}

type field struct {
	typ    reflect.Type
	quoted bool
}

var fieldCache sync.Map // reflect.Type: *structFields

func fieldsOf(t reflect.Type) *structFields {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(*structFields)
	}
	fs := &structFields{exact: map[string][]field{}, folded: map[string]string{}}
	addFields(fs, t, map[reflect.Type]bool{})
	fieldCache.Store(t, fs)
	return fs
}

// addFields adds t's fields to fs. It keeps every name encoding/json could
// use, those it drops as ambiguous too: a check of more names refuses more,
// never less.
func addFields(fs *structFields, t reflect.Type, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		sf := t.Field(i)
		ft := sf.Type
		if sf.Anonymous && ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if !sf.IsExported() && !(sf.Anonymous && ft.Kind() == reflect.Struct) {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
			addFields(fs, ft, seen)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		quoted := false
		if strings.Contains(","+opts+",", ",string,") {
			switch kind := derefKind(sf.Type); kind {
			case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
				reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
				quoted = true
			}
		}
		fs.exact[name] = append(fs.exact[name], field{typ: sf.Type, quoted: quoted})
		fs.folded[foldName(name)] = name
	}
}

func derefKind(t reflect.Type) reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

// foldName is encoding/json's fold of a name: two names match a field
// alike when their folds are equal (ASCII letters upper-cased, every
// other character the smallest of its simple case folding orbit).
func foldName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		b.WriteRune(r)
	}
	return b.String()
}
