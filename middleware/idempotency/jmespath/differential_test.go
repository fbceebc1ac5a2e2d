package jmespath_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/jsonkey"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

var long = flag.Bool("long", false, "run the differential test's long profile (make fuzz)")

// pythonRef evaluates each case with Powertools Python's recipe: the
// jmespath module (1.1, as Powertools Python requires) with Powertools'
// three functions (aws_lambda_powertools/shared/jmespath_functions.py,
// copied), then md5 of json.dumps(selection, sort_keys=True).
const pythonRef = `
import sys, json, hashlib, base64, gzip, warnings
warnings.simplefilter("ignore")
import jmespath
from jmespath import functions

class PowertoolsFunctions(functions.Functions):
    @functions.signature({"types": ["string"]})
    def _func_powertools_json(self, value):
        return json.loads(value)

    @functions.signature({"types": ["string"]})
    def _func_powertools_base64(self, value):
        return base64.b64decode(value).decode()

    @functions.signature({"types": ["string"]})
    def _func_powertools_base64_gzip(self, value):
        encoded = base64.b64decode(value)
        uncompressed = gzip.decompress(encoded)
        return uncompressed.decode()

opts = jmespath.Options(custom_functions=PowertoolsFunctions())
for line in sys.stdin:
    q = json.loads(line)
    try:
        r = jmespath.search(q["expr"], q["record"], options=opts)
        print("ok", hashlib.md5(json.dumps(r, sort_keys=True).encode()).hexdigest())
    except Exception as e:
        print("err", type(e).__name__)
`

// typescriptRef evaluates each case with the pinned Powertools TypeScript:
// its persistence layer's getHashedIdempotencyKey, configured with the
// expression as eventKeyJmesPath.
const typescriptRef = `
import { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { readFileSync } from 'node:fs';
class Hasher extends BasePersistenceLayer {
  async _getRecord() {} async _putRecord() {} async _updateRecord() {} async _deleteRecord() {}
}
console.warn = () => {};
const layers = new Map();
const out = [];
for (const line of readFileSync(0, 'utf8').split('\n').slice(0, -1)) {
  const q = JSON.parse(line);
  try {
    let h = layers.get(q.expr);
    if (!h) {
      h = new Hasher();
      h.configure({ config: new IdempotencyConfig({ eventKeyJmesPath: q.expr }), keyPrefix: 'fn' });
      layers.set(q.expr, h);
    }
    out.push('ok ' + h.getHashedIdempotencyKey(q.record).slice(3));
  } catch (e) {
    out.push('err ' + e.constructor.name);
  }
}
console.log(out.join('\n'));
`

// diffCase is one expression on one record.
type diffCase struct {
	expr string
	m    events.SQSMessage
}

// runRef runs a reference over the cases: one answer line each.
func runRef(t *testing.T, dir string, cases []diffCase, name string, args ...string) []string {
	t.Helper()
	var in bytes.Buffer
	for _, c := range cases {
		line, err := json.Marshal(map[string]any{"expr": c.expr, "record": c.m})
		if err != nil {
			t.Fatal(err)
		}
		in.Write(line)
		in.WriteByte('\n')
	}
	return runLines(t, dir, in.Bytes(), len(cases), name, args...)
}

// runLines runs a command on input, one JSON line a case, and returns its
// n answer lines.
func runLines(t *testing.T, dir string, input []byte, n int, name string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, stderr.Bytes())
	}
	var answers []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		answers = append(answers, sc.Text())
	}
	if len(answers) != n {
		t.Fatalf("%s answered %d lines for %d cases\n%s", name, len(answers), n, stderr.Bytes())
	}
	return answers
}

func peerMissing(t *testing.T, what string, err error) {
	t.Helper()
	testproc.Unavailable(t, what, err, "install it, or run make test, which does")
}

// peers returns python3 (with the jmespath module), node, and the folder
// of the pinned Powertools TypeScript packages; a test without them is
// skipped, or fails under CI=true.
func peers(t *testing.T) (python, node, dir string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(python, "-c", "import jmespath").Run()
	}
	if err != nil {
		peerMissing(t, "python3 with the jmespath module (it comes with boto3 and moto)", err)
	}
	dir, _ = filepath.Abs(filepath.Join("..", "..", "..", "internal", "testenv", "powertools", "testdata"))
	node, err = exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@aws-lambda-powertools", "idempotency", "package.json"))
	}
	if err != nil {
		peerMissing(t, "node with @aws-lambda-powertools/idempotency in "+dir, err)
	}
	return python, node, dir
}

