package idempotency

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// jsonBodied is an input of the caller's own type that carries a JSON body.
type jsonBodied interface{ JSONBody() []byte }

// bodyOf returns how to read the JSON body of an In, or false when an In
// carries none (see Selector).
func bodyOf[In any]() (func(*In) (string, error), bool) {
	switch any(new(In)).(type) {
	case *events.SQSMessage:
		return func(in *In) (string, error) { return any(in).(*events.SQSMessage).Body, nil }, true
	case *events.KinesisEventRecord:
		return func(in *In) (string, error) { return string(any(in).(*events.KinesisEventRecord).Kinesis.Data), nil }, true
	case *events.APIGatewayProxyRequest:
		return func(in *In) (string, error) {
			r := any(in).(*events.APIGatewayProxyRequest)
			return httpBody(r.Body, r.IsBase64Encoded)
		}, true
	case *events.APIGatewayV2HTTPRequest:
		return func(in *In) (string, error) {
			r := any(in).(*events.APIGatewayV2HTTPRequest)
			return httpBody(r.Body, r.IsBase64Encoded)
		}, true
	case *events.ALBTargetGroupRequest:
		return func(in *In) (string, error) {
			r := any(in).(*events.ALBTargetGroupRequest)
			return httpBody(r.Body, r.IsBase64Encoded)
		}, true
	case *events.LambdaFunctionURLRequest:
		return func(in *In) (string, error) {
			r := any(in).(*events.LambdaFunctionURLRequest)
			return httpBody(r.Body, r.IsBase64Encoded)
		}, true
	case *events.CloudWatchEvent:
		return func(in *In) (string, error) { return string(any(in).(*events.CloudWatchEvent).Detail), nil }, true
	case *events.SNSEventRecord:
		return func(in *In) (string, error) { return any(in).(*events.SNSEventRecord).SNS.Message, nil }, true
	case *[]byte:
		return func(in *In) (string, error) { return string(*any(in).(*[]byte)), nil }, true
	case *json.RawMessage:
		return func(in *In) (string, error) { return string(*any(in).(*json.RawMessage)), nil }, true
	case *string:
		return func(in *In) (string, error) { return *any(in).(*string), nil }, true
	case jsonBodied:
		return func(in *In) (string, error) { return string(any(in).(jsonBodied).JSONBody()), nil }, true
	}
	return nil, false
}

// httpBody is the body of an HTTP request as Lambda passes it.
func httpBody(body string, base64Encoded bool) (string, error) {
	if !base64Encoded {
		return body, nil
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return "", errors.New("the body is marked base64 and is not valid base64")
	}
	return string(b), nil
}

// inputIDOf returns the id that names an In in logs and errors (its
// message, request, event or record id), or nil for a type that has none.
func inputIDOf[In any]() func(*In) string {
	switch any(new(In)).(type) {
	case *events.SQSMessage:
		return func(in *In) string { return any(in).(*events.SQSMessage).MessageId }
	case *events.KinesisEventRecord:
		return func(in *In) string { return any(in).(*events.KinesisEventRecord).EventID }
	case *events.DynamoDBEventRecord:
		return func(in *In) string { return any(in).(*events.DynamoDBEventRecord).EventID }
	case *events.APIGatewayProxyRequest:
		return func(in *In) string { return any(in).(*events.APIGatewayProxyRequest).RequestContext.RequestID }
	case *events.APIGatewayV2HTTPRequest:
		return func(in *In) string { return any(in).(*events.APIGatewayV2HTTPRequest).RequestContext.RequestID }
	case *events.LambdaFunctionURLRequest:
		return func(in *In) string { return any(in).(*events.LambdaFunctionURLRequest).RequestContext.RequestID }
	case *events.CloudWatchEvent:
		return func(in *In) string { return any(in).(*events.CloudWatchEvent).ID }
	case *events.SNSEventRecord:
		return func(in *In) string { return any(in).(*events.SNSEventRecord).SNS.MessageID }
	}
	return nil
}

// bodyPaths returns the raw JSON values at the given paths of a body (each
// a list of object member names from the top), "" for a path that is
// absent. The body is scanned once, in place, without decoding it: key
// extraction runs for every record, and decoding a body into a map costs
// several times more. The rules of key material apply to what the paths
// read (see [jsonkey.Select]): a member on a path appears once, and a
// selected value is I-JSON with numbers of at most 100 characters.
func bodyPaths(b string, paths ...[]string) ([]string, error) {
	if strings.TrimSpace(b) == "null" {
		return nil, fmt.Errorf("%w: the body is null", ErrNoKey)
	}
	values, err := jsonkey.Select(b, paths)
	if err != nil {
		if errors.Is(err, jsonkey.ErrSyntax) || errors.Is(err, jsonkey.ErrTooDeep) {
			err = fmt.Errorf("the body is not a JSON object: %w", err)
		}
		return nil, err
	}
	if i := jsonkey.Space(b, 0); b[i] != '{' {
		return nil, fmt.Errorf("the body is not a JSON object but %s", kind(b[i]))
	}
	return values, nil
}

