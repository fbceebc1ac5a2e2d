package dynamostore_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/jsonkey/jsongen"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// storedNative completes a record with data in the TypeScript data format
// and returns the value written (nil when the result was left out).
func storedNative(t *testing.T, data string) types.AttributeValue {
	t.Helper()
	fake := &fakeAPI{updateReplies: []reply[dynamodb.UpdateItemOutput]{ok(&dynamodb.UpdateItemOutput{})}}
	st := newFake(t, fake, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript), dynamostore.WithLogger(discard()))
	rec := record("ns#k")
	rec.Status, rec.Data = driver.StatusCompleted, []byte(data)
	if _, err := st.Complete(context.Background(), rec); err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	return fake.updates[0].ExpressionAttributeValues[":data"]
}

// TestNativeDataSpellings (issue 25): a result is converted to DynamoDB's
// native types (the TypeScript data format) alike however its JSON is
// spelled (white space at every place RFC 8259 allows it, every escape,
// members in any order), and reads back as its value.
func TestNativeDataSpellings(t *testing.T) {
	g := jsongen.New(25)
	const n = 400
	kept := 0
	for range n {
		v := g.Value()
		compact := jsongen.Compact(v)
		want := storedNative(t, compact)
		for _, st := range []jsongen.Style{{Space: true}, {Escapes: true}, {Space: true, Escapes: true, Reorder: true}} {
			s := g.Spell(v, st)
			if got := storedNative(t, s); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q is stored %s; its compact spelling %q, %s", s, show(map[string]types.AttributeValue{"data": got}), compact, show(map[string]types.AttributeValue{"data": want}))
			}
		}
		if want == nil { // a number DynamoDB does not hold: left out, alike
			continue
		}
		kept++
		item := completedItem("ns#k", "")
		item["data"] = want
		fake := &fakeAPI{putReplies: []reply[dynamodb.PutItemOutput]{fail[dynamodb.PutItemOutput](ccf(item))}}
		st := newFake(t, fake, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript), dynamostore.WithLogger(discard()))
		got, loaded, err := st.Acquire(context.Background(), record("ns#k"), t0, driver.Takeover)
		if err != nil || !loaded || !sameJSON(got.Data, compact) {
			t.Fatalf("%q reads back as %q, loaded %v, %v", compact, got.Data, loaded, err)
		}
	}
	t.Logf("%d results in 3 spellings each, %d stored and read back", n, kept)
}

// sameJSON reports whether JSON texts a and b are one value, numbers
// compared as spelled.
func sameJSON(a []byte, b string) bool {
	decode := func(s string) (any, error) {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		return v, d.Decode(&v)
	}
	x, errx := decode(string(a))
	y, erry := decode(b)
	return errx == nil && erry == nil && reflect.DeepEqual(x, y)
}
