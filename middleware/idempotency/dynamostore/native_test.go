package dynamostore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// decoderNative is nativeValue as the decoder converts a document: the
// reference nativeReader must agree with.
func decoderNative(data []byte) (types.AttributeValue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not one value")
	}
	return toNative(x)
}

func checkNative(t *testing.T, doc string) {
	t.Helper()
	got, gerr := nativeValue([]byte(doc))
	if jsonDepth([]byte(doc)) > maxNesting {
		// Deeper than DynamoDB stores: refused, whatever the decoder makes of it.
		if gerr == nil || got != nil {
			t.Errorf("%.40q… nests %d deep: nativeValue = %T, %v; want an error", doc, jsonDepth([]byte(doc)), got, gerr)
		}
		return
	}
	want, werr := decoderNative([]byte(doc))
	if (werr != nil) != (gerr != nil) || !reflect.DeepEqual(got, want) {
		t.Errorf("%q: nativeValue = %#v, %v; the decoder's = %#v, %v", doc, got, gerr, want, werr)
	}
}

func TestNativeReaderAsDecoder(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, `""`, `0`, `-1.5e+10`, `true`, `false`, `null`,
		` { "a" : [ 1 , "x" , { } , [ ] , null ] , "b" : { "c" : false } } `,
		`{"a":1,"a":2}`, `{"k":"\u00e9\n\"\\/","\u0041":"<&>"}`, "\"\xff\xfe\"", "\"a\xc3\"",
		`"\ud800"`, `[1e400]`, `[123456789012345678901234567890123456789]`, `[0.000e-999]`,
		`{"document_id":"k-1","summary":"a summary of the document ","tokens":312}`,
		`{"a":1} {"b":2}`, `{"a":}`, `[1,]`, ``, `   `,
		// A member named twice whose earlier value DynamoDB cannot store:
		// the decoder keeps the later one only.
		`{"a":1e200,"a":1}`, `{"a":[1e200],"a":1}`, `{"a":{"b":1e400},"a":{"b":2}}`,
	} {
		checkNative(t, doc)
	}
}

func FuzzNativeReader(f *testing.F) {
	f.Add(`{"a":[1,"x",{"b":null}],"c":-0.5e3}`)
	f.Add(`"\u00e9\ud83d\ude00"`)
	f.Add(`{"a":1e200,"a":1}`)
	f.Add(`{"a":[1e200],"a":1}`)
	f.Fuzz(func(t *testing.T, doc string) { checkNative(t, doc) })
}

// TestFencedUpdatesNameWhatTheyUse: DynamoDB refuses a request whose
// ExpressionAttributeNames hold a name its expressions do not use, or miss
// one they use, so each fenced completion carries exactly its own.
func TestFencedUpdatesNameWhatTheyUse(t *testing.T) {
	s, err := New(fakeUpdates{}, "t")
	if err != nil {
		t.Fatal(err)
	}
	rec := driver.Record{ID: "ns#k", Owner: "me", Data: []byte(`{"a":1}`)}
	for _, p := range []placement{
		{omitted: true}, {}, {value: attrS("z"), encoding: encodingGzip}, {value: attrS(`{"a":1}`)},
	} {
		u := s.completion(rec, p, false, false)
		exprs := aws.ToString(u.UpdateExpression) + " " + aws.ToString(u.ConditionExpression)
		used := map[string]bool{}
		for _, f := range strings.FieldsFunc(exprs, func(r rune) bool { return r == ' ' || r == ',' || r == '(' || r == ')' }) {
			if strings.HasPrefix(f, "#") {
				used[f] = true
			}
		}
		for name := range u.ExpressionAttributeNames {
			if !used[name] {
				t.Errorf("%q: names hold %s, unused", exprs, name)
			}
			delete(used, name)
		}
		if len(used) > 0 {
			t.Errorf("%q: names miss %v", exprs, used)
		}
	}
}

// fakeUpdates is an API that is never called.
type fakeUpdates struct{ API }

// hostileResults are results of about 1 MiB that an operation may return
// and the Powertools data format converts to native types: deep nesting,
// wide arrays, many members, a member named again and again, escapes.
func hostileResults() map[string]string {
	const mib = 1 << 20
	return map[string]string{
		"deep":       strings.Repeat("[", 9000) + strings.Repeat("]", 9000),
		"wide":       "[" + strings.Repeat("0,", mib/2-1) + "0]",
		"members":    "{" + strings.TrimSuffix(strings.Repeat(`"k":1,`, mib/6), ",") + "}",
		"escapes":    `"` + strings.Repeat(`\u00e9\n\"`, mib/10) + `"`,
		"numbers":    "[" + strings.TrimSuffix(strings.Repeat("-1.5e+10,", mib/9), ",") + "]",
		"duplicates": "{" + strings.TrimSuffix(strings.Repeat(`"a":[1e200],`, mib/12), ",") + `,"a":1}`,
		"late error": `{"a":[` + strings.Repeat("0,", mib/2-8) + `1e200],"a":1}`,
	}
}

// TestNativeCeiling: on each hostile result the conversion agrees with the
// decoder's, and allocates at most twice what the decoder's conversion
// does: a valid document is read once, and one whose fast reading fails
// (a number DynamoDB cannot store, perhaps in a member named again later)
// is read a second time by the decoder. Time is in BenchmarkNativeHostile.
func TestNativeCeiling(t *testing.T) {
	if raceDetector {
		t.Skip("allocation is measured without -race: make test runs this test again without it")
	}
	for name, doc := range hostileResults() {
		checkNative(t, doc)
		data := []byte(doc)
		fast := testing.AllocsPerRun(1, func() { _, _ = nativeValue(data) })
		slow := testing.AllocsPerRun(1, func() { _, _ = decoderNative(data) })
		if fast > 2*slow+16 {
			t.Errorf("%s: %.0f allocations, over twice the decoder's conversion (%.0f)", name, fast, slow)
		}
	}
}

func BenchmarkNativeHostile(b *testing.B) {
	for name, doc := range hostileResults() {
		data := []byte(doc)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				_, _ = nativeValue(data)
			}
		})
	}
}

// TestJSONDepth: the nesting of objects and arrays, strings skipped (their
// brackets, escaped quotes and backslashes included).
func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{
		`1`: 0, `"{[{["`: 0, `{}`: 1, `[[],[[]]]`: 3, `{"a":[{"b":"]}}"}]}`: 3,
		`["\"[", ["\\"], "\\\"{"]`: 2, `{"a":` + strings.Repeat(`[`, 40): 41,
	} {
		if got := jsonDepth([]byte(in)); got != want {
			t.Errorf("jsonDepth(%s) = %d, want %d", in, got, want)
		}
	}
}