// references returns the two references' answers for the cases.
func references(t *testing.T, cases []diffCase) (py, ts []string) {
	t.Helper()
	python, node, dir := peers(t)
	return runRef(t, "", cases, python, "-c", pythonRef), runRef(t, dir, cases, node, "--input-type=module", "-e", typescriptRef)
}

// TestDifferential evaluates generated expressions on generated records
// with this package and with both references: every selection Select
// accepts must hash, in each Powertools format, to what that runtime
// computes (a runtime that fails must be met by a refusal). It reports how
// many cases it ran, how many each runtime computed and how many Select
// refused, by reason.
func TestDifferential(t *testing.T) {
	n := 2500
	if *long {
		n = 40000
	}
	cases := append(corpus(), generated(n)...)
	py, ts := references(t, cases)
	accepted, refused, failures := 0, map[string]int{}, 0
	agree := [2]int{}
	// Injectivity in the native format: two accepted cases with one record
	// id select the same value under RFC 8785, under one expression.
	native := map[string]string{}
	for i, c := range cases {
		k, err := selectKey(c)
		ref := [2]string{py[i], ts[i]}
		for r := range ref {
			if strings.HasPrefix(ref[r], "ok ") {
				agree[r]++
			}
		}
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Errorf("%s on %s: %v", c.expr, c.m.Body, err)
			}
			refused[reason(err)]++
			continue
		}
		accepted++
		if id, err := idempotency.FormatNative.Hash(k); err == nil {
			var canon bytes.Buffer
			if err := jsonkey.WriteCanonical(&canon, string(k.Value)); err != nil {
				t.Fatalf("%s: selection %s: %v", c.expr, k.Value, err)
			}
			sel := k.Selector + "\x00" + canon.String()
			if prev, ok := native[id]; ok && prev != sel {
				t.Errorf("native id %s for two selections:\n %q\n %q", id, prev, sel)
			}
			native[id] = sel
		}
		ours := [2]string{}
		for r, f := range []idempotency.Format{idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript} {
			h, err := f.Hash(k)
			if err != nil {
				ours[r] = "hash error: " + err.Error()
			} else {
				ours[r] = "ok " + h
			}
		}
		if ours != ref {
			failures++
			t.Errorf("expression %s\nbody %s\nattributes %v\nselection %s\n python: ours %s, runtime %s\n typescript: ours %s, runtime %s",
				c.expr, c.m.Body, c.m.MessageAttributes, k.Value, ours[0], ref[0], ours[1], ref[1])
			if failures > 10 {
				t.FailNow()
			}
		}
	}
	reasons := make([]string, 0, len(refused))
	for r, n := range refused {
		reasons = append(reasons, fmt.Sprintf("%5d %s", n, r))
	}
	sort.Strings(reasons)
	t.Logf("%d cases: %d accepted and equal to both runtimes; Python computed %d, TypeScript %d; refused:\n%s",
		len(cases), accepted, agree[0], agree[1], strings.Join(reasons, "\n"))
	if accepted < len(cases)/3 {
		t.Errorf("only %d of %d cases accepted: the generator no longer exercises selections", accepted, len(cases))
	}
}

func selectKey(c diffCase) (idempotency.Selection, error) {
	e, err := jmespath.Compile(c.expr)
	if err != nil {
		return idempotency.Selection{}, fmt.Errorf("compile: %w", err)
	}
	return e.Select(c.m)
}

// reason is an error's kind, for the tally: its message up to the first
// detail.
func reason(err error) string {
	var ke *idempotency.KeyError
	if errors.As(err, &ke) {
		err = ke.Err
	}
	if errors.Is(err, idempotency.ErrNoKey) {
		return "no key"
	}
	s := err.Error()
	if strings.HasPrefix(s, "compile: ") {
		return "compile"
	}
	if i := strings.Index(s, " at offset"); i > 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ": expects"); i > 0 {
		s = s[:i]
	}
	if len(s) > 90 {
		s = s[:90]
	}
	return s
}

