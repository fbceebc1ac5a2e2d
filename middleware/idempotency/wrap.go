package idempotency

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// Wrap returns fn made idempotent per input: for each input, key takes its
// key, and fn runs at most once for it; later inputs with the same key get
// the stored result without running fn. The result is stored as JSON, so
// T must survive a JSON round trip (a string that is not UTF-8 is stored,
// and returned by every call, the first included, with U+FFFD for its
// invalid bytes). In is any input: an SQS message, a
// stream record, an API Gateway request, a type of your own. An input
// without a key fails with a [*KeyError] and fn does not run.
//
// Wrap panics, when it is called, if g or fn is nil, if key or an option
// cannot apply to In or T, or if an option is given twice.
func Wrap[In, T any](g *Guard, key Selector, fn func(context.Context, In) (T, error), opts ...Option) func(context.Context, In) (T, error) {
	w, err := newWrapper[In, T](g, key, fn == nil, opts)
	if err != nil {
		panic("idempotency: Wrap: " + err.Error())
	}
	return func(ctx context.Context, in In) (T, error) {
		st := &inputState[In]{in: in, body: w.body} // one allocation: the input and what is read of it
		var c call
		var err error
		// The user's selectors: a panic fails the call, reported.
		if perr := recovered(func() { err = w.call(st, &c) }); perr != nil {
			err = perr
		}
		if err != nil {
			var zero T
			return zero, g.fail(ctx, c, err)
		}
		return do(ctx, g, c, func(ctx context.Context) (T, error) { return fn(ctx, st.in) }, w.hook)
	}
}

// Do runs fn at most once for key and returns its result; later calls with
// the same key return the stored result without calling fn: for code that
// holds its key (see [Wrap] for the result). After fn fails or panics the
// claim is released, so that a retry can run fn, unless fn returned after
// its lease ended (see [OutcomeFailed]). An empty key fails with a
// [*KeyError] wrapping [ErrNoKey]. Do takes WithPayload of a Selection,
// OnReplay and Strict; another option fails the call, and nothing is
// claimed.
func Do[T any](ctx context.Context, g *Guard, key Selection, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	var zero T
	c := call{key: key, source: "Do"}
	if len(opts) == 0 {
		return do(ctx, g, c, fn, nil)
	}
	o, err := collect(opts)
	if err == nil && (o.payload != nil || o.inputID != nil || o.check != nil || o.strictJSON) {
		err = fmt.Errorf("options %v: Do takes WithPayload of a Selection, OnReplay and Strict", o.given)
	}
	hook, herr := replayHook[T](o)
	if err == nil {
		err = herr
	}
	if err != nil {
		return zero, fmt.Errorf("idempotency: Do: %w", err)
	}
	c.strict = o.strict
	if o.payloadSel != nil {
		c.payload, c.validate = *o.payloadSel, true
	}
	return do(ctx, g, c, fn, hook)
}

// Select returns what sel takes from in, as a function made by [Wrap]
// takes its key: for tools that compute an input's record id (with
// [Guard.ID]) and for tests of a selector. It fails as Wrap's selection
// fails an input, with a [*KeyError], or, for a selector that cannot read
// an In, with the reason Wrap would panic. It does not hash: a selection
// the guard's [Format] cannot hash (a number a double cannot hold exactly,
// see [Format.Hash]) is returned, and fails in [Guard.ID], as Wrap fails
// that input.
func Select[In any](sel Selector, in In) (Selection, error) {
	w, err := newWrapper[In, struct{}](&Guard{}, sel, false, nil)
	if err != nil {
		return Selection{}, fmt.Errorf("idempotency: Select: %w", err)
	}
	var c call
	err = w.call(&inputState[In]{in: in, body: w.body}, &c)
	return c.key, err
}

// wrapper is what Wrap made of its arguments: the selectors bound to its
// input, the input's id, the replay hook.
type wrapper[In, T any] struct {
	key, payload bound[inputState[In]]
	body         func(*In) (string, error)
	inputID      func(*In) string
	hook         func(context.Context, T, Report) (T, error)
	strict       bool
}

// inputState is one call of a function made by Wrap: its input, and its
// body once read.
type inputState[In any] struct {
	in   In
	body func(*In) (string, error)
	read bool
	text string
	err  error
}

// readBody is the call's body, read once.
func (s *inputState[In]) readBody() (string, error) {
	if !s.read {
		s.text, s.err = s.body(&s.in)
		s.read = true
	}
	return s.text, s.err
}

func newWrapper[In, T any](g *Guard, key Selector, nilFn bool, opts []Option) (*wrapper[In, T], error) {
	o, err := wrapOptions(g, nilFn, opts)
	if err != nil {
		return nil, err
	}
	if o.check != nil || o.strictJSON {
		return nil, fmt.Errorf("WithCheck and DisallowUnknownFields are WrapJSON's options")
	}
	if o.payloadSel != nil {
		return nil, fmt.Errorf("WithPayload of a Selection is Do's: give Wrap a Selector")
	}
	w := &wrapper[In, T]{strict: o.strict}
	var hasBody bool
	if w.body, hasBody = bodyOf[In](); !hasBody {
		w.body = nil
	}
	views := []view[inputState[In]]{viewOf(func(s *inputState[In]) In { return s.in })}
	var body func(*inputState[In]) (string, error)
	if hasBody {
		body = (*inputState[In]).readBody
	}
	if w.key, err = compile(key, body, views, "key"); err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if o.payload != nil {
		if w.payload, err = compile(*o.payload, body, views, "payload"); err != nil {
			return nil, fmt.Errorf("WithPayload: %w", err)
		}
	}
	if w.inputID, err = inputIDFunc[In](o); err != nil {
		return nil, err
	}
	if w.hook, err = replayHook[T](o); err != nil {
		return nil, err
	}
	return w, nil
}

