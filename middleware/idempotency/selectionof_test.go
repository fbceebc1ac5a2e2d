package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// badText is a TextMarshaler whose text is not valid UTF-8.
type badText struct{}

func (badText) MarshalText() ([]byte, error) { return []byte("k-\xff"), nil }

// TestSelectionOfRefusesInvalidUTF8: a value whose strings json.Marshal
// would write with U+FFFD for invalid UTF-8 (a string, a map key, a struct
// field, a TextMarshaler's text) is refused, as Selection's rules say,
// rather than replaced: before, "\xff\x01", "\xfe\x01" and "\ufffd\x01"
// had one record id in every format, so a second key got the first's
// stored result. A U+FFFD of the value's own, a json.RawMessage that
// spells the escape \ufffd and a []byte (base64) are taken.
func TestSelectionOfRefusesInvalidUTF8(t *testing.T) {
	type doc struct {
		ID   string `json:"id"`
		Skip string `json:"-"`
	}
	refused := map[string]any{
		"string":           "\xff\x01",
		"another string":   "\xfe\x01",
		"map key":          map[string]int{"k-\xff": 1},
		"struct field":     doc{ID: "k-\xfe"},
		"pointer in slice": []*doc{{ID: "a"}, {ID: "k-\xc0"}},
		"TextMarshaler":    []badText{{}},
		"any":              map[string]any{"a": []any{"k-\xff\ufffd"}},
	}
	for name, v := range refused {
		_, err := idempotency.SelectionOf("k", v)
		if !errors.Is(err, jsonkey.ErrInvalidUTF8) {
			t.Errorf("%s: %v, want a refusal wrapping jsonkey.ErrInvalidUTF8", name, err)
		} else if strings.Contains(err.Error(), "k-") {
			t.Errorf("%s: the error quotes the value: %v", name, err)
		}
	}
	taken := map[string]any{
		"U+FFFD":                     "\ufffd\x01",
		"a RawMessage's \\ufffd":     json.RawMessage(`"\ufffd"`),
		"bytes":                      []byte("\xff\xfe"),
		"a field json.Marshal skips": doc{ID: "\ufffd", Skip: "\xff"},
	}
	for name, v := range taken {
		if _, err := idempotency.SelectionOf("k", v); err != nil {
			t.Errorf("%s: %v, want it taken", name, err)
		}
	}

	// Through Wrap: the record fails with a *KeyError, and fn does not run.
	for _, f := range allFormats {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "fn", Format: f, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		k := idempotency.SelectorFunc(func(m events.SQSMessage) (idempotency.Selection, error) {
			return idempotency.SelectionOf("partition", string(m.MessageAttributes["k"].BinaryValue))
		})
		h := idempotency.Wrap(g, k, func(context.Context, events.SQSMessage) (int, error) { ran++; return 1, nil })
		for i, key := range []string{"\xff\x01", "\xfe\x01"} {
			m := events.SQSMessage{MessageId: "m", MessageAttributes: map[string]events.SQSMessageAttribute{"k": {BinaryValue: []byte(key), DataType: "Binary"}}}
			_, err := h(context.Background(), m)
			if ke, ok := errors.AsType[*idempotency.KeyError](err); !ok || !errors.Is(ke, jsonkey.ErrInvalidUTF8) {
				t.Errorf("%v, key %d: %v, want a *KeyError for invalid UTF-8", f, i, err)
			}
		}
		if ran != 0 {
			t.Errorf("%v: fn ran %d times for keys it cannot tell apart", f, ran)
		}
	}
}
