package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/internal/redact"
)

// JSONBody says how [WrapJSON] reads a message: the JSON body decoded into
// Req, and the key, the check and the validated payload taken from the
// decoded value.
type JSONBody[Req any] struct {
	// KeyFunc returns the key of a decoded request: for example [KeyOf] the
	// producer's key or the fields that define the work, under a selector
	// name of your own, or [BodyKey] to find the records that [Wrap] with
	// [BodyField] wrote (see [KeyFunc] for what a key must be). An error, or
	// an empty key, fails the message with a [*KeyError] (wrapping
	// [ErrNoKey] for an empty key) before anything is claimed. A method
	// expression fits: KeyFunc: Order.IdempotencyKey. Required.
	KeyFunc func(Req) (Key, error)

	// Check, if set, checks that a decoded request is well formed, after
	// its key is taken: a request it refuses fails like a body that does
	// not decode, with a [*BodyError], before anything is claimed. Nil
	// accepts every request that decodes.
	Check func(Req) error

	// PayloadFunc, if set, returns the payload that must be the same
	// whenever the key is reused, as for [WrapPayload]: a key reused with
	// another payload fails with a [*PayloadMismatchError]. Nil turns
	// payload validation off.
	PayloadFunc func(Req) (Key, error)

	// DisallowUnknownFields fails a body that has a field Req does not
	// declare, anywhere in it, as [json.Decoder.DisallowUnknownFields] does
	// (a type with its own UnmarshalJSON method decides for its part). The
	// default, false, ignores such fields, as [json.Unmarshal] does.
	DisallowUnknownFields bool
}

// WrapJSON returns fn made idempotent per message, with the body decoded
// once into fn's request type:
//
//	h := idempotency.WrapJSON(g, idempotency.JSONBody[Order]{KeyFunc: Order.IdempotencyKey}, charge)
//	lambda.StartHandlerFunc(batch.SQS(h, batch.Options{}))
//
// For each message, in order: the body is decoded into a Req, body.KeyFunc
// takes the key from it, body.Check checks it, body.PayloadFunc takes the
// payload to validate; then fn runs through [Do] with the decoded
// request and the message. The body must keep the rules of key material
// (see the package doc) and decode without a loss: a member that names a
// field only by letter case, a number a float or an any does not hold
// exactly, a string for a json.Number, a non-canonical base64 []byte or an
// integer map key spelled otherwise than strconv writes it is refused. A
// body that breaks this, is not JSON, does not decode into Req, has a field
// Req lacks (with DisallowUnknownFields) or fails the check fails its
// message with a [*BodyError]; a request without a key, or a [BodyKey] key
// that does not hash as the body's field, fails with a [*KeyError]. Either
// way nothing is claimed and fn does not run.
//
// WrapJSON panics if g, body.KeyFunc or fn is nil.
func WrapJSON[Req, T any](g *Guard, body JSONBody[Req], fn func(context.Context, Req, events.SQSMessage) (T, error)) func(context.Context, events.SQSMessage) (T, error) {
	switch {
	case g == nil:
		panic("idempotency: WrapJSON: nil *Guard")
	case body.KeyFunc == nil:
		panic("idempotency: WrapJSON: nil JSONBody.KeyFunc")
	case fn == nil:
		panic("idempotency: WrapJSON: nil operation")
	}
	reqType := reflect.TypeFor[Req]()
	typeName := reqType.String()
	return func(ctx context.Context, m events.SQSMessage) (T, error) {
		var zero T
		fail := func(err error) (T, error) {
			g.report(ctx, Event{Outcome: OutcomeFailed, MessageID: m.MessageId, Err: err})
			return zero, &reported{err}
		}
		// The body keeps the rules of key material, and decodes into Req
		// without a loss, since the key is taken from what it decodes to:
		// two bodies that decode alike are alike.
		tree, err := jsonkey.Index(m.Body)
		if err == nil {
			err = exactDecode(tree, reqType, body.DisallowUnknownFields)
		}
		var req Req
		if err == nil {
			req, err = decodeBody[Req]([]byte(m.Body), body.DisallowUnknownFields)
			if err != nil {
				return fail(&BodyError{MessageID: m.MessageId, Type: typeName, Err: err, at: placeError(tree, reqType, err)})
			}
		}
		if err != nil {
			return fail(&BodyError{MessageID: m.MessageId, Type: typeName, Err: err})
		}
		c := call{messageID: m.MessageId, source: typeName}
		if c.key, err = body.KeyFunc(req); err == nil && len(c.key.Value) == 0 {
			err = ErrNoKey
		}
		if err == nil {
			err = g.sameAsBody(tree, c.key)
		}
		if err != nil {
			return fail(keyError(m.MessageId, typeName, err))
		}
		if body.Check != nil {
			if err := body.Check(req); err != nil {
				return fail(&BodyError{MessageID: m.MessageId, Type: typeName, Err: err, check: true})
			}
		}
		if body.PayloadFunc != nil {
			c.validate = true
			if c.payload, err = body.PayloadFunc(req); err == nil {
				err = g.sameAsBody(tree, c.payload)
			}
		}
		if err != nil {
			return fail(keyError(m.MessageId, typeName, fmt.Errorf("payload for validation: %w", err)))
		}
		return do(ctx, g, c, func(ctx context.Context) (T, error) { return fn(ctx, req, m) })
	}
}