func kind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// bound is a Selector bound to the calls, of state S, of one wrapper.
type bound[S any] func(s *S) (Selection, error)

// view is a value a call of state S offers a SelectorFunc: its type, and
// how to get it.
type view[S any] struct {
	typ  reflect.Type
	bind func(typed any) (bound[S], bool) // a SelectorFunc of exactly typ, bound
	box  func(s *S) any
}

func viewOf[S, X any](get func(*S) X) view[S] {
	return view[S]{typ: reflect.TypeFor[X](),
		bind: func(typed any) (bound[S], bool) {
			f, ok := typed.(func(X) (Selection, error))
			if !ok {
				return nil, false
			}
			return func(s *S) (Selection, error) { return f(get(s)) }, true
		},
		box: func(s *S) any { return get(s) },
	}
}

// compile binds sel to the calls of state S: body reads a call's body (nil
// when the input has none), views are what a SelectorFunc may take, and
// role ("key" or "payload") names a function of the caller's in errors.
// Its errors say why sel cannot read such an input. A bound selector fails
// with a *KeyError whose InputID the caller sets.
func compile[S any](sel Selector, body func(*S) (string, error), views []view[S], role string) (bound[S], error) {
	switch {
	case sel.zero():
		return nil, fmt.Errorf("the zero Selector selects no %s", role)
	case sel.body != nil:
		if body == nil {
			return nil, fmt.Errorf("%s reads a JSON body, which %s does not carry: use SelectorFunc", sel.source, views[0].typ)
		}
		return func(s *S) (Selection, error) {
			b, err := body(s)
			if err == nil {
				var sel2 Selection
				if sel2, err = sel.body(b); err == nil {
					return sel2, nil
				}
			}
			return Selection{}, &KeyError{Source: sel.source, Err: err}
		}, nil
	case sel.fn != nil:
		return compileFunc(sel.fn, views, role)
	}
	parts := make([]bound[S], len(sel.first))
	for i, s := range sel.first {
		b, err := compile(s, body, views, role)
		if err != nil {
			return nil, fmt.Errorf("FirstOf: %w", err)
		}
		parts[i] = b
	}
	source := sel.source
	return func(s *S) (Selection, error) {
		var why []string
		var payload noKeyPayload // the first part's that carries one
		for _, part := range parts {
			k, err := part(s)
			if err == nil {
				return k, nil
			}
			if !errors.Is(err, ErrNoKey) {
				return Selection{}, err
			}
			if c, ok := errors.AsType[noKeyPayload](err); ok && payload == nil {
				payload = c
			}
			from, detail := "", err.Error()
			if ke, ok := errors.AsType[*KeyError](err); ok {
				from, detail = ke.Source+": ", ke.Err.Error()
			}
			if detail = strings.TrimPrefix(strings.TrimPrefix(detail, ErrNoKey.Error()), ": "); detail == "" {
				detail = "missing"
			}
			why = append(why, from+detail)
		}
		err := fmt.Errorf("%w (%s)", ErrNoKey, strings.Join(why, "; "))
		if payload != nil {
			err = &noKey{payload.NoKeyPayload(), err}
		}
		return Selection{}, &KeyError{Source: source, Err: err}
	}, nil
}

// compileFunc binds a SelectorFunc to the first view it takes: one of
// exactly its type, else one that implements its interface type.
func compileFunc[S any](f *funcSelector, views []view[S], role string) (bound[S], error) {
	source := f.in.String()
	wrapErr := func(err error) error {
		if _, ok := errors.AsType[*KeyError](err); ok {
			return err
		}
		return &KeyError{Source: source, Err: err}
	}
	for _, v := range views {
		if b, ok := v.bind(f.typed); ok {
			return func(s *S) (Selection, error) {
				k, err := b(s)
				if err != nil {
					return Selection{}, wrapErr(err)
				}
				return k, nil
			}, nil
		}
	}
	for _, v := range views {
		if f.in.Kind() == reflect.Interface && v.typ.Implements(f.in) {
			return func(s *S) (Selection, error) {
				k, err := f.boxed(v.box(s))
				if err != nil {
					return Selection{}, wrapErr(err)
				}
				return k, nil
			}, nil
		}
	}
	var have []string
	for _, v := range views {
		have = append(have, v.typ.String())
	}
	return nil, fmt.Errorf("the %s function of SelectorFunc takes %s, and the input is %s", role, f.in, strings.Join(have, " or "))
}
