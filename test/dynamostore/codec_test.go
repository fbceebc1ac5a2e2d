package dynamostore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

func null() types.AttributeValue { return &types.AttributeValueMemberNULL{Value: true} }
func boolean(b bool) types.AttributeValue {
	return &types.AttributeValueMemberBOOL{Value: b}
}
func num(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func list(v ...types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: v}
}
func obj(v map[string]types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: v}
}

// results are JSON results with the native value the AWS SDK for
// JavaScript's marshall makes of them (what Powertools for TypeScript stores).
var results = []struct {
	name   string
	json   string
	native types.AttributeValue
}{
	{"object", `{"document_id":"d1","score":0.75,"tokens":[1,2],"final":true,"model":null,"Zoë":{"é":"\u2603"}}`,
		obj(map[string]types.AttributeValue{"document_id": s("d1"), "score": num("0.75"), "tokens": list(num("1"), num("2")),
			"final": boolean(true), "model": null(), "Zoë": obj(map[string]types.AttributeValue{"é": s("☃")})})},
	{"string of digits", `"123"`, s("123")},
	{"number", `1717`, num("1717")},
	{"string that looks like JSON", `"{\"document_id\":\"d1\"}"`, s(`{"document_id":"d1"}`)},
	{"null", `null`, null()},
	{"empty string", `""`, s("")},
	{"array", `[1,"a",null,false]`, list(num("1"), s("a"), null(), boolean(false))},
	{"small float", `1.5e-7`, num("1.5e-7")},
}

// TestDataFormats: each format writes every result the way its runtime
// does and reads it back unchanged: a string stays a string, an object an
// object.
func TestDataFormats(t *testing.T) {
	ctx := context.Background()
	for _, format := range []dynamostore.DataFormat{dynamostore.DataJSON, dynamostore.DataPowertoolsPython, dynamostore.DataPowertoolsTypeScript} {
		e := newEnv(t, dynamostore.WithDataFormat(format))
		for _, tc := range results {
			t.Run(format.String()+"/"+tc.name, func(t *testing.T) {
				key := "fmt#" + rand.Text()
				rec := claim(key, time.Now(), time.Minute)
				if _, loaded, err := e.store.Acquire(ctx, rec, time.Now(), driver.Takeover); err != nil || loaded {
					t.Fatalf("Acquire: loaded=%v err=%v", loaded, err)
				}
				if _, err := e.store.Complete(ctx, completed(rec, tc.json)); err != nil {
					t.Fatal(err)
				}
				want := tc.native
				if format != dynamostore.DataPowertoolsTypeScript {
					want = s(tc.json) // S holding the JSON text, as json.dumps writes it
				}
				if got := e.raw(t, e.table, key)["data"]; !reflect.DeepEqual(got, want) {
					t.Errorf("stored data = %s, want %s", show(map[string]types.AttributeValue{"data": got}), show(map[string]types.AttributeValue{"data": want}))
				}
				got, loaded, err := e.store.Acquire(ctx, claim(key, time.Now(), time.Minute), time.Now(), driver.Takeover)
				if err != nil || !loaded {
					t.Fatalf("Acquire of the completed record: loaded=%v err=%v", loaded, err)
				}
				if !jsonEqual(got.Data, []byte(tc.json)) {
					t.Errorf("read back %s, want %s", got.Data, tc.json)
				}
			})
		}
	}
}

