package handler_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsonce/sqsonce/internal/jsonkey/jsongen"
)

// TestBodySpellings (issue 25, finding 1): the app's typed wiring reads a
// request pretty-printed as Jackson's printer writes it (white space
// before every colon), or laid out with any other white space, as its
// compact spelling: one provider call and one summary, with the producer's
// key and with the canonical subset, whose parameters are an object. On
// 2e43541 every spelling but the compact one panicked in the key's index,
// and its message failed into the dead-letter queue.
func TestBodySpellings(t *testing.T) {
	const pretty = "{\n  \"idempotency_key\" : \"sum-4471-9\",\n  \"document\" : {\n    \"id\" : \"4471\",\n    \"version\" : \"9\"\n  },\n" +
		"  \"model\" : \"m1\",\n  \"prompt_version\" : \"v1\",\n  \"parameters\" : {\n    \"temperature\" : 0.70\n  },\n  \"request_id\" : \"r-1\"\n}"
	noKey := func(s string) string { // the canonical subset is the key
		return strings.Replace(strings.Replace(s, `"idempotency_key":"sum-4471-9",`, "", 1), "\"idempotency_key\" : \"sum-4471-9\",\n  ", "", 1)
	}
	g := jsongen.New(25)
	for _, compact := range []string{typedReq, noKey(typedReq)} {
		p := pretty
		if compact != typedReq {
			p = noKey(pretty)
		}
		spellings := []string{p, strings.ReplaceAll(p, "\n", "\r\n"), g.Respace(compact), g.Respace(compact)}
		a := newTypedApp(t)
		first, err := a.handle(t.Context(), events.SQSMessage{MessageId: "m-1", Body: compact})
		if err != nil {
			t.Fatal(err)
		}
		for i, body := range spellings {
			s, err := a.handle(t.Context(), events.SQSMessage{MessageId: "m-2", Body: body})
			if err != nil || s != first {
				t.Errorf("spelling %d %q: summary %+v, %v; the compact spelling's %+v", i, body, s, err, first)
			}
		}
		if n := a.calls.Len(); n != 1 {
			t.Errorf("%d provider calls for %d spellings of one request, want 1", n, len(spellings)+1)
		}
	}
}
