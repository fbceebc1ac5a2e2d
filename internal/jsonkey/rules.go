package jsonkey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxNumberLen is the longest number key material may hold, in bytes. A
// longer number is refused after reading MaxNumberLen+1 of its bytes, so
// the work done for a key stays linear in its size whatever the number.
const MaxNumberLen = 100

// MaxDepth is the deepest nesting of arrays and objects accepted:
// encoding/json's own limit, so that text accepted here decodes there.
const MaxDepth = 10000

// The rules an [*Error] reports as its Kind; match them with [errors.Is].
var (
	ErrSyntax        = errors.New("not valid JSON")
	ErrTooDeep       = fmt.Errorf("nested deeper than %d levels", MaxDepth)
	ErrNumberTooLong = fmt.Errorf("a number longer than %d characters, the most a key takes: send it as a string", MaxNumberLen)
	ErrInvalidUTF8   = errors.New("not valid UTF-8")
	ErrLoneSurrogate = errors.New("a string holds an unpaired surrogate escape")
	ErrDuplicateName = errors.New("an object names a member twice")
)

// Error is JSON text refused by the rules: the rule it breaks (one of the
// Err variables of this package) and the byte offset where it breaks it.
// It never holds the text.
type Error struct {
	Kind   error
	Offset int
}

func (e *Error) Error() string { return fmt.Sprintf("%v (at byte %d)", e.Kind, e.Offset) }

// Unwrap returns e.Kind.
func (e *Error) Unwrap() error { return e.Kind }

// Check reports whether text is one JSON value that keeps the rules (see
// the package doc), with an [*Error] when it is not.
func Check(text string) error { return check(text, true) }

// check is Check, with or without the duplicate-name rule.
func check(text string, dups bool) error {
	s := scanner{s: text, dups: dups}
	i := s.space(0)
	end, err := s.value(i, 0, true)
	if err != nil {
		return err
	}
	if end = s.space(end); end != len(text) {
		return &Error{ErrSyntax, end}
	}
	return nil
}

// Decode checks text (see [Check]) and decodes it as encoding/json decodes
// into an any, with numbers as [json.Number] so that each keeps its
// spelling: map[string]any, []any, string, json.Number, bool or nil. Since
// the text keeps the rules, the decoding loses nothing: no string is
// altered and no member is dropped.
func Decode(text string) (any, error) {
	if err := Check(text); err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader([]byte(text)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil { // unreachable for checked text
		return nil, &Error{ErrSyntax, int(d.InputOffset())}
	}
	return v, nil
}