// corpus is the issues' and documentation's expressions, on bodies that
// reach their edges.
func corpus() []diffCase {
	body := func(b string) events.SQSMessage { return events.SQSMessage{MessageId: "m-1", Body: b} }
	var out []diffCase
	add := func(expr string, bodies ...string) {
		for _, b := range bodies {
			out = append(out, diffCase{expr, body(b)})
		}
	}
	add("powertools_json(body).idempotency_key",
		`{"idempotency_key":"059f36b4-87a3-44ab-83d2-661975830a7d"}`, `{"idempotency_key":"\ud800"}`,
		`{"idempotency_key":"\udbff"}`, `{"idempotency_key":"\ufffd"}`, `{"idempotency_key":9007199254740993}`,
		`{"idempotency_key":10.0}`, `{"idempotency_key":1e400}`, `{"idempotency_key":{"b":1,"B":2,"a":1}}`,
		`{"idempotency_key":1,"idempotency_key":2}`, `{"a":{"x":1},"a":{"x":2},"idempotency_key":"k"}`)
	add("powertools_json(body).items[?qty > `0`]",
		`{"items":[{"qty":9007199254740993},{"qty":9007199254740992}]}`, `{"items":[{"qty":10},{"qty":10.0},{"qty":0}]}`,
		`{"items":[{"qty":1,"sku":"a"},{"qty":0.5}]}`)
	add("powertools_json(body).items[?qty > `9007199254740992`].sku", `{"items":[{"qty":9007199254740993,"sku":"a"}]}`)
	add("keys(powertools_json(body))", `{"b":1,"a":2,"10":3}`, `{"b":1,"a":2}`, `{"1":1,"2":2,"x":3}`)
	add("values(powertools_json(body))", `{"b":1,"a":2,"10":3}`, `{"b":1,"a":2}`)
	add("powertools_json(body).*", `{"b":1,"a":2,"10":3}`, `{"b":1,"a":2}`)
	add("powertools_json(body).k | length(@)", `{"k":"😀"}`, `{"k":"a"}`, `{"k":"é"}`)
	add("sort(powertools_json(body).k)", `{"k":["b","a","B"]}`, `{"k":["b","a","c10","c9"]}`, `{"k":[3,1,2.5]}`, `{"k":["_","-"]}`)
	add("powertools_json(body).[sort(k), k]", `{"k":["b","a"]}`, `{"k":["a","b"]}`)
	add("powertools_json(body).[k, reverse(k)]", `{"k":[1,2]}`)
	add("to_string(powertools_json(body).k)", `{"k":"<"}`, `{"k":1.0}`, `{"k":1}`, `{"k":{"a":"é"}}`, `{"k":{"a":[1,2]}}`,
		`{"k":1e16}`, `{"k":0.00001}`, `{"k":{"b":1,"1":2}}`)
	add("powertools_base64(powertools_json(body).k)", `{"k":"YWJj"}`, `{"k":"YWJj\n"}`, `{"k":"/g=="}`, `{"k":"/w=="}`,
		`{"k":"77u/YQ=="}`, `{"k":"YR=="}`)
	add("powertools_json(body).k | map(&a, @)", `{"k":[{"a":0},{"a":1}]}`, `{"k":[{"a":"x"},{"a":null}]}`)
	add("powertools_json(body).k | not_null(a, b)", `{"k":{"a":null,"b":0}}`, `{"k":{"a":null,"b":"x"}}`)
	add("powertools_json(body).k | contains(@, `1`)", `{"k":[true]}`, `{"k":[1.0]}`, `{"k":[9007199254740993]}`)
	add("powertools_json(body).k | [@ == `[1]`]", `{"k":[true]}`, `{"k":[1.0]}`)
	add("powertools_json(body).k | sum(@)", `{"k":[1,2]}`, `{"k":[0.1,0.2]}`, `{"k":[0.5,0.25]}`, `{"k":[1,2.0]}`)
	add("powertools_json(body).k | avg(@)", `{"k":[1,2]}`, `{"k":[]}`)
	add("powertools_json(body).k | [ceil(@), floor(@)]", `{"k":2.5}`, `{"k":-0.5}`, `{"k":1e300}`, `{"k":7}`)
	add("powertools_json(body).k.toString", `{"k":{}}`, `{"k":{"toString":1}}`)
	add("powertools_json(body).a[?b].c[?d]", `{"a":[{"b":1,"c":[{"d":1}]}]}`)
	add("powertools_json(body).k | to_number(@)", `{"k":"12"}`, `{"k":" 12"}`, `{"k":"1_000"}`, `{"k":"1.50"}`, `{"k":""}`)
	add("powertools_json(body).k | [@ < 'b']", `{"k":"a"}`, `{"k":"c"}`)
	add("powertools_json(body).k[?@ < 'b']", `{"k":["a","c"]}`)
	add("powertools_json(body).k | max(@)", `{"k":["\ue000","😀"]}`, `{"k":[1,1.0]}`)
	add("sort(powertools_json(body).k)", `{"k":["b","a10","a9"]}`, `{"k":[3,1.5,2]}`)
	add("to_string(powertools_json(body).k)", `{"k":{"a":"<&>"}}`, `{"k":[1,-2]}`)
	add("powertools_base64(powertools_json(body).k)", `{"k":"w6k="}`)
	add("powertools_base64_gzip(powertools_json(body).k)", `{"k":"`+gzipBase64("\ufeffa")+`"}`, `{"k":"`+gzipBase64("\xff")+`"}`)
	add("keys(powertools_json(body))", `{"b":1,"a":2,"c":3}`)
	add("length(powertools_json(body).k)", `{"k":"é中"}`)
	return out
}

