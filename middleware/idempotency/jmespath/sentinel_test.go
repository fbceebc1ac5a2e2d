package jmespath_test

import (
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// The sentinel: message content that must never reach an error, as text,
// as a number, as a member name, and encoded.
const (
	sentinel       = "SENTINEL-card-4111"
	sentinelNumber = "4111111111111111"
	sentinelName   = "SENTINEL-name"
)

// leaks returns what of the sentinel err's message shows, or "".
func leaks(err error) string {
	msg := err.Error()
	for _, s := range []string{sentinel, sentinelNumber, sentinelName, "SENTINEL", "4111111111",
		base64.StdEncoding.EncodeToString([]byte(sentinel))[:12]} {
		if strings.Contains(msg, s) {
			return s
		}
	}
	return ""
}

// sentinelDoc is a generated JSON document with the sentinel in strings,
// names and numbers.
func sentinelDoc(r *rand.Rand, depth int) string {
	switch n := r.IntN(10); {
	case n < 3 && depth < 3:
		var parts []string
		for i := range r.IntN(5) {
			name := []string{"a", "b", "k", sentinelName, "7", "toString", "é"}[r.IntN(7)] + strconv.Itoa(i%2)
			parts = append(parts, strconv.Quote(name)+":"+sentinelDoc(r, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case n < 5 && depth < 3:
		var parts []string
		for range r.IntN(5) {
			parts = append(parts, sentinelDoc(r, depth+1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case n < 7:
		return []string{sentinelNumber, "-" + sentinelNumber, sentinelNumber + ".5", "1e400", "0.1", "7", "10.0"}[r.IntN(7)]
	case n < 9:
		return []string{`"` + sentinel + `"`, `"` + sentinel + `😀"`, `"\u` + "0053" + `ENTINEL-card-4111"`,
			`"` + base64.StdEncoding.EncodeToString([]byte(sentinel)) + `"`, `"` + sentinel + `\ud800"`}[r.IntN(5)]
	}
	return []string{"true", "false", "null"}[r.IntN(3)]
}

// refusalSeeds reach the refusals the generator meets rarely, each on a
// message that carries the sentinel.
func refusalSeeds() []diffCase {
	body := func(expr, b string) diffCase {
		return diffCase{expr, events.SQSMessage{MessageId: "m-1", Body: b}}
	}
	s := `"` + sentinel + `"`
	lengths := strings.TrimSuffix(strings.Repeat("length(@),", 2000), ",")
	small := "[" + strings.Repeat("1,", 600) + sentinelNumber + "]"
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	return []diffCase{
		body("powertools_json(body).k | abs(@)", `{"k":`+s+`}`),
		body("powertools_json(body).k", `{"k":`+s+`,"n":`+strings.Repeat("4", 101)+`}`),
		body("powertools_json(body).k", `{"k":`+s+`,"k":1}`),
		body("powertools_json(body).k", `{"k":"\ud800`+sentinel+`"}`),
		body("powertools_json(body).k", strings.Repeat("[", 10001)+s+strings.Repeat("]", 10001)),
		body("powertools_json(body).k", `{"k":`+s+`} trailing`),
		body("powertools_json(body).k | [@ > `9007199254740992`]", `{"k":9007199254740993,"s":`+s+`}`),
		body("sum(powertools_json(body).k)", `{"k":[0.1,0.2],"s":`+s+`}`),
		body("avg(powertools_json(body).k)", `{"k":[],"s":`+s+`}`),
		body("ceil(powertools_json(body).k)", `{"k":1e400,"s":`+s+`}`),
		body("to_number(powertools_json(body).k)", `{"k":" 12","s":`+s+`}`),
		body("powertools_json(body).k | [@ == `[1]`]", `{"k":[true],"s":`+s+`}`),
		body("contains(powertools_json(body).k, powertools_json(body).k[0])", `{"k":[[`+s+`]]}`),
		body("powertools_json(body).k | [@[0] < @[1]]", `{"k":["A",`+s+`]}`),
		body("powertools_json(body).k", "{\"k\":\"\xff"+sentinel+"\"}"),
		body("powertools_json(body).k | [@[0] < @[1]]", `{"k":[1,`+s+`]}`),
		body("max(powertools_json(body).k)", `{"k":["\ue000`+sentinel+`","😀`+sentinel+`"]}`),
		body("sort(powertools_json(body).k)", `{"k":["b",`+s+`]}`),
		body("length(powertools_json(body).k)", `{"k":"😀`+sentinel+`"}`),
		body("to_string(powertools_json(body).k)", `{"k":{"é":`+s+`}}`),
		body("map(&a, powertools_json(body).k)", `{"k":[{"a":0},{"a":`+s+`}]}`),
		body("powertools_json(body).k | [@[0] < @[1]][0]", `{"k":[null,`+s+`]}`),
		body("powertools_json(body).k | [sort(@), @]", `{"k":[2,1],"s":`+s+`}`),
		body("powertools_json(body).k.toString", `{"k":{"a":`+s+`}}`),
		body("@", `{"k":`+s+`}`),
		body("keys(attributes)", `{"k":`+s+`}`),
		body("keys(powertools_json(body).k)", `{"k":{"b":`+s+`,"7":1}}`),
		body("powertools_base64(powertools_json(body).k)", `{"k":"`+b64([]byte(sentinel))+`\n"}`),
		body("powertools_base64_gzip(powertools_json(body).k)", `{"k":"`+b64([]byte(sentinel))+`"}`),
		body("powertools_base64_gzip(body)", gzipBase64(strings.Repeat(sentinel, (1<<20)/len(sentinel)+1))),
		body("powertools_base64(powertools_json(body).k)", `{"k":"`+b64([]byte("\xff"+sentinel))+`"}`),
		body("powertools_base64(powertools_json(body).k)", `{"k":"`+b64([]byte("\ufeff"+sentinel))+`"}`),
		body("powertools_json(body)[*]", "["+strings.Repeat("1,", 500000)+sentinelNumber+"]"),
		body("powertools_json(body) | ["+lengths+"]", small),
	}
}

// TestErrorsQuoteNothing: no error of an evaluation shows message content
// (issue 15 items 4 and 5). It evaluates generated expressions on
// generated messages full of a sentinel (in strings, member names,
// numbers, base64 and gzip payloads and attributes), plus seeds for the
// rare refusals, and requires that every reason a refusal can give and
// every JSON rule was met at least once, so a new error path is covered
// as soon as it can happen.
func TestErrorsQuoteNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 11))
	cases := refusalSeeds()
	seeds := len(cases)
	for range 2000 {
		g := &gen{r: r}
		doc := sentinelDoc(r, 0)
		v := sentinel
		m := events.SQSMessage{MessageId: "m-1", Body: doc,
			Attributes:        map[string]string{"SenderId": sentinel, "ApproximateReceiveCount": "1"},
			MessageAttributes: map[string]events.SQSMessageAttribute{"k": {DataType: "String", StringValue: &v}}}
		expr := "powertools_json(body) | " + g.expr(0)
		switch r.IntN(4) {
		case 0:
			m.Body = base64.StdEncoding.EncodeToString([]byte(doc))
			expr = "powertools_json(powertools_base64(body)) | " + g.expr(0)
		case 1:
			m.Body = gzipBase64(doc)
			expr = "powertools_json(powertools_base64_gzip(body)) | " + g.expr(0)
		case 2:
			expr = g.recordExpr()
		}
		cases = append(cases, diffCase{expr, m})
	}
	reasons := make([]int, jmespath.NumRefusals)
	rules := map[error]int{}
	ruleKinds := []error{jsonkey.ErrSyntax, jsonkey.ErrTooDeep, jsonkey.ErrNumberTooLong, jsonkey.ErrInvalidUTF8,
		jsonkey.ErrLoneSurrogate, jsonkey.ErrDuplicateName}
	errs := 0
	for i, c := range cases {
		e, err := jmespath.Compile(c.expr)
		if err != nil {
			continue // the expression's own text, not the message's
		}
		evaluations := []func() error{func() error { _, err := e.Select(c.m); return err }}
		if i >= seeds { // the body as a whole event too
			evaluations = append(evaluations, func() error { _, err := jmespath.Evaluate(e, c.m.Body); return err })
		}
		for _, evaluate := range evaluations {
			err := evaluate()
			if err == nil {
				continue
			}
			errs++
			if s := leaks(err); s != "" {
				t.Errorf("%s: the error shows %q: %v", c.expr, s, err)
			}
			var ke *idempotency.KeyError
			if errors.As(err, &ke) && ke.InputID != "m-1" {
				t.Errorf("%s: KeyError for message %q", c.expr, ke.InputID)
			}
			if k, ok := jmespath.RefusalOf(err); ok {
				reasons[k]++
			}
			for _, rule := range ruleKinds {
				if errors.Is(err, rule) {
					rules[rule]++
				}
			}
		}
	}
	for k, n := range reasons {
		if n == 0 {
			t.Errorf("refusal reason %d was never met: add a seed that reaches it", k)
		}
	}
	for _, rule := range ruleKinds {
		if rules[rule] == 0 {
			t.Errorf("JSON rule %q was never met", rule)
		}
	}
	t.Logf("%d cases, %d errors, none showing the sentinel; refusal reasons met: %v", len(cases), errs, reasons)
}
