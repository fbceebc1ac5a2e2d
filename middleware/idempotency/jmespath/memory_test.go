package jmespath_test

import (
	"encoding/base64"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// mib is SQS's largest message.
const mib = 1 << 20

// hostile is a message built to make a key expression expensive, and the
// bytes powertools_base64(_gzip) decode from it.
type hostile struct {
	name    string
	expr    string
	m       events.SQSMessage
	decoded int
}

// fill repeats unit (after head, before tail) until the text is about n
// bytes.
func fill(head, unit, sep, tail string, n int) string {
	count := (n - len(head) - len(tail)) / (len(unit) + len(sep))
	return head + strings.Repeat(unit+sep, count-1) + unit + tail
}

func hostileMessages() []hostile {
	body := func(name, expr, b string) hostile {
		return hostile{name: name, expr: expr, m: events.SQSMessage{MessageId: "m-1", Body: b}}
	}
	wideNumbers := fill("[", "0", ",", "]", mib)
	members := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; b.Len() < n-40; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + strconv.Itoa(i) + `":` + strconv.Itoa(i))
		}
		b.WriteString("}")
		return b.String()
	}(mib)
	prettyMembers := func(n int) string { // as Jackson's pretty printer writes them
		var b strings.Builder
		b.WriteString("{")
		for i := 0; b.Len() < n-40; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n  \"k" + strconv.Itoa(i) + `" : ` + strconv.Itoa(i))
		}
		b.WriteString("\n}")
		return b.String()
	}(mib)
	nullMembers := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; b.Len() < n-40; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + strconv.Itoa(i) + `":null`)
		}
		b.WriteString("}")
		return b.String()
	}(mib)
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	shortNames := func(escaped bool) string { // the most members 1 MiB holds
		var b strings.Builder
		b.WriteString("{")
		const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		for i := 0; b.Len() < mib-40; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			name := ""
			for n := i; ; n /= len(digits) {
				name += string(digits[n%len(digits)])
				if n < len(digits) {
					break
				}
			}
			if escaped {
				name = fmt.Sprintf(`\u%04x`, name[0]) + name[1:]
			}
			b.WriteString(`"` + name + `":0`)
		}
		b.WriteString("}")
		return b.String()
	}
	objects := fill("[", `{"a":1,"b":"x"}`, ",", "]", mib)
	escaped := `{"k":"` + strings.Repeat(`\u00e9`, (mib-10)/6) + `"}`
	gzipWide := gzipBase64(wideNumbers)
	var attrs = map[string]events.SQSMessageAttribute{}
	for i := range 10 {
		v := strings.Repeat("v", mib/10-100)
		attrs["a"+strconv.Itoa(i)] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	cases := []hostile{
		body("1 MiB body, one key", `powertools_json(body).idempotency_key`,
			`{"idempotency_key":"k","pad":"`+strings.Repeat("x", mib-40)+`"}`),
		body("1 MiB of numbers, a projection", `powertools_json(body)[*]`, wideNumbers),
		body("1 MiB of numbers, a filter", "powertools_json(body)[?@ > `0`]", wideNumbers),
		body("1 MiB of numbers, length", `length(powertools_json(body))`, wideNumbers),
		body("1 MiB of numbers, sort", `sort(powertools_json(body))`, wideNumbers),
		body("1 MiB of numbers, to_string", `to_string(powertools_json(body))`, wideNumbers),
		body("1 MiB of numbers, the whole body", `powertools_json(body)`, wideNumbers),
		body("1 MiB of numbers, doubled", `powertools_json(body) | [@, @][] | [@, @][] | [@, @][] | [@, @][]`, wideNumbers),
		body("1 MiB of members, keys", `keys(powertools_json(body))`, members),
		body("1 MiB of members, values", `powertools_json(body).*`, members),
		body("1 MiB of members, to_string", `to_string(powertools_json(body))`, members),
		body("1 MiB of members, merge", `merge(powertools_json(body), powertools_json(body))`, members),
		body("1 MiB of members, a late member", `powertools_json(body).k99999`, members),
		body("1 MiB of short names, keys", `keys(powertools_json(body))`, shortNames(false)),
		body("1 MiB of short names, a member", `powertools_json(body)."0"`, shortNames(false)),
		body("1 MiB of escaped names, values", `values(powertools_json(body))`, shortNames(true)),
		body("1 MiB of objects, a multi-select each", `powertools_json(body)[*].[a, b]`, objects),
		body("1 MiB of objects, a function each", `powertools_json(body)[*].abs(a)`, objects),
		body("1 MiB of objects, map", `map(&b, powertools_json(body))`, objects),
		body("1 MiB of objects, sort_by", `sort_by(powertools_json(body), &b)[0]`, objects),
		body("1 MiB of objects, equality", "powertools_json(body)[?@ == `{\"a\":1,\"b\":\"x\"}`] | length(@)", objects),
		body("nesting 10,000 deep", `powertools_json(body)`, deep),
		body("nesting 10,000 deep, flattened", `powertools_json(body)[][][][][][][][]`, deep),
		body("1 MiB of escapes, length", `length(powertools_json(body).k)`, escaped),
		body("1 MiB of escapes, to_string", `to_string(powertools_json(body))`, escaped),
		body("1 MiB of escapes, the string", `powertools_json(body).k`, escaped),
		body("a 1 MiB number", `powertools_json(body).k`, `{"k":`+strings.Repeat("7", mib-10)+`}`),
		body("1 MiB of base64", `powertools_base64(body)`, base64.StdEncoding.EncodeToString([]byte(strings.Repeat("é", mib*3/8)))),
		// White space wherever RFC 8259 allows it (issue 25).
		body("1 MiB of white space around one key", `powertools_json(body).idempotency_key`,
			fill(`{ "idempotency_key" : "k" ,`, " \t\r\n", "", `"pad" : 1 }`, mib)),
		body("1 MiB of spaced numbers, the whole body", `powertools_json(body)`, fill("[ ", "0", " ,\n ", " ]", mib)),
		body("1 MiB of pretty-printed members, a late member", `powertools_json(body).k40000`, prettyMembers),
		body("1 MiB of pretty-printed members, the whole body", `powertools_json(body)`, prettyMembers),
		body("1 MiB of pretty-printed members, keys", `keys(powertools_json(body))`, prettyMembers),
		// A selection that is no key but is a payload (WithPayload): its
		// JSON spelling travels with the refusal.
		body("1 MiB of nulls, the whole body", `powertools_json(body)`, fill("[", "null", ",", "]", mib)),
		body("1 MiB of null members, the whole body", `powertools_json(body)`, nullMembers),
		{name: "10 attributes of 100 KiB", expr: `[messageAttributes.a0.stringValue, messageAttributes.a9.stringValue]`,
			m: events.SQSMessage{MessageId: "m-1", Body: "{}", MessageAttributes: attrs}},
	}
	// The gzip body: 10,916 bytes that inflate to 8 MiB of numbers
	// (the old evaluator allocated 1,021 MB for it), and a body that
	// inflates to 1 MiB of numbers.
	bomb := gzipBase64("[" + strings.Repeat("0,", 4<<20-2) + "0]")
	cases = append(cases,
		hostile{name: fmt.Sprintf("a %d-byte gzip body of 8 MiB", len(bomb)), expr: `powertools_json(powertools_base64_gzip(body))[0]`,
			m: events.SQSMessage{MessageId: "m-1", Body: bomb}, decoded: mib + 1},
		hostile{name: "gzip of 1 MiB of numbers, a projection", expr: `powertools_json(powertools_base64_gzip(body))[*]`,
			m: events.SQSMessage{MessageId: "m-1", Body: gzipWide}, decoded: len(wideNumbers)},
		hostile{name: "gzip of 1 MiB of numbers, the whole body", expr: `powertools_json(powertools_base64_gzip(body))`,
			m: events.SQSMessage{MessageId: "m-1", Body: gzipWide}, decoded: len(wideNumbers)},
	)
	for i, c := range cases {
		if c.name == "1 MiB of base64" {
			cases[i].decoded = base64.StdEncoding.DecodedLen(len(c.m.Body))
		}
	}
	return cases
}

