package jmespath

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jmespath-community/go-jmespath/pkg/api"
	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/sqsonce/sqsonce/internal/inflate"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// maxDecoded bounds what powertools_base64_gzip inflates, so that a small
// compressed body cannot make a key function allocate without limit.
const maxDecoded = 8 << 20

// Expression is a compiled JMESPath expression that selects key material
// from an SQS record. Its Select method is an [idempotency.KeyFunc], for a
// key or a validated payload. It is safe for concurrent use.
type Expression struct {
	expr             string
	spelled, valued  api.JMESPath
	selector, source string
	need             *need // what the expression reads of an event (see SelectJSON); nil: all of it
}

// Compile parses a JMESPath expression, with Powertools' functions (see the
// package doc). It fails when expr is not a valid expression.
func Compile(expr string) (*Expression, error) {
	spelled, err := api.Compile(expr, powertools(true)...)
	if err != nil {
		return nil, fmt.Errorf("idempotency: JMESPath %q: %w", expr, err)
	}
	valued, err := api.Compile(expr, powertools(false)...)
	if err != nil {
		return nil, fmt.Errorf("idempotency: JMESPath %q: %w", expr, err)
	}
	return &Expression{expr: expr, spelled: spelled, valued: valued,
		selector: "jmespath " + expr, source: fmt.Sprintf("JMESPath %q", expr), need: needs(expr)}, nil
}

// MustCompile is [Compile] for an expression known to be valid: it panics
// when expr is not.
func MustCompile(expr string) *Expression {
	e, err := Compile(expr)
	if err != nil {
		panic(err)
	}
	return e
}

// String returns the expression's text.
func (e *Expression) String() string { return e.expr }

// Select returns the key material e selects from m: the selection as JSON,
// under the selector "jmespath " followed by the expression's text (so that
// in the native format a re-spelled expression gives other record ids).
// Its method value, e.Select, is an [idempotency.KeyFunc].
//
// Select fails with a [*idempotency.KeyError]: wrapping
// [idempotency.ErrNoKey] when the selection is missing (see the package
// doc), or the evaluation's error (a body that powertools_json cannot
// parse, say).
func (e *Expression) Select(m events.SQSMessage) (idempotency.Key, error) {
	fail := func(err error) (idempotency.Key, error) {
		return idempotency.Key{}, &idempotency.KeyError{MessageID: m.MessageId, Source: e.source, Err: err}
	}
	approx, err := e.valued.Search(record(m))
	if err != nil {
		return fail(err)
	}
	if missing(approx) {
		return fail(fmt.Errorf("%w: the expression selects %s", idempotency.ErrNoKey, describe(approx)))
	}
	sel := approx
	if exact, err := e.spelled.Search(record(m)); err == nil && reflect.DeepEqual(toDoubles(exact), approx) {
		sel = exact // the numbers as the message spelled them
	}
	b, err := json.Marshal(sel)
	if err != nil {
		return fail(err)
	}
	return idempotency.Key{Selector: e.selector, Value: b}, nil
}

// record is the SQS record as Lambda delivers it to a function, as JSON
// values: strings, maps and slices.
func record(m events.SQSMessage) map[string]any {
	attrs := make(map[string]any, len(m.Attributes))
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	mattrs := make(map[string]any, len(m.MessageAttributes))
	for k, a := range m.MessageAttributes {
		v := map[string]any{"dataType": a.DataType}
		if a.StringValue != nil {
			v["stringValue"] = *a.StringValue
		}
		if a.BinaryValue != nil {
			v["binaryValue"] = base64.StdEncoding.EncodeToString(a.BinaryValue)
		}
		strs := make([]any, len(a.StringListValues))
		for i, s := range a.StringListValues {
			strs[i] = s
		}
		bins := make([]any, len(a.BinaryListValues))
		for i, b := range a.BinaryListValues {
			bins[i] = base64.StdEncoding.EncodeToString(b)
		}
		v["stringListValues"], v["binaryListValues"] = strs, bins
		mattrs[k] = v
	}
	return map[string]any{
		"messageId":              m.MessageId,
		"receiptHandle":          m.ReceiptHandle,
		"body":                   m.Body,
		"md5OfBody":              m.Md5OfBody,
		"md5OfMessageAttributes": m.Md5OfMessageAttributes,
		"attributes":             attrs,
		"messageAttributes":      mattrs,
		"eventSourceARN":         m.EventSourceARN,
		"eventSource":            m.EventSource,
		"awsRegion":              m.AWSRegion,
	}
}

// powertools returns Powertools' JMESPath functions. With numbers set,
// powertools_json keeps each number's spelling (as a json.Number);
// otherwise it gives doubles, as the expression's own arithmetic needs.
func powertools(numbers bool) []functions.FunctionEntry {
	str := []functions.ArgSpec{{Types: []functions.JpType{functions.JpString}}}
	decode := func(s string) (any, error) {
		if longNumber(s) {
			return nil, fmt.Errorf("powertools_json: a number longer than %d characters: send it as a string", maxNumberLen)
		}
		d := json.NewDecoder(bytes.NewReader([]byte(s)))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("powertools_json: %w", err)
		}
		if _, err := d.Token(); err != io.EOF {
			return nil, errors.New("powertools_json: text after the JSON value")
		}
		if !numbers {
			v = toDoubles(v)
		}
		return v, nil
	}
	return []functions.FunctionEntry{
		{Name: "powertools_json", Arguments: str, Handler: func(args []any) (any, error) {
			return decode(args[0].(string))
		}},
		{Name: "powertools_base64", Arguments: str, Handler: func(args []any) (any, error) {
			b, err := base64.StdEncoding.DecodeString(args[0].(string))
			if err != nil {
				return nil, fmt.Errorf("powertools_base64: %w", err)
			}
			return string(b), nil
		}},
		{Name: "powertools_base64_gzip", Arguments: str, Handler: func(args []any) (any, error) {
			b, err := base64.StdEncoding.DecodeString(args[0].(string))
			if err != nil {
				return nil, fmt.Errorf("powertools_base64_gzip: %w", err)
			}
			out, err := inflate.Gunzip(b, maxDecoded)
			if err != nil {
				return nil, fmt.Errorf("powertools_base64_gzip: %w", err)
			}
			return string(out), nil
		}},
	}
}

// maxNumberLen is the longest number powertools_json decodes, as package
// idempotency bounds numbers in key material: a longer one is refused as soon
// as it is seen, before anything is parsed.
const maxNumberLen = 100

// longNumber reports whether the JSON text s holds, outside its strings, a
// run of number characters longer than maxNumberLen. It reads s once and
// stops at the first such run.
func longNumber(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			run = 0
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E':
			if run++; run > maxNumberLen {
				return true
			}
		default:
			run = 0
		}
	}
	return false
}

// toDoubles returns v with every json.Number made a float64 (±Inf beyond a
// double's range).
func toDoubles(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = toDoubles(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = toDoubles(e)
		}
		return out
	}
	return v
}

// missing reports whether a selection is no key: null, "", an empty array or
// object, or one whose values are all null.
func missing(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		for _, e := range v {
			if e != nil {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if e != nil {
				return false
			}
		}
		return true
	}
	return false
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return `""`
	case []any:
		if len(v) == 0 {
			return "an empty array"
		}
		return "an array of nulls"
	}
	if len(v.(map[string]any)) == 0 {
		return "an empty object"
	}
	return "an object of nulls"
}
