package jmespath

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// SelectJSON returns the key material e selects from doc, a JSON document:
// a whole Lambda event as the function receives it, on which Powertools
// for AWS Lambda evaluates eventKeyJmesPath for a handler made idempotent
// with makeIdempotent or @idempotent (API Gateway, EventBridge, a direct
// invocation). The selector, the functions, the numbers, the missing keys
// and the refusals are as for [Expression.Select], so the same expression
// on the same value gives the same record id. Its method value is the
// KeyFunc of an idempotency.EventKeys[json.RawMessage].
//
// SelectJSON fails with a [*idempotency.KeyError] as Select does, and for a
// document that breaks the JSON rules of key material (see the package
// doc): not one JSON value, not valid UTF-8, a lone surrogate escape such
// as "\ud800" (encoding/json would read it as U+FFFD, and two events that
// differ there would share a record), a member named twice, a number
// longer than 100 characters.
func (e *Expression) SelectJSON(doc json.RawMessage) (idempotency.Key, error) {
	fail := func(err error) (idempotency.Key, error) {
		return idempotency.Key{}, &idempotency.KeyError{Source: e.source, Err: err}
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

// EventKey returns a key function for events of type E: e evaluated, as
// [Expression.SelectJSON] does, on the event's JSON encoding (json.Marshal),
// for idempotency.EventKeys.KeyFunc or PayloadFunc. The encoding holds what
// E declares: a field E lacks is absent from it (its selection is missing
// and the call fails), and strings are as the Lambda runtime decoded them,
// with a lone surrogate already read as U+FFFD. For the event exactly as
// delivered, make E json.RawMessage: EventKey then evaluates it as it is.
func EventKey[E any](e *Expression) func(E) (idempotency.Key, error) {
	return func(ev E) (idempotency.Key, error) {
		if raw, ok := any(ev).(json.RawMessage); ok {
			return e.SelectJSON(raw)
		}
		doc, err := json.Marshal(ev)
		if err != nil {
			return idempotency.Key{}, &idempotency.KeyError{Source: e.source,
				Err: fmt.Errorf("encoding the %s event as JSON: %w", reflect.TypeFor[E](), redactMarshal(err))}
		}
		return e.SelectJSON(doc)
	}
}

// redactMarshal is a json.Marshal error without the value it may quote (a
// MarshalerError's or an UnsupportedValueError's).
func redactMarshal(err error) error {
	switch err.(type) {
	case *json.UnsupportedTypeError:
		return err // names a type
	}
	return fmt.Errorf("%T", err)
}
