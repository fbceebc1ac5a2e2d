package jmespath

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// Expression is a compiled JMESPath expression that selects a key, or a
// validated payload, from an input: [Expression.Selector] for
// idempotency.Wrap, Select and SelectJSON for a function of your own. It
// is safe for concurrent use.
type Expression struct {
	expr             string
	ast              *node
	selector, source string
}

// Compile parses a JMESPath expression, with Powertools' functions (see
// the package doc). It fails when expr is not a valid expression, calls an
// unknown function or one with the wrong number of arguments, or is one
// that Powertools Python and TypeScript read differently.
func Compile(expr string) (*Expression, error) {
	fail := func(err error) (*Expression, error) {
		return nil, fmt.Errorf("idempotency: JMESPath %q: %w", expr, err)
	}
	ast, err := parse(expr, bindingPower[tFilter])
	if err != nil {
		return fail(err)
	}
	// Powertools TypeScript parses what follows a filter with a lower
	// binding power: a[?x].b[?y] filters each element there and the list
	// of results in Python.
	ts, err := parse(expr, tsFilterPower)
	if err != nil || !ast.equal(ts) {
		return fail(errAt(0, "Powertools Python and TypeScript parse this expression differently (a filter or * after a filter's projection): add parentheses or a pipe"))
	}
	if err := resolve(ast, false); err != nil {
		return fail(err)
	}
	return &Expression{expr: expr, ast: ast,
		selector: "jmespath " + expr, source: fmt.Sprintf("JMESPath %q", expr)}, nil
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
//
// Select fails with a [*idempotency.KeyError]: wrapping
// [idempotency.ErrNoKey] when the selection is missing (see the package
// doc), or the reason the evaluation was refused (a body that
// powertools_json cannot read, a value the Powertools runtimes would
// compute differently; see the package doc). No error quotes the message.
func (e *Expression) Select(m events.SQSMessage) (idempotency.Selection, error) {
	rec, size := record(m)
	k, err := e.key(newEvaluator(size), rec)
	if err != nil {
		return idempotency.Selection{}, &idempotency.KeyError{InputID: m.MessageId, Source: e.source, Err: err}
	}
	return k, nil
}

// errInternal is the error of an evaluation that panicked: a bug of this
// package, reported as the message's failure rather than the batch's.
var errInternal = errors.New("internal error while evaluating the expression (a bug of package jmespath)")

// key evaluates e on v and returns the selection as key material.
func (e *Expression) key(ev *evaluator, v value) (k idempotency.Selection, err error) {
	defer func() {
		if recover() != nil {
			k, err = idempotency.Selection{}, errInternal
		}
	}()
	sel, err := ev.visit(e.ast, v)
	if err != nil {
		return idempotency.Selection{}, err
	}
	if sel.k == kUndef {
		return idempotency.Selection{}, refuse(errUndef)
	}
	missing, err := ev.missing(sel)
	if err != nil {
		return idempotency.Selection{}, err
	}
	b, err := ev.reserve(nil, keySize(sel))
	if err == nil {
		b, err = ev.keyJSON(b, sel)
	}
	if missing {
		noKey := fmt.Errorf("%w: the expression selects %s", idempotency.ErrNoKey, describe(sel))
		if err != nil {
			return idempotency.Selection{}, noKey
		}
		return idempotency.Selection{}, &noKeyError{idempotency.Selection{Selector: e.selector, Value: b}, noKey}
	}
	if err != nil {
		return idempotency.Selection{}, err
	}
	return idempotency.Selection{Selector: e.selector, Value: b}, nil
}

// noKeyError is a missing selection (see the package doc): no key, but a
// payload like any other, which [idempotency.WithPayload] validates as
// Powertools does (it hashes JSON.stringify, or json.dumps, of whatever
// the expression selects). It wraps idempotency.ErrNoKey and says what
// err says; package idempotency takes the payload by its NoKeyPayload
// method (the unexported interface noKeyPayload of key.go, which its own
// body selectors' error implements too).
type noKeyError struct {
	payload idempotency.Selection
	err     error
}

func (e *noKeyError) Error() string                       { return e.err.Error() }
func (e *noKeyError) Unwrap() error                       { return e.err }
func (e *noKeyError) NoKeyPayload() idempotency.Selection { return e.payload }

// sortedKeys is m's keys, sorted, in one allocation.
func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// record is the SQS record as Lambda delivers it to a function, and the
// number of bytes of its strings. The record and each message attribute
// are opaque (Lambda may write members this rebuilt record lacks), the
// attribute maps unordered.
func record(m events.SQSMessage) (value, int64) {
	const recordMembers = 10
	size := int64(len(m.Body) + len(m.MessageId) + len(m.ReceiptHandle) + len(m.Md5OfBody) +
		len(m.Md5OfMessageAttributes) + len(m.EventSourceARN) + len(m.EventSource) + len(m.AWSRegion))
	attrs := &composite{keys: make([]string, 0, len(m.Attributes)), vals: make([]value, 0, len(m.Attributes))}
	for _, k := range sortedKeys(m.Attributes) { // one order for every evaluation
		v := m.Attributes[k]
		attrs.keys, attrs.vals = append(attrs.keys, k), append(attrs.vals, str(v))
		size += int64(len(k) + len(v))
	}
	mattrs := &composite{}
	for _, name := range sortedKeys(m.MessageAttributes) {
		a := m.MessageAttributes[name]
		v := &composite{}
		if a.StringValue != nil {
			v.set("stringValue", str(*a.StringValue))
			size += int64(len(*a.StringValue))
		}
		if a.BinaryValue != nil {
			v.set("binaryValue", str(base64.StdEncoding.EncodeToString(a.BinaryValue)))
			size += int64(len(a.BinaryValue)) * 2
		}
		strs := make([]value, len(a.StringListValues))
		for i, s := range a.StringListValues {
			strs[i] = str(s)
			size += int64(len(s))
		}
		bins := make([]value, len(a.BinaryListValues))
		for i, b := range a.BinaryListValues {
			bins[i] = str(base64.StdEncoding.EncodeToString(b))
			size += int64(len(b)) * 2
		}
		v.set("stringListValues", array(strs))
		v.set("binaryListValues", array(bins))
		v.set("dataType", str(a.DataType))
		size += int64(len(name) + len(a.DataType))
		mattrs.keys, mattrs.vals = append(mattrs.keys, name), append(mattrs.vals, value{k: kObject, c: v, f: fOpaque})
	}
	rec := &composite{keys: make([]string, 0, recordMembers), vals: make([]value, 0, recordMembers)}
	rec.set("messageId", str(m.MessageId))
	rec.set("receiptHandle", str(m.ReceiptHandle))
	rec.set("body", str(m.Body))
	rec.set("attributes", value{k: kObject, c: attrs, f: fUnordered})
	rec.set("messageAttributes", value{k: kObject, c: mattrs, f: fUnordered})
	rec.set("md5OfBody", str(m.Md5OfBody))
	rec.set("md5OfMessageAttributes", str(m.Md5OfMessageAttributes))
	rec.set("eventSource", str(m.EventSource))
	rec.set("eventSourceARN", str(m.EventSourceARN))
	rec.set("awsRegion", str(m.AWSRegion))
	return value{k: kObject, c: rec, f: fOpaque}, size
}
