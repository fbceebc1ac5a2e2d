package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The sentinels stand for a customer's text in a message: no error and no
// log line may hold one. They are longer than the 8 bytes of a value that
// internal/redact shows.
const (
	textSentinel   = "SENTINEL-patient-7f3a9c"
	numberSentinel = "987654321098765432109876543"
)

// quoting is a type whose own decoding quotes the value in its error, as
// time.Time, netip.Addr and big.Int do: WrapJSON must not pass it on.
type quoting struct{}

func (*quoting) UnmarshalJSON(b []byte) error { return fmt.Errorf("quoting: cannot use %s", b) }

type quotingText struct{}

func (*quotingText) UnmarshalText(b []byte) error { return fmt.Errorf("quotingText: cannot use %q", b) }

// leakReq has a field of every kind of type WrapJSON decodes into: each
// refuses some JSON values, with its own error.
type leakReq struct {
	Key     json.RawMessage           `json:"key"`
	Int     int                       `json:"int"`
	Uint8   uint8                     `json:"uint8"`
	Float   float64                   `json:"float"`
	Float32 float32                   `json:"float32"`
	Str     string                    `json:"str"`
	Bool    bool                      `json:"bool"`
	Number  json.Number               `json:"number"`
	Bytes   []byte                    `json:"bytes"`
	IntMap  map[int]string            `json:"int_map"`
	Any     any                       `json:"any"`
	AnyMap  map[string]any            `json:"any_map"`
	Addr    netip.Addr                `json:"addr"`
	Prefix  netip.Prefix              `json:"prefix"`
	BigInt  *big.Int                  `json:"big_int"`
	BigF    *big.Float                `json:"big_float"`
	Time    time.Time                 `json:"time"`
	IntStr  int64                     `json:"int_str,string"`
	FltStr  float64                   `json:"float_str,string"`
	BoolStr bool                      `json:"bool_str,string"`
	Quoting quoting                   `json:"quoting"`
	QText   quotingText               `json:"quoting_text"`
	Array   [2]int                    `json:"array"`
	Nested  struct{ Inner []float64 } `json:"nested"`
	Ptr     *struct {
		Addr netip.Addr `json:"addr"`
	} `json:"ptr"`
}

// leakValues are JSON values that hold a sentinel, of every JSON kind and
// of the shapes the field types above parse (numbers, dates, addresses,
// base64), some of them broken.
var leakValues = []string{
	`"` + textSentinel + `"`, `"0` + textSentinel + `"`, `"1.2.3.` + textSentinel + `"`, `"2026-11-29T` + textSentinel + `"`,
	`"` + textSentinel + `/24"`, `"` + numberSentinel + `"`, `"0x` + numberSentinel + `"`, `"` + numberSentinel + `.5"`,
	`"` + strings.ReplaceAll(textSentinel, "-", "+") + `="`, `"\ud800` + textSentinel + `"`, `"` + textSentinel + `\udfff"`,
	numberSentinel, "-" + numberSentinel, numberSentinel + ".5", "0." + numberSentinel + numberSentinel, numberSentinel + "e999",
	strings.Repeat(numberSentinel, 5), `{"` + textSentinel + `":1}`, `{"` + textSentinel + `":1,"` + textSentinel + `":2}`,
	`["` + textSentinel + `"]`, `[` + numberSentinel + `]`, `true`, `{}`, `[]`, `null`, `{"inner":"` + textSentinel + `"}`,
	`{"addr":"` + textSentinel + `"}`, `{"` + numberSentinel + `":"x"}`, `{"0` + numberSentinel + `":"x"}`,
}

// leakBodies plants each value of leakValues in every field of leakReq, as
// a member name, and cut short, beside a valid key.
func leakBodies() []string {
	var bodies []string
	fields := []string{"key", "int", "uint8", "float", "float32", "str", "bool", "number", "bytes", "int_map", "any", "any_map",
		"addr", "prefix", "big_int", "big_float", "time", "int_str", "float_str", "bool_str", "quoting", "quoting_text",
		"array", "nested", "ptr", textSentinel, "KEY", "Int", "STR"}
	for _, f := range fields {
		for _, v := range leakValues {
			body := `{"key":"k-` + f + `","` + f + `":` + v + `}`
			if f == "key" {
				body = `{"key":` + v + `}`
			}
			bodies = append(bodies, body, body[:len(body)-len(v)/2-1])
		}
	}
	return append(bodies, textSentinel, `"`+textSentinel+`"`, numberSentinel, `{"key":"`+textSentinel)
}

