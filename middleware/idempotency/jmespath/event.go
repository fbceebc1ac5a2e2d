package jmespath

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// SelectJSON returns the key material e selects from doc, a JSON document:
// a whole Lambda event as the function receives it, on which Powertools
// for AWS Lambda evaluates eventKeyJmesPath for a handler made idempotent
// with makeIdempotent or @idempotent (API Gateway, EventBridge, a direct
// invocation). The selector, the functions, the numbers, the missing keys
// and the refusals are as for [Expression.Select], so the same expression
// on the same value gives the same record id.
//
// SelectJSON fails with a [*idempotency.KeyError] as Select does, and for a
// document that breaks the JSON rules of key material (see the package
// doc): not one JSON value, not valid UTF-8, a lone surrogate escape such
// as "\ud800" (encoding/json would read it as U+FFFD, and two events that
// differ there would share a record), a member named twice, a number
// longer than 100 characters.
func (e *Expression) SelectJSON(doc json.RawMessage) (idempotency.Selection, error) {
	fail := func(err error) (idempotency.Selection, error) {
		return idempotency.Selection{}, &idempotency.KeyError{Source: e.source, Err: err}
	}
	text := unsafeString(doc) // read, never written
	ev := newEvaluator(int64(len(text)))
	if err := ev.checkJSON(text); err != nil {
		return fail(fmt.Errorf("the event: %w", err))
	}
	k, err := e.key(ev, rawValue(trimJSONSpace(text)))
	if err != nil {
		return fail(err)
	}
	return k, nil
}

// Selector returns e as an [idempotency.Selector] of any input, evaluated
// as Powertools for AWS Lambda evaluates its JMESPath expressions: on an
// SQS message as [Expression.Select] does (the record as Lambda delivers
// it), on a json.RawMessage as it is, and on any other input on its JSON
// encoding (json.Marshal), as [Expression.SelectJSON] does. The encoding
// holds what the input's type declares: a field it lacks is absent (as a
// key, its selection is missing and the call fails; see the package doc),
// and strings are as the Lambda runtime decoded them, with a lone
// surrogate already read as U+FFFD; a string that is not valid UTF-8,
// which the encoding would replace, fails the call. For an event exactly as delivered,
// make the input json.RawMessage. In [idempotency.WrapJSON] it is
// evaluated on the message, whatever the request type.
func (e *Expression) Selector() idempotency.Selector {
	// Of an input, not of an any: a SelectorFunc of the request type gets
	// WrapJSON's decoded request, and a request type of any would take it.
	return idempotency.SelectorFunc(func(in input) (idempotency.Selection, error) {
		switch in := in.(type) {
		case events.SQSMessage:
			return e.Select(in)
		case json.RawMessage:
			return e.SelectJSON(in)
		}
		doc, err := jsonkey.Marshal(in)
		if err != nil {
			return idempotency.Selection{}, &idempotency.KeyError{Source: e.source,
				Err: fmt.Errorf("encoding the %T input as JSON: %w", in, redactMarshal(err))}
		}
		return e.SelectJSON(doc)
	})
}

// input is any input of a Selector: every type implements it, and none
// but itself is it, so that in idempotency.WrapJSON the selector binds to
// the message, the first of its inputs that implements it.
type input interface{}

// redactMarshal is a json.Marshal error without the value it may quote (a
// MarshalerError's or an UnsupportedValueError's).
func redactMarshal(err error) error {
	switch err.(type) {
	case *json.UnsupportedTypeError:
		return err // names a type
	}
	if errors.Is(err, jsonkey.ErrInvalidUTF8) {
		return err // names a type
	}
	return fmt.Errorf("%T", err)
}
