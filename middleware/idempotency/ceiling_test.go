package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// maxBody is SQS's largest message.
const maxBody = 1 << 20

// hostileBodies are bodies of up to maxBody bytes built to cost the most
// to read: deep, wide, long, huge numbers, in the key and beside it.
func hostileBodies() []struct{ name, body string } {
	fill := func(prefix, unit, suffix string) string {
		n := (maxBody - len(prefix) - len(suffix)) / len(unit)
		return prefix + strings.Repeat(unit, n) + suffix
	}
	deep := func(prefix, open, close, suffix string, n int) string {
		return prefix + strings.Repeat(open, n) + strings.Repeat(close, n) + suffix
	}
	wideObject := func(prefix, suffix string) string {
		var b strings.Builder
		b.WriteString(prefix + "{")
		for i := 0; b.Len() < maxBody-len(suffix)-40; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"Σk` + strconv.Itoa(i) + `":` + strconv.Itoa(i%10))
		}
		return b.String() + "}" + suffix
	}
	return []struct{ name, body string }{
		{"deep arrays beside the key", deep(`{"k":"x","d":`, "[", "]", "}", 10000)},
		{"deep objects beside the key", deep(`{"k":"x","d":`, `{"a":`, "}", "1}", 9999)},
		{"too deep", deep(`{"k":"x","d":`, "[", "]", "}", 200000)},
		{"huge number beside the key", fill(`{"k":"x","n":`, "9", "}")},
		{"huge number as the key", fill(`{"k":`, "9", "}")},
		{"long escaped string beside the key", fill(`{"k":"x","s":"`, `\u00e9`, `"}`)},
		{"long string as the key", fill(`{"k":"`, `é😀\n\"<`, `"}`)},
		{"wide array as the key", fill(`{"k":[0`, ",0", "]}")},
		{"wide array of strings as the key", fill(`{"k":[""`, `,"a"`, "]}")},
		{"wide array of objects as the key", fill(`{"k":[{}`, ",{}", "]}")},
		{"wide object as the key", wideObject(`{"k":`, "}")},
		{"wide object beside the key", wideObject(`{"k":"x","o":`, "}")},
		{"deep arrays as the key", deep(`{"k":`, "[", "]", "}", 9999)},
		{"deep objects as the key", deep(`{"k":`, `{"Σa":`, "}", "1}", 9998)},
		{"many members beside the key", fill(`{"k":"x"`, `,"a":0`, "}")},
		// White space wherever RFC 8259 allows it (issue 25): around every
		// token, in a pretty printer's layout, in one long run.
		{"white space around the key", fill(`{ "k" : "x" ,`, " \t\r\n", `"s" : "y" }`)},
		{"white space in the key", fill(`{"k" : [`, " \n", `0 ] , "s" : "y"}`)},
		{"wide object as the key, pretty-printed", prettyObject(`{"k" : `, "}")},
		{"wide object beside the key, pretty-printed", prettyObject(`{"k" : "x" , "o" : `, "}")},
		{"wide array spaced as the key", fill(`{ "k" : [ 0`, " , 0", " ] }")},
		{"deep objects spaced as the key", deep(`{ "k" : `, `{ "Σa" : `, " }", "1 }", 9998)},
		{"many spaced members beside the key", fill(`{ "k" : "x"`, " ,\n  \"a\" : 0", "\n}")},
	}
}

// prettyObject is a wide object laid out as Jackson's pretty printer lays
// it out, "name" : value, one member a line, after prefix and before
// suffix, about maxBody bytes in all.
func prettyObject(prefix, suffix string) string {
	var b strings.Builder
	b.WriteString(prefix + "{")
	for i := 0; b.Len() < maxBody-len(suffix)-40; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  \"Σk" + strconv.Itoa(i) + `" : ` + strconv.Itoa(i%10))
	}
	return b.String() + "\n}" + suffix
}

type hostileRaw struct {
	K json.RawMessage `json:"k"`
}

type hostileAny struct {
	K any            `json:"k"`
	D any            `json:"d"`
	N json.Number    `json:"n"`
	S string         `json:"s"`
	O map[string]any `json:"o"`
}

// ceilingSurface is one way of reading a body: a key source and the
// record id, in one format.
type ceilingSurface struct {
	name    string
	ceiling func(n int) uint64 // the most bytes a record of n bytes may allocate
	run     func(g *idempotency.Guard, m events.SQSMessage)
}

// ceiling16 is the stated ceiling: 16 times the body, and 1 MiB.
func ceiling16(n int) uint64 { return 16*uint64(n) + 1<<20 }

func ceilingSurfaces() []ceilingSurface {
	key := func(fn idempotency.Selector) func(*idempotency.Guard, events.SQSMessage) {
		return func(g *idempotency.Guard, m events.SQSMessage) {
			if k, err := idempotency.Select(fn, m); err == nil {
				g.ID(k) //nolint:errcheck // a refusal costs too
			}
		}
	}
	typed := func(body any) func(*idempotency.Guard, events.SQSMessage) {
		return func(g *idempotency.Guard, m events.SQSMessage) {
			switch b := body.(type) {
			case jsonBody[hostileRaw]:
				wrapJSON(g, b, func(context.Context, hostileRaw, events.SQSMessage) (int, error) { return 1, nil })(context.Background(), m) //nolint:errcheck
			case jsonBody[hostileAny]:
				wrapJSON(g, b, func(context.Context, hostileAny, events.SQSMessage) (int, error) { return 1, nil })(context.Background(), m) //nolint:errcheck
			}
		}
	}
	return []ceilingSurface{
		{"BodyField", ceiling16, key(idempotency.BodyField("k"))},
		{"BodySubset", ceiling16, key(idempotency.BodySubset("k", "s"))},
		{"WrapJSON, json.RawMessage", ceiling16, typed(jsonBody[hostileRaw]{Key: idempotency.BodyField("k")})},
		// Decoding into an any is encoding/json's, and so is encoding it
		// again for the key: a []any of half a million zeros costs about 100
		// bytes an element, 10,000 nested arrays about 3 MB.
		{"WrapJSON, any", func(n int) uint64 { return 80*uint64(n) + 4<<20 }, typed(jsonBody[hostileAny]{Key: idempotency.BodyField("k")})},
	}
}

// formatGuard is a guard over memory in format f that logs nothing.
func formatGuard(tb testing.TB, f idempotency.Format) *idempotency.Guard {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: f, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// allocated returns the bytes fn allocates, averaged over runs.
func allocated(runs int, fn func()) uint64 {
	fn() // warm caches, as a running function has them
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		fn()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestMemoryCeilings (issue 15 item 4): every surface that reads message
// content allocates at most its ceiling per record for every hostile body
// of up to 1 MiB, in every format: 16 times the body and 1 MiB, except
// WrapJSON decoding into an any (80 times and 4 MiB), whose decoding is
// encoding/json's. `make test` runs it without -race (see raceDetector);
// SQSONCE_CEILINGS=1 logs every measure.
func TestMemoryCeilings(t *testing.T) {
	if raceDetector {
		t.Skip("allocation is measured without -race: make test runs this test again without it")
	}
	worst := map[string]string{}
	worstRatio := map[string]float64{}
	for _, f := range allFormats {
		g := formatGuard(t, f)
		for _, s := range ceilingSurfaces() {
			for _, b := range hostileBodies() {
				m := events.SQSMessage{MessageId: "m-1", Body: b.body}
				got := allocated(1, func() { s.run(g, m) })
				if limit := s.ceiling(len(b.body)); got > limit {
					t.Errorf("%s, %v, %s (%d bytes): %d bytes allocated, over the ceiling of %d", s.name, f, b.name, len(b.body), got, limit)
				}
				if os.Getenv("SQSONCE_CEILINGS") != "" {
					t.Logf("%s, %v, %s: %.1f MB, %.1f× the body", s.name, f, b.name, float64(got)/1e6, float64(got)/float64(len(b.body)))
				}
				if r := float64(got) / float64(s.ceiling(len(b.body))); r > worstRatio[s.name] {
					worstRatio[s.name] = r
					worst[s.name] = fmt.Sprintf("%d bytes for a body of %d (%.0f %% of the ceiling), %v, %s", got, len(b.body), 100*r, f, b.name)
				}
			}
		}
	}
	for _, s := range ceilingSurfaces() {
		t.Logf("%s: worst %s", s.name, worst[s.name])
	}
}

// BenchmarkHostileBodies is the time per record of each surface on each
// hostile body, in every format: MB/s over the body (make bench). The time
// is linear in the body: compare with -benchtime and a body cut in half.
func BenchmarkHostileBodies(b *testing.B) {
	for _, f := range allFormats {
		g := formatGuard(b, f)
		for _, s := range ceilingSurfaces() {
			for _, h := range hostileBodies() {
				m := events.SQSMessage{MessageId: "m-1", Body: h.body}
				b.Run(fmt.Sprintf("%v/%s/%s", f, s.name, h.name), func(b *testing.B) {
					b.SetBytes(int64(len(h.body)))
					b.ReportAllocs()
					for b.Loop() {
						s.run(g, m)
					}
				})
			}
		}
	}
}