// TestNoMessageContentInErrors (issue 15 #5 and item 5): every body of
// leakBodies goes through every surface of this package that reads message
// content (each key source, WrapJSON with every field type, lenient and
// strict, every format); no error, and no line of the guard's log, holds
// a sentinel. A body that fails is refused by name: a field path, a kind,
// an offset, a digest.
func TestNoMessageContentInErrors(t *testing.T) {
	var logs logCapture
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ok := func(context.Context, events.SQSMessage) (int, error) { return 1, nil }
	typed := func(context.Context, leakReq, events.SQSMessage) (int, error) { return 1, nil }
	payload := func(q leakReq) (idempotency.Selection, error) { return idempotency.SelectionOf("payload", q) }
	var surfaces []func(events.SQSMessage) error
	for _, f := range allFormats {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: f, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		wrap := func(key idempotency.Selector, opts ...idempotency.Option) func(events.SQSMessage) error {
			h := idempotency.Wrap(g, key, ok, opts...)
			return func(m events.SQSMessage) error { _, err := h(t.Context(), m); return err }
		}
		typedSurface := func(body jsonBody[leakReq]) func(events.SQSMessage) error {
			h := wrapJSON(g, body, typed)
			return func(m events.SQSMessage) error { _, err := h(t.Context(), m); return err }
		}
		surfaces = append(surfaces,
			wrap(idempotency.BodyField("key")),
			wrap(idempotency.BodyField("nested", "inner")),
			wrap(idempotency.BodySubset("key", "int", "any_map")),
			wrap(idempotency.FirstOf(idempotency.BodyField("absent"), idempotency.BodySubset("str")), idempotency.WithPayload(idempotency.BodySubset("float", "any"))),
			typedSurface(jsonBody[leakReq]{Key: idempotency.BodyField("key")}),
			typedSurface(jsonBody[leakReq]{Key: idempotency.BodyField("key"), PayloadFunc: payload, DisallowUnknownFields: true}),
			func(m events.SQSMessage) error {
				_, err := f.Hash(idempotency.Selection{Selector: "s", Value: []byte(m.Body)})
				return err
			},
			func(m events.SQSMessage) error {
				k, err := idempotency.SelectionOf("s", json.RawMessage(m.Body))
				if err == nil {
					_, err = g.ID(k)
				}
				return err
			},
		)
	}
	bodies := leakBodies()
	failures, kinds := 0, map[string]int{}
	for _, body := range bodies {
		for si, surface := range surfaces {
			err := surface(events.SQSMessage{MessageId: "m-1", Body: body})
			if err == nil {
				continue
			}
			failures++
			msg := err.Error()
			if strings.Contains(msg, textSentinel) || strings.Contains(msg, numberSentinel) {
				t.Errorf("surface %d, body %.80s: the error quotes the message: %s", si, body, msg)
			}
			var be *idempotency.BodyError
			var ke *idempotency.KeyError
			switch {
			case errors.As(err, &be):
				kinds["*BodyError"]++
			case errors.As(err, &ke):
				kinds["*KeyError"]++
			default:
				kinds[fmt.Sprintf("%T", err)]++
			}
		}
	}
	logs.mu.Lock()
	all := logs.buf.String()
	logs.mu.Unlock()
	if strings.Contains(all, textSentinel) || strings.Contains(all, numberSentinel) {
		i := max(strings.Index(all, textSentinel), strings.Index(all, numberSentinel))
		t.Errorf("a log line quotes the message: %s", all[max(0, i-300):min(len(all), i+100)])
	}
	t.Logf("%d bodies × %d surfaces: %d errors (%v), none quoting the message", len(bodies), len(surfaces), failures, kinds)
	if failures < len(bodies) {
		t.Errorf("only %d errors: the bodies should fail on most surfaces", failures)
	}
}
