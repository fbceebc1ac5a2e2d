package idempotency

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
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
// material) that encoding/json would decode into a typ with a loss, so that
// two requests that differ would decode alike, or a request would be read
// other than the producer and Powertools read it:
//
//   - a member whose name matches a struct field only by letter case
//     (encoding/json fills the field from "ID", "Id" or "ſ"/"K" folds);
//   - a number in a float32, float64 or any that the float does not hold
//     exactly (jsonkey.ExactNumber), spelled or in a ",string" field;
//   - a JSON string where a json.Number is expected ("1" decodes as 1),
//     and in a ",string" json.Number ("\"1\"" decodes as "1");
//   - a []byte in a base64 spelling other than the canonical one (with
//     line breaks, or unused bits set);
//   - a map key that spells an integer key type's value otherwise than
//     strconv does ("01" and "1" are one key).
//
// With strict, a member that names no field is refused too, as
// DisallowUnknownFields does. Values that decode themselves (json.Unmarshaler,
// encoding.TextUnmarshaler) are not looked into.
func exactDecode(t *jsonkey.Tree, typ reflect.Type, strict bool) error {
	w := walker{strict: strict}
	return w.value(t.Root(), typ, false)
}

// placeError returns the path of the value that decodes itself and fails
// with err, found by walking the body again and decoding each such value
// alone; "" when none does. It runs only for a body that failed.
func placeError(t *jsonkey.Tree, typ reflect.Type, err error) string {
	if t == nil || err == nil {
		return ""
	}
	w := walker{probe: func(vt reflect.Type, text string) (found bool) {
		defer func() {
			if recover() != nil { // a type's own decoding panics on another value: not this error's
				found = false
			}
		}()
		e := json.Unmarshal([]byte(text), reflect.New(vt).Interface())
		return e != nil && e.Error() == err.Error()
	}}
	if w.value(t.Root(), typ, false) != errFound {
		return ""
	}
	if w.found == "" {
		return "(the body)"
	}
	return w.found
}

// errFound stops a walk that found what its probe looks for.
var errFound = errors.New("found")

type walker struct {
	strict bool
	path   []string // where the walk is: field names, "[]" for an element, "{}" for a map value
	// probe, when set, is asked about every value that decodes itself;
	// the walk stops with errFound, and found set, at the first it accepts.
	probe func(t reflect.Type, text string) bool
	found string
}

