package idempotency

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
)

// bodyPaths returns the raw JSON values at the given paths of a message body
// (each a list of object member names from the top), "" for a path that is
// absent. The body is scanned once, in place, without decoding it: key
// extraction runs for every record, and decoding a body into a map costs
// several times more. The rules of key material apply to what the paths
// read (see [jsonkey.Select]): a member on a path appears once, and a
// selected value is I-JSON with numbers of at most 100 characters.
func bodyPaths(m events.SQSMessage, source string, paths ...[]string) ([]string, error) {
	b := m.Body
	if strings.TrimSpace(b) == "null" {
		return nil, &KeyError{MessageID: m.MessageId, Source: source,
			Err: fmt.Errorf("%w: message body is null", ErrNoKey)}
	}
	values, err := jsonkey.Select(b, paths)
	if err != nil {
		if errors.Is(err, jsonkey.ErrSyntax) || errors.Is(err, jsonkey.ErrTooDeep) {
			err = fmt.Errorf("message body is not a JSON object: %w", err)
		}
		return nil, &KeyError{MessageID: m.MessageId, Source: source, Err: err}
	}
	if i := jsonkey.Space(b, 0); b[i] != '{' {
		return nil, &KeyError{MessageID: m.MessageId, Source: source,
			Err: fmt.Errorf("message body is not a JSON object but %s", kind(b[i]))}
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