// TestDataFormatMismatch: a record whose data the configured format cannot
// have written fails to read with an error naming both formats, and the
// guard runs nothing for it.
func TestDataFormatMismatch(t *testing.T) {
	ctx := context.Background()
	jsonStore := newEnv(t)
	tsStore, err := dynamostore.New(jsonStore.db, jsonStore.table, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		reader *dynamostore.Store
		data   types.AttributeValue
		gzip   bool
		want   string // in the error
	}{
		{name: "map read as JSON text", reader: jsonStore.store, data: obj(map[string]types.AttributeValue{"a": num("1")}), want: "a value of type M"},
		{name: "number read as JSON text", reader: jsonStore.store, data: num("1717"), want: "a value of type N"},
		{name: "null read as JSON text", reader: jsonStore.store, data: null(), want: "a value of type NULL"},
		{name: "bool read as JSON text", reader: jsonStore.store, data: boolean(true), want: "a value of type BOOL"},
		{name: "list read as JSON text", reader: jsonStore.store, data: list(s("a")), want: "a value of type L"},
		{name: "plain string read as JSON text", reader: jsonStore.store, data: s("a summary"), want: "a string that is not JSON text"},
		{name: "compressed read as native", reader: tsStore, data: &types.AttributeValueMemberB{Value: []byte{1}}, gzip: true, want: `data_encoding is "gzip"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := "mix#" + rand.Text()
			item := map[string]types.AttributeValue{"id": s(key), "status": s("COMPLETED"),
				"expiration": n(time.Now().Add(time.Hour).Unix()), "data": tc.data}
			if tc.gzip {
				item["data_encoding"] = s("gzip")
			}
			jsonStore.put(t, jsonStore.table, item)
			_, _, err := tc.reader.Acquire(ctx, claim(key, time.Now(), time.Minute), time.Now(), driver.Takeover)
			var fe *dynamostore.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("Acquire = %v, want a *FormatError", err)
			}
			msg := err.Error()
			for _, w := range []string{tc.want, "native DynamoDB types (Powertools TypeScript)", "JSON text"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if got := jsonStore.raw(t, jsonStore.table, key); !reflect.DeepEqual(got, item) {
				t.Errorf("record changed by a refused read: %s", show(got))
			}
		})
	}

	// Through the guard: the delivery fails, the operation does not run.
	g, err := idempotency.New(idempotency.Config{Store: jsonStore.store, Namespace: "mix", Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	jsonStore.put(t, jsonStore.table, map[string]types.AttributeValue{"id": s(rawID(t, g, "k")), "status": s("COMPLETED"),
		"expiration": n(time.Now().Add(time.Hour).Unix()), "data": num("123")})
	_, err = idempotency.Do(ctx, g, idempotency.Raw([]byte("k")), func(context.Context) (string, error) {
		t.Error("the operation ran for a record the store could not read")
		return "", nil
	})
	var fe *dynamostore.FormatError
	if !errors.As(err, &fe) {
		t.Errorf("Do = %v, want a *FormatError", err)
	}
}

// TestPowertoolsFormatsDoNotCompress: results in a Powertools format are
// never compressed (Powertools could not read them), and asking for
// compression with one is refused.
func TestPowertoolsFormatsDoNotCompress(t *testing.T) {
	for _, f := range []dynamostore.DataFormat{dynamostore.DataPowertoolsPython, dynamostore.DataPowertoolsTypeScript} {
		_, err := dynamostore.New(&fakeAPI{}, "t", dynamostore.WithDataFormat(f), dynamostore.WithCompressAbove(1<<10))
		if err == nil || !strings.Contains(err.Error(), "compress") {
			t.Errorf("New with %v and WithCompressAbove = %v, want an error about compression", f, err)
		}
	}
	if _, err := dynamostore.New(&fakeAPI{}, "t", dynamostore.WithDataFormat(dynamostore.DataFormat(9))); err == nil {
		t.Error("New accepted an unknown data format")
	}
	big := `"` + strings.Repeat("summary ", 16<<10) + `"` // 128 KiB, above DefaultCompressAbove
	for _, f := range []dynamostore.DataFormat{dynamostore.DataPowertoolsPython, dynamostore.DataPowertoolsTypeScript} {
		t.Run(f.String(), func(t *testing.T) {
			fake := &fakeAPI{updateReplies: []reply[dynamodb.UpdateItemOutput]{ok(&dynamodb.UpdateItemOutput{})}}
			st := newFake(t, fake, dynamostore.WithDataFormat(f), dynamostore.WithLogger(discard()))
			rec := record("ns#k")
			rec.Status, rec.Data = driver.StatusCompleted, []byte(big)
			if _, err := st.Complete(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			vals := fake.updates[0].ExpressionAttributeValues
			if _, enc := vals[":enc"]; enc {
				t.Error("a result in a Powertools format was compressed")
			}
			want := big
			if f == dynamostore.DataPowertoolsTypeScript {
				want = big[1 : len(big)-1] // the string itself
			}
			if got, _ := vals[":data"].(*types.AttributeValueMemberS); got == nil || got.Value != want {
				t.Error("the result was not stored as a plain string")
			}
		})
	}
}

// TestNativeNumberNotQuoted: the log line of a result left out for a
// number DynamoDB cannot hold describes the number (a short prefix, its
// length and a digest), never quotes it: a result can echo the message.
func TestNativeNumberNotQuoted(t *testing.T) {
	for _, n := range []string{
		"1234567890" + strings.Repeat("7", 30), // 40 significant digits
		"98765432101234e1000",                  // out of range
		"55555555555555e99999999999999999999",  // exponent out of range
	} {
		t.Run(n, func(t *testing.T) {
			var logs bytes.Buffer
			fake := &fakeAPI{updateReplies: []reply[dynamodb.UpdateItemOutput]{ok(&dynamodb.UpdateItemOutput{})}}
			st := newFake(t, fake, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript),
				dynamostore.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			rec := record("ns#k")
			rec.Status, rec.Data = driver.StatusCompleted, []byte(`{"n":`+n+`}`)
			if stored, err := st.Complete(context.Background(), rec); err != nil || stored != nil {
				t.Fatalf("Complete = %s, %v; want the record completed without the result", stored, err)
			}
			line := logs.String()
			if !strings.Contains(line, "WITHOUT its result") {
				t.Fatalf("no log line of the result left out: %q", line)
			}
			if strings.Contains(line, n) || strings.Contains(line, n[:12]) {
				t.Errorf("the log line quotes the number: %s", line)
			}
			if !strings.Contains(line, fmt.Sprintf("%d bytes", len(n))) {
				t.Errorf("the log line does not describe the number by its length: %s", line)
			}
		})
	}
}

// TestNativeNumbers: a number DynamoDB cannot hold, or Powertools for
// TypeScript cannot read back (beyond JavaScript's safe integers, ±2^53−1:
// its unmarshall makes a BigInt, which throws for a fraction), is not
// written in the native format; the record is completed without the
// result, as for one too large to store.
func TestNativeNumbers(t *testing.T) {
	for _, tc := range []struct {
		n  string
		ok bool
	}{
		{"0", true}, {"-0.000", true}, {"-5", true}, {"1e125", false}, {"9.99e125", false}, {"1e126", false},
		{"1e-130", true}, {"0.1e-129", true}, {"1e-131", false}, {"0.001e-128", false},
		{strings.Repeat("9", 38), false}, {strings.Repeat("9", 39), false}, {"1" + strings.Repeat("0", 50), false},
		{"9007199254740991", true}, {"-9007199254740991", true}, {"9007199254740991.0", true}, {"9.007199254740991e15", true},
		{"9007199254740992", false}, {"-9007199254740992", false}, {"9007199254740993.5", false}, {"1e16", false}, {"1e15", true},
		{"0." + strings.Repeat("1", 38) + "00", true}, {"1e99999999999999999999", false},
		{"0e99999999999999999999", true}, {"-0.000E-99999999999999999999", true}, // zero, whatever its exponent
	} {
		t.Run(tc.n, func(t *testing.T) {
			fake := &fakeAPI{updateReplies: []reply[dynamodb.UpdateItemOutput]{ok(&dynamodb.UpdateItemOutput{})}}
			st := newFake(t, fake, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript), dynamostore.WithLogger(discard()))
			rec := record("ns#k")
			rec.Status, rec.Data = driver.StatusCompleted, []byte(`{"n":`+tc.n+`}`)
			stored, err := st.Complete(context.Background(), rec)
			if err != nil {
				t.Fatal(err)
			}
			vals := fake.updates[0].ExpressionAttributeValues
			if tc.ok {
				want := obj(map[string]types.AttributeValue{"n": num(tc.n)})
				if !reflect.DeepEqual(vals[":data"], want) || stored == nil {
					t.Errorf("stored %v, want %v", vals[":data"], want)
				}
				return
			}
			if o, _ := vals[":omit"].(*types.AttributeValueMemberBOOL); o == nil || !o.Value || stored != nil || vals[":data"] != nil {
				t.Errorf("a number DynamoDB cannot hold: stored %v, want the result left out", vals[":data"])
			}
		})
	}
}

// TestDeeplyNestedResult: in DataPowertoolsTypeScript a result is stored in
// DynamoDB's native types, which nest at most 32 levels counting the
// attribute (31 maps or lists around a value); DynamoDB refuses a deeper
// write whole. A deeper result completes its record without it (left out,
// as a result too large is), so that the operation never runs again; one
// at the limit is stored and replayed whole.
func TestDeeplyNestedResult(t *testing.T) {
	e := newEnv(t, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	g, err := idempotency.New(idempotency.Config{Store: e.store, Namespace: "deep", Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	nested := func(depth int) json.RawMessage {
		return json.RawMessage(strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth))
	}
	for _, tc := range []struct {
		depth int
		kept  bool
	}{{31, true}, {32, false}, {200, false}} {
		k := idempotency.Raw(fmt.Appendf(nil, "depth-%d", tc.depth))
		runs := 0
		op := func(context.Context) (json.RawMessage, error) { runs++; return nested(tc.depth), nil }
		if _, err := idempotency.Do(context.Background(), g, k, op); err != nil {
			t.Fatalf("depth %d, first delivery: %v", tc.depth, err)
		}
		replayed, err := idempotency.Do(context.Background(), g, k, op)
		if err != nil {
			t.Fatalf("depth %d, duplicate: %v", tc.depth, err)
		}
		if kept := string(replayed) == string(nested(tc.depth)); kept != tc.kept || !kept && replayed != nil {
			t.Errorf("depth %d: the duplicate replays %.40s; want the result kept %v (or nothing)", tc.depth, replayed, tc.kept)
		}
		if runs != 1 {
			t.Errorf("depth %d: the operation ran %d times, want once", tc.depth, runs)
		}
	}
}
