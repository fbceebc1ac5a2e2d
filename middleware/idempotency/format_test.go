package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// The worked examples: Powertools' own ids for a string key and an object
// selection (python3: hashlib.md5(json.dumps(v, sort_keys=True).encode());
// node: Powertools TypeScript's generateHash), and the native digest of raw
// material, in its own domain (coreutils: printf 'raw\0"abc"' | sha256sum).
func TestFormatWorkedExamples(t *testing.T) {
	const uuid = `"059f36b4-87a3-44ab-83d2-661975830a7d"`
	const order = `{"user_id": "u1", "product_id": "p1", "name": "Zo\u00eb", "amount": 10.5}`
	for _, tc := range []struct {
		format idempotency.Format
		value  string
		want   string
	}{
		{idempotency.FormatPowertoolsPython, uuid, "068044a7927cd88524adc22442efbed9"},
		{idempotency.FormatPowertoolsPython, order, "69754659cfc2f585d1b60d2ddf8354d6"},
		{idempotency.FormatPowertoolsPython, `{"amount":10.5,"name":"Zoë","product_id":"p1","user_id":"u1"}`, "69754659cfc2f585d1b60d2ddf8354d6"},
		{idempotency.FormatPowertoolsTypeScript, uuid, "BoBEp5J82IUkrcIkQu++2Q=="},
		{idempotency.FormatNative, `"abc"`, "4f9661069e10feb41ceb110d448e14273938fa93a357a994fa537d5d6073a2fc"},
	} {
		got, err := tc.format.Hash(idempotency.Selection{Selector: "any", Value: []byte(tc.value)})
		if tc.format == idempotency.FormatNative {
			got, err = tc.format.Hash(idempotency.Selection{Value: []byte(tc.value)}) // raw material, as given to Do
		}
		if err != nil || got != tc.want {
			t.Errorf("%v of %s = %q, %v; want %q", tc.format, tc.value, got, err, tc.want)
		}
	}
}

// TestFormatID checks the whole record id of a message for each format, as
// the guard makes it: "{Namespace}#{digest}".
func TestFormatID(t *testing.T) {
	m := events.SQSMessage{MessageId: "m-1", Body: `{"idempotency_key":"059f36b4-87a3-44ab-83d2-661975830a7d"}`}
	k, err := idempotency.Select(idempotency.BodyField("idempotency_key"), m)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format idempotency.Format
		want   string
	}{
		{idempotency.FormatPowertoolsPython, "orders#068044a7927cd88524adc22442efbed9"},
		{idempotency.FormatPowertoolsTypeScript, "orders#BoBEp5J82IUkrcIkQu++2Q=="},
	} {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "orders", Format: tc.format})
		if err != nil {
			t.Fatal(err)
		}
		if id, err := g.ID(k); err != nil || id != tc.want {
			t.Errorf("%v: KeyID = %q, %v; want %q", tc.format, id, err, tc.want)
		}
	}
}

// TestFormatSpelling checks the spellings that tell the runtimes apart.
func TestFormatSpelling(t *testing.T) {
	for _, tc := range []struct {
		value, python, typescript string
	}{
		{`10`, `10`, `10`},
		{`10.0`, `10.0`, `10`},
		{`-0`, `0`, `0`},
		{`-0.0`, `-0.0`, `0`},
		{`1e-5`, `1e-05`, `0.00001`},
		{`1E16`, `1e+16`, `10000000000000000`},
		{`1e21`, `1e+21`, `1e+21`},
		{`1e-7`, `1e-07`, `1e-7`},
		{`1e400`, `Infinity`, `null`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`, `1.2345678901234568e+29`},
		{`"\u007f\u00e9\ud83d\ude00"`, `"\u007f\u00e9\ud83d\ude00"`, "\"\x7fé😀\""},
		{`{"b":1,"B":2,"a":[true,null,{"Z":1,"y":2}],"10":0,"9":0}`,
			`{"10": 0, "9": 0, "B": 2, "a": [true, null, {"Z": 1, "y": 2}], "b": 1}`,
			`{"9":0,"10":0,"a":[true,null,{"y":2,"Z":1}],"b":1,"B":2}`},
		{`{"__proto__":1,"x":2}`, `{"__proto__": 1, "x": 2}`, `{"x":2}`},
	} {
		k := idempotency.Selection{Selector: "test", Value: []byte(tc.value)}
		if got, err := idempotency.Spell(idempotency.FormatPowertoolsPython, k); err != nil || string(got) != tc.python {
			t.Errorf("Python spelling of %s = %s, %v; want %s", tc.value, got, err, tc.python)
		}
		if got, err := idempotency.Spell(idempotency.FormatPowertoolsTypeScript, k); err != nil || string(got) != tc.typescript {
			t.Errorf("TypeScript spelling of %s = %s, %v; want %s", tc.value, got, err, tc.typescript)
		}
	}
}

// TestFormatDoMaterial: Do's material is hashed as given by the native
// format; a Powertools format needs it to be JSON, and fails the call with a
// *KeyError (never running the operation) when it is not.
func TestFormatDoMaterial(t *testing.T) {
	for _, tc := range []struct {
		format idempotency.Format
		ok     bool
	}{{idempotency.FormatNative, true}, {idempotency.FormatPowertoolsPython, false}, {idempotency.FormatPowertoolsTypeScript, false}} {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: tc.format, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		_, err = idempotency.Do(t.Context(), g, idempotency.Raw([]byte("order-1")), func(context.Context) (int, error) { ran = true; return 1, nil })
		var ke *idempotency.KeyError
		id, idErr := g.ID(idempotency.Raw([]byte("order-1")))
		if tc.ok != (err == nil) || tc.ok != ran || (!tc.ok && !errors.As(err, &ke)) || (idErr == nil) != tc.ok {
			t.Errorf("%v: Do of non-JSON material: ran %v, %v; ID %q, %v", tc.format, ran, err, id, idErr)
		}
	}
}