// at is the walk's path, as in "items[].price".
func (w *walker) at() string {
	var b strings.Builder
	for i, p := range w.path {
		if i > 0 && p != "[]" && p != "{}" {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// in walks v into t one step further along the path.
func (w *walker) in(step string, v jsonkey.Node, t reflect.Type, quoted bool) error {
	w.path = append(w.path, step)
	err := w.value(v, t, quoted)
	w.path = w.path[:len(w.path)-1]
	return err
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
func (w *walker) value(v jsonkey.Node, t reflect.Type, quoted bool) error {
	c := v.Kind()
	if c == 'n' {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t, c) || t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		if w.probe != nil && w.probe(t, v.Text()) {
			w.found = w.at()
			return errFound
		}
		return nil
	}
	if quoted {
		if w.probe != nil {
			return nil
		}
		return quotedValue(v, t, w.at())
	}
	if t == numberType {
		if c == '"' {
			return &lossError{w.at(), "a JSON string where a number is expected (json.Number would read it as one)"}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return w.any(v)
		}
	case reflect.Struct:
		return w.object(v, t)
	case reflect.Map:
		return w.mapValue(v, t)
	case reflect.Slice:
		if c == '"' && t.Elem().Kind() == reflect.Uint8 {
			if s := v.Str(); !canonicalBase64(s) {
				return &lossError{w.at(), "a base64 string spelled otherwise than the canonical way (line breaks, unused bits), which two spellings of one []byte would share"}
			}
			return nil
		}
		return w.elements(v, t.Elem())
	case reflect.Array:
		return w.elements(v, t.Elem())
	case reflect.Float32, reflect.Float64:
		if c == '"' {
			return nil // encoding/json refuses it
		}
		return exactFloat(v.Text(), floatBits(t), w.at())
	}
	return nil
}

func floatBits(t reflect.Type) int {
	if t.Kind() == reflect.Float32 {
		return 32
	}
	return 64
}

// quotedValue checks the value of a field with the ",string" option, as
// encoding/json reads it: a JSON string that holds a literal of the
// field's kind, or null.
func quotedValue(v jsonkey.Node, t reflect.Type, path string) error {
	if v.Kind() != '"' {
		return &lossError{path, "a \",string\" field holds a JSON value that is not a string"}
	}
	lit := v.Str()
	if lit == "null" {
		return nil
	}
	ok := jsonkey.Check(lit) == nil
	switch {
	case t == numberType:
		// encoding/json reads a number literal, and a JSON string holding
		// one ("\"12\"" as "12"), which would share the literal's value.
		ok = ok && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9')
	case t.Kind() == reflect.String:
		ok = ok && lit[0] == '"'
	case t.Kind() == reflect.Bool:
		ok = lit == "true" || lit == "false"
	default: // a number
		ok = ok && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9')
		if ok && (t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64) {
			return exactFloat(lit, floatBits(t), path)
		}
	}
	if !ok && t == numberType {
		return &lossError{path, "a \",string\" json.Number holds a string that is not a quoted number"}
	}
	if !ok {
		return &lossError{path, fmt.Sprintf("a \",string\" field holds a string that is not a quoted %s", t.Kind())}
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
func (w *walker) any(v jsonkey.Node) error {
	switch v.Kind() {
	case '{': // names are kept exactly, as map keys
		w.path = append(w.path, "{}")
		defer func() { w.path = w.path[:len(w.path)-1] }()
		for _, m := range v.Members() {
			if err := w.any(m); err != nil {
				return err
			}
		}
	case '[':
		w.path = append(w.path, "[]")
		defer func() { w.path = w.path[:len(w.path)-1] }()
		for e := range v.Elements() {
			if err := w.any(e); err != nil {
				return err
			}
		}
	case '"', 't', 'f', 'n':
	default:
		return exactFloat(v.Text(), 64, w.at())
	}
	return nil
}

func (w *walker) elements(v jsonkey.Node, elem reflect.Type) error {
	if v.Kind() != '[' {
		return nil // encoding/json refuses it
	}
	for e := range v.Elements() {
		if err := w.in("[]", e, elem, false); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) mapValue(v jsonkey.Node, t reflect.Type) error {
	if v.Kind() != '{' {
		return nil
	}
	k := t.Key()
	intKey := !reflect.PointerTo(k).Implements(textUnmarshalerType) && k.Kind() != reflect.String
	for name, m := range v.Members() {
		if intKey && !canonicalInt(name, k.Kind()) {
			return &lossError{w.at(), "a map key spelled otherwise than its integer is (\"01\" and \"1\" would be one key)"}
		}
		if err := w.in("{}", m, t.Elem(), false); err != nil {
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

func (w *walker) object(v jsonkey.Node, t reflect.Type) error {
	if v.Kind() != '{' {
		return nil
	}
	fs := fieldsOf(t)
	for name, m := range v.Members() {
		candidates, ok := fs.exact[name]
		if !ok {
			if field, folds := fs.folded[foldName(name)]; folds {
				w.path = append(w.path, field)
				return &lossError{w.at(), "a member " + redact.String(name) + " names the field only by letter case (encoding/json would fill the field from it)"}
			}
			if w.strict {
				return &lossError{w.at(), "unknown field " + redact.String(name)}
			}
			continue
		}
		for _, f := range candidates {
			if err := w.in(name, m, f.typ, f.quoted); err != nil {
				return err
			}
		}
	}
	return nil
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
