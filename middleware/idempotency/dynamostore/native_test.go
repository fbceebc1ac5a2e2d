package dynamostore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
	want, werr := decoderNative([]byte(doc))
	got, gerr := nativeValue([]byte(doc))
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
	} {
		checkNative(t, doc)
	}
}

func FuzzNativeReader(f *testing.F) {
	f.Add(`{"a":[1,"x",{"b":null}],"c":-0.5e3}`)
	f.Add(`"\u00e9\ud83d\ude00"`)
	f.Fuzz(func(t *testing.T, doc string) { checkNative(t, doc) })
}