// generated returns n cases: random expressions over random bodies.
func generated(n int) []diffCase {
	r := rand.New(rand.NewPCG(20, 15))
	out := make([]diffCase, 0, n)
	for range n {
		g := &gen{r: r}
		body, expr := g.doc(0), g.expr(0)
		if r.IntN(5) < 2 {
			body, expr = g.typed()
		}
		m := events.SQSMessage{MessageId: "m-" + strconv.Itoa(r.IntN(1000)), Body: body, EventSource: "aws:sqs",
			Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"}}
		switch r.IntN(8) {
		case 0:
			m.Body = base64.StdEncoding.EncodeToString([]byte(body))
			expr = "powertools_json(powertools_base64(body)) | " + expr
		case 1:
			m.Body = gzipBase64(body)
			expr = "powertools_json(powertools_base64_gzip(body)) | " + expr
		case 2:
			v := body
			m.MessageAttributes = map[string]events.SQSMessageAttribute{"k": {DataType: "String", StringValue: &v}}
			expr = "powertools_json(messageAttributes.k.stringValue) | " + expr
		case 3:
			expr = g.recordExpr()
		default:
			expr = "powertools_json(body) | " + expr
		}
		out = append(out, diffCase{expr, m})
	}
	return out
}

func gzipBase64(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s)) //nolint:errcheck // a bytes.Buffer does not fail
	w.Close()          //nolint:errcheck
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

type gen struct{ r *rand.Rand }

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

var (
	genNames   = []string{"a", "b", "c", "id", "k", "A", "B", "é", "7", "10", "0", "constructor", "toString", "x y"}
	genNumbers = []string{"0", "-0", "1", "1.0", "10", "10.0", "2.5", "0.1", "0.2", "1e2", "1E+21", "1e21", "-3",
		"9007199254740992", "9007199254740993", "-9007199254740993", "123456789012345678901234567890",
		"1e400", "1e-400", "0.30000000000000004", "5e-324", "1e16", "0.00001", "7", "100"}
	genStrings = []string{`""`, `"a"`, `"b"`, `"B"`, `"ab"`, `"abc"`, `"ABC"`, `"a1"`, `"10"`, `"9"`, `"é"`, `"\u00e9"`,
		`"😀"`, `"\ud83d\ude00"`, `"\ue000"`, `"\uffff"`, `"x\ny"`, `"<tag>&"`, `"_"`, `"-"`, `"\u007f"`,
		`"12"`, `" 12"`, `"1.50"`, `"YWJj"`, `"YWJj\n"`, `"/g=="`, `"77u/YQ=="`, `"YR=="`, `"e30="`}
)

