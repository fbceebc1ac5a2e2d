package idempotency

import (
	"context"
	"fmt"
	"reflect"
)

// EventKeys says how [WrapEvent] takes the key, and the payload to
// validate, from an event of type E.
type EventKeys[E any] struct {
	// KeyFunc returns the key of an event: a JMESPath expression over the
	// event's JSON, as Powertools for AWS Lambda evaluates eventKeyJmesPath
	// (package jmespath's EventKey), or a selection of your own with
	// [KeyOf] (see [KeyFunc] for what a key must be). An error, or an empty
	// key, fails the call with a [*KeyError] (wrapping [ErrNoKey] for an
	// empty key) before anything is claimed. Required.
	KeyFunc func(E) (Key, error)

	// PayloadFunc, if set, returns the payload that must be the same
	// whenever the key is reused, as for [WrapPayload]: a key reused with
	// another payload fails with a [*PayloadMismatchError]. Nil turns
	// payload validation off.
	PayloadFunc func(E) (Key, error)

	// MessageID, if set, names an event in log lines, errors and
	// [Event.MessageID]: an API request's id, a stream record's sequence
	// number. It must not return message content. Nil leaves them empty.
	MessageID func(E) string
}

// WrapEvent returns fn made idempotent per event, for a Lambda handler of
// any event type or the records of a stream: the key of each event is taken
// with keys.KeyFunc (and its payload with keys.PayloadFunc), and fn runs
// through [Do]. The returned function has fn's shape, so it is a
// Lambda handler when fn is. An event without a key fails with a
// [*KeyError] and fn does not run; the other errors are the package's (see
// Errors and Other events in the package doc).
//
// WrapEvent panics if g, keys.KeyFunc or fn is nil.
func WrapEvent[E, T any](g *Guard, keys EventKeys[E], fn func(context.Context, E) (T, error)) func(context.Context, E) (T, error) {
	switch {
	case g == nil:
		panic("idempotency: WrapEvent: nil *Guard")
	case keys.KeyFunc == nil:
		panic("idempotency: WrapEvent: nil EventKeys.KeyFunc")
	case fn == nil:
		panic("idempotency: WrapEvent: nil operation")
	}
	typeName := reflect.TypeFor[E]().String()
	return func(ctx context.Context, ev E) (T, error) {
		c := call{source: typeName}
		if keys.MessageID != nil {
			c.messageID = keys.MessageID(ev)
		}
		var err error
		if c.key, err = keys.KeyFunc(ev); err == nil && len(c.key.Value) == 0 {
			err = ErrNoKey
		}
		if err == nil && keys.PayloadFunc != nil {
			c.validate = true
			if c.payload, err = keys.PayloadFunc(ev); err != nil {
				err = fmt.Errorf("payload for validation: %w", err)
			}
		}
		if err != nil {
			var zero T
			err = keyError(c.messageID, typeName, err)
			g.report(ctx, Event{Outcome: OutcomeFailed, MessageID: c.messageID, Err: err})
			return zero, &reported{err}
		}
		return do(ctx, g, c, func(ctx context.Context) (T, error) { return fn(ctx, ev) })
	}
}