// keyError is err as a *KeyError, unless it is one already.
func keyError(messageID, typeName string, err error) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		return err
	}
	return &KeyError{MessageID: messageID, Source: typeName, Err: err}
}

// decodeBody decodes one JSON value from b into a new Req, refusing
// anything after it; strict refuses fields Req does not declare.
func decodeBody[Req any](b []byte, strict bool) (Req, error) {
	var r Req
	if !strict {
		err := json.Unmarshal(b, &r)
		return r, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty body")
		}
		return r, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return r, errors.New("data after the JSON value")
	}
	return r, nil
}

// sameAsBody reports an error for a key that [BodyKey] made (its selector
// is a body field's) whose digest differs from that of the field the body
// holds: the request type read the field with a loss (a number spelled 10.0
// in a float64 for the Python format, a string in a json.Number), or the
// value was not the field's, so the key would not be [BodyField]'s.
func (g *Guard) sameAsBody(body *jsonkey.Tree, k Key) error {
	path, ok := bodySelectorPath(k.Selector)
	if !ok {
		return nil
	}
	var raw string
	if v, ok := body.Root().Get(path...); ok {
		raw = v.Text()
	}
	if raw == "" || raw == "null" || raw == `""` {
		return fmt.Errorf("%w: the body has no %s, where BodyKey's value comes from", ErrNoKey, k.Selector)
	} else if raw == string(k.Value) || jsonkey.Equal(raw, string(k.Value)) {
		return nil // alike but for white space and escapes: one digest, computed once, for the record id
	} else if want, err := g.cfg.Format.Hash(Key{Selector: k.Selector, Value: []byte(raw)}); err != nil {
		return err
	} else if got, err := g.cfg.Format.Hash(k); err != nil || got == want {
		return err
	}
	return fmt.Errorf("the body's %s is not the value the request type gave for it (read with a loss, or not the field's): its record id would not be BodyField's", k.Selector)
}

// bodySelectorPath returns the path of a body field's selector,
// `body ["document","id"]`.
func bodySelectorPath(selector string) ([]string, bool) {
	quoted, ok := strings.CutPrefix(selector, "body [")
	if !ok {
		return nil, false
	}
	var path []string
	if json.Unmarshal([]byte("["+quoted), &path) != nil || len(path) == 0 {
		return nil, false
	}
	return path, true
}

// BodyError reports a message body that [WrapJSON] could not take as its
// request type: not JSON, breaking the rules of key material, read by the
// type with a loss, not decodable into the type, with a field the type
// lacks (when unknown fields are disallowed), or refused by
// [JSONBody.Check]. Nothing was claimed and the operation did not run;
// the same body fails the same way on every delivery. Its message names the
// field, the kind of problem and a digest, never the value; Err is the
// decoder's or the check's error as it was.
type BodyError struct {
	MessageID string // the SQS message
	Type      string // the request type, e.g. "orders.Order"
	Err       error  // the decoder's or the check's error

	check bool   // Err is the check's
	at    string // the field whose own decoding returned Err, when known
}

func (e *BodyError) Error() string {
	what := detail(e.Err)
	if !e.check {
		what = describeDecode(e.Err, e.at)
	}
	return fmt.Sprintf("idempotency: body of message %s is not a valid %s: %s", e.MessageID, e.Type, what)
}

// describeDecode is a decoding error's message without quoting the body,
// since errors reach the logs: this package's own errors and
// encoding/json's syntax and type errors name the rule, the offset or the
// field and the kinds; any other error (a type's own UnmarshalJSON or
// UnmarshalText, a ",string" field) is named by its Go type, the field
// that returned it when known, and a digest of its message, which may
// quote the value.
func describeDecode(err error, at string) string {
	var ke *jsonkey.Error
	var le *lossError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &ke), errors.As(err, &le):
		return err.Error()
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON (at byte %d)", se.Offset)
	case errors.As(err, &te):
		kind, _, _ := strings.Cut(te.Value, " ") // "number 1e999": the kind, not the value
		if te.Field == "" {
			return fmt.Sprintf("a JSON %s, want %s", kind, te.Type)
		}
		return fmt.Sprintf("field %s is a JSON %s, want %s", te.Field, kind, te.Type)
	}
	where := "a value"
	if at != "" {
		where = "field " + at
	}
	return fmt.Sprintf("%s does not decode (%T, message %s)", where, err, redact.Digest(err.Error()))
}

func (e *BodyError) Unwrap() error { return e.Err }
