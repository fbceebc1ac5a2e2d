package idempotency

import (
	"context"
	"fmt"
	"reflect"
)

// An Option configures one function made by [Wrap] or [WrapJSON], or one
// call of [Do]. One that does not fit (a hook for another result type)
// makes Wrap and WrapJSON panic when the function is made; Do returns it.
type Option struct {
	name  string // the option, for errors
	apply func(*options)
}

// options are the settings of one wrapper, or one call of Do.
type options struct {
	payload     *Selector  // WithPayload(Selector)
	payloadSel  *Selection // WithPayload(Selection)
	hook        any        // func(context.Context, T, Report) (T, error)
	hookType    reflect.Type
	inputID     any // func(In) string
	inputIDType reflect.Type
	strict      bool
	check       any // func(Req) error (WrapJSON)
	checkType   reflect.Type
	strictJSON  bool // WrapJSON
	given       []string
}

// WithPayload turns payload validation on: the payload's digest is stored
// with the record, and a later call with the same key and another payload
// fails with a [*PayloadMismatchError] instead of returning the other
// payload's result. For Wrap and WrapJSON it is a [Selector]; for Do, the
// [Selection] itself. Pass the part that defines the work, not a whole
// body, whose timestamps would make every re-send a mismatch. A
// selection that the body selectors or package jmespath take as no key (an
// absent field, null, "", in jmespath an empty array or object) is a
// payload like any other, hashed as Powertools hashes it (an absent field
// as null).
func WithPayload[P Selector | Selection](p P) Option {
	return Option{name: "WithPayload", apply: func(o *options) {
		switch p := any(p).(type) {
		case Selector:
			o.payload = &p
		case Selection:
			o.payloadSel = &p
		}
	}}
}

// OnReplay sets a hook called on every result a call returns from a record
// rather than from its own run, as Powertools' responseHook: it gets the
// result and the call's [Report] so far, and returns the result the call
// returns instead; an error fails the call. T must be the operation's
// result type; the hook must be safe for concurrent use.
func OnReplay[T any](hook func(ctx context.Context, result T, r Report) (T, error)) Option {
	return Option{name: "OnReplay", apply: func(o *options) {
		o.hook, o.hookType = hook, reflect.TypeFor[T]()
	}}
}

// WithInputID sets how an input is named in log lines, errors and
// [Report.InputID] (Wrap names the events that carry an id itself). In
// must be the wrapped function's input type; id must not return content.
func WithInputID[In any](id func(In) string) Option {
	return Option{name: "WithInputID", apply: func(o *options) {
		o.inputID, o.inputIDType = id, reflect.TypeFor[In]()
	}}
}

// Strict turns strict mode on for these calls, as [Config.Strict] does for
// every call of the guard.
func Strict() Option {
	return Option{name: "Strict", apply: func(o *options) { o.strict = true }}
}

// WithCheck sets, for [WrapJSON], a check of each decoded request, after
// its key is taken: a request it refuses fails like a body that does not
// decode, with a [*BodyError], before anything is claimed. Req must be
// WrapJSON's request type. The check's error message is logged as it is
// (a check writes it to be read): it must name the field and the rule,
// never quote the request's values, as a [SelectorFunc]'s must not.
func WithCheck[Req any](check func(Req) error) Option {
	return Option{name: "WithCheck", apply: func(o *options) {
		o.check, o.checkType = check, reflect.TypeFor[Req]()
	}}
}

// DisallowUnknownFields makes [WrapJSON] fail a body that has a field its
// request type does not declare, anywhere in it, as
// [encoding/json.Decoder.DisallowUnknownFields] does.
func DisallowUnknownFields() Option {
	return Option{name: "DisallowUnknownFields", apply: func(o *options) { o.strictJSON = true }}
}

// collect applies opts, failing for a zero Option or a nil function.
func collect(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt.apply == nil {
			return o, fmt.Errorf("a zero Option")
		}
		opt.apply(&o)
		o.given = append(o.given, opt.name)
	}
	switch {
	case o.hookType != nil && reflect.ValueOf(o.hook).IsNil():
		return o, fmt.Errorf("OnReplay: nil hook")
	case o.inputIDType != nil && reflect.ValueOf(o.inputID).IsNil():
		return o, fmt.Errorf("WithInputID: nil function")
	case o.checkType != nil && reflect.ValueOf(o.check).IsNil():
		return o, fmt.Errorf("WithCheck: nil function")
	}
	return o, nil
}

// replayHook returns the hook of o for result type T: nil without one, an
// error for a hook of another type.
func replayHook[T any](o options) (func(context.Context, T, Report) (T, error), error) {
	if o.hook == nil {
		return nil, nil
	}
	h, ok := o.hook.(func(context.Context, T, Report) (T, error))
	if !ok {
		return nil, fmt.Errorf("OnReplay: the hook takes a %s, and the operation returns %s", o.hookType, reflect.TypeFor[T]())
	}
	return h, nil
}

// inputIDFunc returns the input id function of o for In: the option's, else
// the input type's own (inputIDOf), else nil.
func inputIDFunc[In any](o options) (func(*In) string, error) {
	if o.inputID == nil {
		return inputIDOf[In](), nil
	}
	f, ok := o.inputID.(func(In) string)
	if !ok {
		return nil, fmt.Errorf("WithInputID: the function takes a %s, and the input is %s", o.inputIDType, reflect.TypeFor[In]())
	}
	return func(in *In) string { return f(*in) }, nil
}
