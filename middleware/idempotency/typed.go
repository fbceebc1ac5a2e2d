package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/internal/planted"
	"github.com/sqsonce/sqsonce/internal/redact"
	"github.com/sqsonce/sqsonce/middleware/failure"
)

// WrapJSON returns fn made idempotent per message, with the body decoded
// once into fn's request type:
//
//	h := idempotency.WrapJSON(g, idempotency.BodyField("order_id"), charge)
//	lambda.StartHandlerFunc(batch.SQS(h, batch.Options{}))
//
// For each message: the body is decoded into a Req; key takes the key (a
// [SelectorFunc] of Req from the decoded request); [WithCheck]'s check
// runs; then fn runs, as for [Wrap]. The body must keep the rules of
// [Selection] and decode without a loss (no field named only by letter
// case, no number a float does not hold exactly). A body that does not, or
// fails the check, fails its message with a [*BodyError]; a message
// without a key, with a [*KeyError]; either way fn does not run. WrapJSON
// takes Wrap's options, WithCheck and [DisallowUnknownFields], and panics
// as Wrap does.
func WrapJSON[Req, T any](g *Guard, key Selector, fn func(context.Context, Req, events.SQSMessage) (T, error), opts ...Option) func(context.Context, events.SQSMessage) (T, error) {
	w, err := newJSONWrapper[Req, T](g, key, fn == nil, opts)
	if err != nil {
		panic("idempotency: WrapJSON: " + err.Error())
	}
	reqType := reflect.TypeFor[Req]()
	typeName := reqType.String()
	return func(ctx context.Context, m events.SQSMessage) (T, error) {
		var zero T
		c := call{source: typeName, strict: w.strict && !planted.On(planted.JSONDropsStrict), inputID: m.MessageId,
			group: planted.If(planted.JSONGroupUnscoped, "", messageGroup(&m))}
		// The body keeps the rules of key material, and decodes into Req
		// without a loss: two bodies that decode alike are alike.
		tree, err := jsonkey.Index(m.Body)
		if err == nil {
			err = exactDecode(tree, reqType, w.strictJSON)
		}
		st := jsonState[Req]{m: &m}
		if err == nil {
			var perr error
			// The request type's own decoding (its fields' UnmarshalJSON
			// and UnmarshalText): a panic fails the call, reported.
			if st.req, err, perr = decodeBody[Req]([]byte(m.Body), w.strictJSON); perr != nil {
				return zero, g.fail(ctx, c, perr)
			}
			if err != nil {
				return zero, g.fail(ctx, c, &BodyError{InputID: m.MessageId, Type: typeName, Err: err, at: placeError(tree, reqType, err)})
			}
		}
		if err != nil {
			return zero, g.fail(ctx, c, &BodyError{InputID: m.MessageId, Type: typeName, Err: err})
		}
		// The user's selectors and check: a panic fails the call, reported.
		if perr := recovered(func() { err = w.prepare(&st, &c, typeName) }); perr != nil {
			err = perr
		}
		if err != nil {
			return zero, g.fail(ctx, c, err)
		}
		return do(ctx, g, c, func(ctx context.Context) (T, error) { return fn(ctx, st.req, m) }, w.hook)
	}
}

// prepare sets c's key and payload from st, and runs the check: the error
// to fail the call with, if any.
func (w *jsonWrapper[Req, T]) prepare(st *jsonState[Req], c *call, typeName string) error {
	var err error
	if c.key, err = w.key(st); err == nil && len(c.key.Value) == 0 {
		err = &KeyError{Source: typeName, Err: ErrNoKey}
	}
	if err != nil {
		return withInput(err, st.m.MessageId)
	}
	if w.check != nil {
		if err := w.check(st.req); err != nil {
			return &BodyError{InputID: st.m.MessageId, Type: typeName, Err: err, check: true}
		}
	}
	if w.payload != nil && !planted.On(planted.JSONIgnoresPayload) {
		c.validate = true
		if c.payload, err = payloadOf(w.payload(st)); err != nil {
			return withInput(err, st.m.MessageId)
		}
	}
	return nil
}

// jsonState is one call of a function made by WrapJSON: its message and
// the decoded request.
type jsonState[Req any] struct {
	m   *events.SQSMessage
	req Req
}

// jsonWrapper is what WrapJSON made of its arguments.
type jsonWrapper[Req, T any] struct {
	key, payload bound[jsonState[Req]]
	check        func(Req) error
	hook         func(context.Context, T, Report) (T, error)
	strict       bool
	strictJSON   bool
}

func newJSONWrapper[Req, T any](g *Guard, key Selector, nilFn bool, opts []Option) (*jsonWrapper[Req, T], error) {
	o, err := wrapOptions(g, nilFn, opts)
	if err != nil {
		return nil, err
	}
	switch {
	case o.payloadSel != nil:
		return nil, fmt.Errorf("WithPayload of a Selection is Do's: give WrapJSON a Selector")
	case o.inputID != nil:
		return nil, fmt.Errorf("WithInputID: WrapJSON names a message by its message id")
	}
	w := &jsonWrapper[Req, T]{strict: o.strict, strictJSON: o.strictJSON}
	if o.check != nil {
		f, ok := o.check.(func(Req) error)
		if !ok {
			return nil, fmt.Errorf("WithCheck: the check takes a %s, and the request type is %s", o.checkType, reflect.TypeFor[Req]())
		}
		w.check = f
	}
	body := func(s *jsonState[Req]) (string, error) { return s.m.Body, nil }
	views := []view[jsonState[Req]]{
		viewOf(func(s *jsonState[Req]) events.SQSMessage { return *s.m }),
		viewOf(func(s *jsonState[Req]) Req { return s.req }),
	}
	if w.key, err = compile(key, body, views, "key"); err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if o.payload != nil {
		if w.payload, err = compile(*o.payload, body, views, "payload"); err != nil {
			return nil, fmt.Errorf("WithPayload: %w", err)
		}
	}
	if w.hook, err = replayHook[T](o); err != nil {
		return nil, err
	}
	return w, nil
}

// withInput is err, a *KeyError, with its input id set.
func withInput(err error, id string) error {
	if ke, ok := err.(*KeyError); ok {
		ke.InputID = id
	}
	return err
}

// decodeBody decodes one JSON value from b into a new Req, refusing
// anything after it; strict refuses fields Req does not declare. A panic
// of Req's own decoding (a field's UnmarshalJSON or UnmarshalText) is
// returned as perr, a *failure.PanicError.
func decodeBody[Req any](b []byte, strict bool) (r Req, err, perr error) {
	defer func() {
		if v := recover(); v != nil {
			perr = &failure.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	if !strict {
		err := json.Unmarshal(b, &r)
		return r, err, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty body")
		}
		return r, err, nil
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return r, errors.New("data after the JSON value"), nil
	}
	return r, nil, nil
}

// BodyError reports a message body that [WrapJSON] could not take as its
// request type (see there), or that the check of [WithCheck] refused:
// nothing was claimed. Its message names the field, the kind of problem
// and a digest, never the value, or gives the check's own message (see
// WithCheck); Err is the decoder's or the check's.
type BodyError struct {
	InputID string // the SQS message id
	Type    string // the request type, e.g. "orders.Order"
	Err     error  // the decoder's or the check's error

	check bool   // Err is the check's
	at    string // the field whose own decoding returned Err, when known
}

func (e *BodyError) Error() string {
	what := detail(e.Err)
	if !e.check {
		what = describeDecode(e.Err, e.at)
	}
	return fmt.Sprintf("idempotency: body of message %s is not a valid %s: %s", e.InputID, e.Type, what)
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