func (g *gen) doc(depth int) string {
	switch n := g.r.IntN(10); {
	case n < 3 && depth < 3:
		var parts []string
		names := g.r.Perm(len(genNames))[:g.r.IntN(5)]
		if len(names) > 1 && g.r.IntN(30) == 0 {
			names[1] = names[0] // a duplicate member name
		}
		for _, i := range names {
			parts = append(parts, strconv.Quote(genNames[i])+":"+g.doc(depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case n < 5 && depth < 3:
		var parts []string
		for range g.r.IntN(5) {
			parts = append(parts, g.doc(depth+1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case n < 7:
		return genNumbers[g.r.IntN(len(genNumbers))]
	case n < 9:
		if g.r.IntN(40) == 0 {
			return `"\ud800"` // a lone surrogate
		}
		return genStrings[g.r.IntN(len(genStrings))]
	}
	return g.pick("true", "false", "null")
}

func (g *gen) name() string {
	n := genNames[g.r.IntN(len(genNames))]
	if n[0] >= 'a' && n[0] <= 'z' || n[0] >= 'A' && n[0] <= 'Z' {
		if !strings.ContainsAny(n, " é") {
			return n
		}
	}
	return strconv.Quote(n)
}

func (g *gen) literal() string {
	switch g.r.IntN(4) {
	case 0:
		return "`" + genNumbers[g.r.IntN(len(genNumbers))] + "`"
	case 1:
		return "'" + g.pick("a", "b", "B", "abc", "x y") + "'"
	case 2:
		return "`" + g.pick("true", "false", "null", "[1,2]", `{"a":1}`, `"b"`) + "`"
	}
	return "`" + genStrings[g.r.IntN(len(genStrings))] + "`"
}

var genFuncs = []string{"abs", "avg", "ceil", "contains", "ends_with", "floor", "join", "keys", "length", "map",
	"max", "max_by", "merge", "min", "min_by", "not_null", "reverse", "sort", "sort_by", "starts_with", "sum",
	"to_array", "to_number", "to_string", "type", "values"}

func (g *gen) expr(depth int) string {
	if depth > 3 {
		return g.pick("@", g.name(), g.literal())
	}
	switch g.r.IntN(22) {
	case 0, 1, 2:
		return g.name()
	case 3:
		return g.expr(depth+1) + "." + g.name()
	case 4:
		return g.expr(depth+1) + "[" + g.pick("0", "1", "-1") + "]"
	case 5:
		return g.expr(depth+1) + "[" + g.pick("::-1", "1:", ":2", "::2") + "]"
	case 6:
		return g.expr(depth+1) + "[*]." + g.name()
	case 7:
		return g.expr(depth+1) + ".*"
	case 8:
		return g.expr(depth+1) + "[]"
	case 9:
		return g.expr(depth+1) + "[?" + g.cond(depth+1) + "]"
	case 10:
		return g.cond(depth + 1)
	case 11:
		return "[" + g.expr(depth+1) + ", " + g.expr(depth+1) + "]"
	case 12:
		return "{" + g.name() + ": " + g.expr(depth+1) + ", " + g.name() + ": " + g.expr(depth+1) + "}"
	case 13:
		return g.expr(depth+1) + " || " + g.expr(depth+1)
	case 14:
		return g.expr(depth+1) + " | " + g.expr(depth+1)
	case 15:
		return g.literal()
	case 16:
		return "@"
	}
	f := genFuncs[g.r.IntN(len(genFuncs))]
	switch f {
	case "map", "sort_by":
		if f == "map" {
			return "map(&" + g.expr(depth+1) + ", " + g.expr(depth+1) + ")"
		}
		return f + "(" + g.expr(depth+1) + ", &" + g.expr(depth+1) + ")"
	case "max_by", "min_by":
		return f + "(" + g.expr(depth+1) + ", &" + g.expr(depth+1) + ")"
	case "contains", "ends_with", "starts_with", "join":
		return f + "(" + g.expr(depth+1) + ", " + g.expr(depth+1) + ")"
	case "merge", "not_null":
		return f + "(" + g.expr(depth+1) + ", " + g.expr(depth+1) + ")"
	}
	return f + "(" + g.expr(depth+1) + ")"
}

func (g *gen) cond(depth int) string {
	switch g.r.IntN(4) {
	case 0:
		return g.expr(depth+1) + " " + g.pick("==", "!=", "<", "<=", ">", ">=") + " " + g.literal()
	case 1:
		return g.expr(depth+1) + " " + g.pick("==", "!=", "<", ">") + " " + g.expr(depth+1)
	case 2:
		return "!" + g.expr(depth+1)
	}
	return g.expr(depth+1) + " && " + g.expr(depth+1)
}

// typed returns a body of known shape, with tricky values, and an
// expression that applies a function to the members of the right types.
func (g *gen) typed() (string, string) {
	nums := func() string {
		var xs []string
		for range g.r.IntN(5) {
			xs = append(xs, genNumbers[g.r.IntN(len(genNumbers))])
		}
		return "[" + strings.Join(xs, ",") + "]"
	}
	strs := func() string {
		var xs []string
		for range g.r.IntN(5) {
			xs = append(xs, genStrings[g.r.IntN(len(genStrings))])
		}
		return "[" + strings.Join(xs, ",") + "]"
	}
	objs := func() string {
		var xs []string
		for range g.r.IntN(4) {
			xs = append(xs, fmt.Sprintf(`{"k":%s,"s":%s,"n":%s}`, g.doc(2), genStrings[g.r.IntN(len(genStrings))], genNumbers[g.r.IntN(len(genNumbers))]))
		}
		return "[" + strings.Join(xs, ",") + "]"
	}
	body := fmt.Sprintf(`{"n":%s,"s":%s,"an":%s,"as":%s,"o":%s,"ao":%s,"b":%s,"x":%s}`,
		genNumbers[g.r.IntN(len(genNumbers))], genStrings[g.r.IntN(len(genStrings))], nums(), strs(), g.doc(1), objs(),
		g.pick("true", "false"), g.doc(0))
	expr := g.pick(
		"abs(n)", "ceil(n)", "floor(n)", "to_string(n)", "to_number(s)", "length(s)", "reverse(s)", "to_string(s)",
		"sum(an)", "avg(an)", "max(an)", "min(an)", "sort(an)", "reverse(an)", "max(as)", "min(as)", "sort(as)",
		"join('-', as)", "contains(as, s)", "contains(an, n)", "contains(an, b)", "contains(s, 'a')", "starts_with(s, 'a')",
		"keys(o)", "values(o)", "o.*", "to_string(o)", "length(o)", "merge(o, {z: n})", "to_string(ao)",
		"sort_by(ao, &n)", "sort_by(ao, &s)", "max_by(ao, &n)", "min_by(ao, &s)", "map(&k, ao)", "map(&n, ao)",
		"ao[?n > `1`].s", "ao[?s < 'b']", "ao[?k == `true`]", "ao[?n == `1`]", "an[?@ >= `10`]", "an[? @ == `1.0`]",
		"[n == `1`, n < `9007199254740992`]", "not_null(ao[0].k, n)", "to_array(an)", "type(n)", "an[::-1]",
		"an[1:]", "[sort(an), an]", "[an, reverse(an)]", "[sort(as)[0], as[0]]", "ao[].k", "ao[*].[n, s]",
		"{a: an, b: sort(as)}", "an | [0]", "x", "x.*", "keys(x)", "to_string(x)", "length(x)", "ao[?contains(`[1, true]`, k)]",
		"ao | sort_by(@, &k)", "an | max_by(@, &@)", "[b, !b, b && n, b || s]", "an[?@ > `0`] | sum(@)")
	return body, expr
}

func (g *gen) recordExpr() string {
	return g.pick("messageId", "attributes", "attributes.ApproximateReceiveCount", "keys(attributes)", "values(attributes)",
		"attributes.*", "@", "length(attributes)", "to_string(attributes)", "eventSource", "[messageId, eventSource]",
		"{id: messageId}", "length(@)", "keys(@)", "messageAttributes", "merge(attributes)", "attributes.toString")
}