// once fails for an option given twice.
// wrapOptions checks what every wrapper needs (a guard, an operation) and
// collects its options, each given at most once.
func wrapOptions(g *Guard, nilFn bool, opts []Option) (options, error) {
	switch {
	case g == nil:
		return options{}, fmt.Errorf("nil *Guard")
	case nilFn:
		return options{}, fmt.Errorf("nil operation")
	}
	o, err := collect(opts)
	if err != nil {
		return options{}, err
	}
	return o, once(o.given)
}

func once(given []string) error {
	seen := map[string]bool{}
	for _, n := range given {
		if seen[n] {
			return fmt.Errorf("option %s given twice", n)
		}
		seen[n] = true
	}
	return nil
}

// call fills c with the key and payload of one input; on an error (or a
// panic of the user's selectors), c is the call to report, its input id
// set once known.
func (w *wrapper[In, T]) call(st *inputState[In], c *call) error {
	*c = call{source: "the key", strict: w.strict}
	if w.inputID != nil {
		c.inputID = w.inputID(&st.in)
	}
	if m, ok := any(&st.in).(*events.SQSMessage); ok {
		c.group = messageGroup(m)
	}
	var err error
	if c.key, err = w.key(st); err == nil && len(c.key.Value) == 0 {
		err = &KeyError{Source: "the selector", Err: ErrNoKey}
	}
	if err == nil && w.payload != nil {
		c.validate = true
		c.payload, err = payloadOf(w.payload(st))
	}
	if ke, ok := err.(*KeyError); ok {
		ke.InputID = c.inputID
	}
	return err
}

// messageGroup is m's MessageGroupId: what scopes its record id under
// TenancyMessageGroup, for every wrapper that takes an SQS message.
func messageGroup(m *events.SQSMessage) string { return m.Attributes["MessageGroupId"] }

// payloadError is a payload selector's error, said to be about the payload.
func payloadError(err error) error {
	if ke, ok := err.(*KeyError); ok {
		return &KeyError{Source: ke.Source, Err: fmt.Errorf("payload for validation: %w", ke.Err)}
	}
	return err
}

// call is one request to run an operation.
type call struct {
	key      Selection
	payload  Selection
	source   string // where the key came from, for a KeyError
	validate bool
	strict   bool // this call is strict, whatever Config.Strict says
	inputID  string
	group    string // an SQS message's MessageGroupId (see TenancyMessageGroup)
}

// keySource names a call's key in a KeyError: its selector, else where it
// came from.
func keySource(c call) string {
	if c.key.Selector != "" {
		return c.key.Selector
	}
	return c.source
}

func do[T any](ctx context.Context, g *Guard, c call, fn func(context.Context) (T, error), hook func(context.Context, T, Report) (T, error)) (T, error) {
	var zero T
	start := g.cfg.Now()
	if len(c.key.Value) == 0 {
		return zero, g.fail(ctx, c, &KeyError{InputID: c.inputID, Source: c.source, Err: ErrNoKey})
	}
	scope := g.scope(ctx, c)
	id, err := g.scopedID(scope, c.key)
	var validation string
	if err == nil && c.validate {
		if validation, err = g.cfg.Format.Hash(c.payload); err != nil {
			err = fmt.Errorf("payload for validation: %w", err)
		}
	}
	if err != nil {
		if ke, ok := err.(*KeyError); ok {
			ke.InputID = c.inputID
			return zero, g.fail(ctx, c, ke)
		}
		return zero, g.fail(ctx, c, &KeyError{InputID: c.inputID, Source: keySource(c), Err: err})
	}
	op := func(ctx context.Context) (any, error) { return fn(ctx) }
	out := g.run(ctx, id, validation, g.cfg.Strict || c.strict, op)
	out.ev.ID, out.ev.InputID, out.ev.Tenant = id, c.inputID, reportedTenant(ctx)
	replay := out.ev.Err == nil && (out.ev.Outcome == OutcomeReplayed || out.ev.Outcome == OutcomeDoubleRun)
	var v T
	if out.ev.Err == nil {
		if err := decode(out, &v); err != nil {
			out.ev.Outcome, out.ev.Err = OutcomeFailed, fmt.Errorf("idempotency: decode stored result of %s into %T: %w", id, v, &quietError{describeDecode(err, ""), err})
		}
	}
	if replay && hook != nil && out.ev.Err == nil {
		var err error
		if perr := recovered(func() { v, err = hook(ctx, v, out.ev) }); perr != nil {
			v, err = *new(T), perr // reported as its error is: one line and one Report a call
		}
		if err != nil {
			out.ev.Outcome, out.ev.Err = OutcomeFailed, fmt.Errorf("idempotency: replay hook for %s: %w", id, err)
		}
	}
	out.ev.Duration = g.cfg.Now().Sub(start)
	g.report(ctx, out.ev)
	if out.ev.Err != nil {
		return zero, &reported{out.ev.Err}
	}
	return v, nil
}

// quietError is err told without quoting the value it is about (a stored
// result, which may be sealed): errors reach the logs.
type quietError struct {
	msg string
	err error
}

func (e *quietError) Error() string { return e.msg }
func (e *quietError) Unwrap() error { return e.err }

// decode sets *v to the call's result: the value the operation returned
// when it ran in this call, else the stored result (the zero value when
// none was stored).
func decode[T any](out outcome, v *T) error {
	if r, ok := out.val.(T); ok && out.ev.Ran {
		*v = r
		return nil
	}
	if len(out.data) == 0 { // completed without a stored result
		return nil
	}
	return json.Unmarshal(out.data, v)
}