// recordBytes is the bytes of the message's strings.
func recordBytes(m events.SQSMessage) int {
	n := len(m.Body) + len(m.MessageId)
	for k, a := range m.MessageAttributes {
		n += len(k) + len(a.DataType)
		if a.StringValue != nil {
			n += len(*a.StringValue)
		}
	}
	return n
}

// ceiling is the package's stated bound on one evaluation's allocations:
// 16 times the record's bytes and what was decoded, plus 1 MiB.
func ceiling(h hostile) uint64 { return uint64(16*(recordBytes(h.m)+h.decoded) + mib) }

// allocatedBy is the bytes one call of Select allocates (after one to warm
// up).
func allocatedBy(e *jmespath.Expression, m events.SQSMessage) (uint64, error) {
	var err error
	_, err = e.Select(m)
	worst := uint64(0)
	for range 1 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = e.Select(m)
		runtime.ReadMemStats(&after)
		worst = max(worst, after.TotalAlloc-before.TotalAlloc)
	}
	return worst, err
}

// TestAllocationCeiling: on hostile messages up to SQS's 1 MiB, one
// evaluation allocates at most the stated ceiling, accepted or refused
// (issue 15, item 3: the old evaluator allocated 1,021 MB for the
// 10,916-byte gzip body and 125 MB for a plain 1 MiB one).
func TestAllocationCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 1 MiB messages")
	}
	for _, h := range hostileMessages() {
		t.Run(h.name, func(t *testing.T) {
			got, err := allocatedBy(jmespath.MustCompile(h.expr), h.m)
			limit := ceiling(h)
			outcome := "accepted"
			if err != nil {
				outcome = "refused: " + reason(err)
			}
			t.Logf("%d-byte record, %d decoded: %.2f MiB allocated (ceiling %.2f MiB), %s",
				recordBytes(h.m), h.decoded, float64(got)/mib, float64(limit)/mib, outcome)
			if got > limit {
				t.Errorf("%.2f MiB allocated, above the ceiling of %.2f MiB", float64(got)/mib, float64(limit)/mib)
			}
		})
	}
}

// BenchmarkHostile is the time and allocations of one evaluation of each
// hostile message.
func BenchmarkHostile(b *testing.B) {
	for _, h := range hostileMessages() {
		e := jmespath.MustCompile(h.expr)
		b.Run(h.name, func(b *testing.B) {
			b.SetBytes(int64(recordBytes(h.m) + h.decoded))
			b.ReportAllocs()
			for b.Loop() {
				e.Select(h.m) //nolint:errcheck // refusals are part of what is measured
			}
		})
	}
}
