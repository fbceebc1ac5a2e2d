package idempotency_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// selections are the JSON values the differential tests hash: the worked
// examples, then generated values, each spelled as a producer might.
func selections() []string {
	out := []string{
		`"059f36b4-87a3-44ab-83d2-661975830a7d"`,
		`{"amount": 10.5, "name": "Zo\u00eb", "product_id": "p1", "user_id": "u1"}`,
		`10`, `10.0`, `1e-05`, `1E+300`, `-0`, `-0.0`, `1e400`, `-1e400`, `5e-324`, `1.7976931348623157e308`,
		`{"b":1,"B":2,"a":1,"A":2,"_":3,"10":4,"9":5,"__proto__":6}`, `{"a":1,"a":2}`, `"\ud800\udc00\ud800x\udfff"`,
	}
	r := rand.New(rand.NewPCG(8, 9))
	for range 1200 {
		out = append(out, genValue(r, 0))
	}
	for range 10 { // objects large enough for V8's sort to merge runs, with case ties
		var members []string
		for j := range 40 + r.IntN(40) {
			k := genKeys[r.IntN(len(genKeys))] + []string{"", "k", "K"}[r.IntN(3)] + strconv.Itoa(j%7)
			members = append(members, `"`+k+`":`+strconv.Itoa(j))
		}
		out = append(out, "{"+strings.Join(members, ",")+"}")
	}
	return out
}

var genKeys = []string{"a", "A", "b", "B", "ab", "Ab", "aB", "AB", "id", "Id", "ID", "é", "É", "ß", "İ", "i", "Σ", "ΑΣ", "ας",
	"10", "9", "01", "4294967294", "4294967295", "", "user_id", "userId", "_x", "z", "Z", "😀", "\u00e9", `\u00c9`, "x y", `\"q\"`}

// genSpec says what a generator of JSON values makes.
type genSpec struct {
	keys     []string // object keys, written as they are (already escaped)
	literals []string // scalars beside generated strings and numbers
	numbers  []string // hand-picked numbers, sometimes given instead of generated ones
	maxDepth int      // the depth from which containers become rare
}

// basicGen is the generator of the differential tests.
var basicGen = genSpec{keys: genKeys, literals: []string{"true", "false", "null"}, maxDepth: 4}

func genValue(r *rand.Rand, depth int) string { return basicGen.value(r, depth) }

func (g genSpec) value(r *rand.Rand, depth int) string {
	n := r.IntN(10)
	if len(g.numbers) > 0 && r.IntN(6) == 0 {
		return g.numbers[r.IntN(len(g.numbers))]
	}
	if depth >= g.maxDepth && n < 3 {
		n += 3
	}
	switch n {
	case 0, 1: // an object, keys often differing only in case
		var b strings.Builder
		b.WriteByte('{')
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteString(", "[:1+r.IntN(2)])
			}
			b.WriteString(`"` + g.keys[r.IntN(len(g.keys))] + `":` + g.value(r, depth+1))
		}
		b.WriteByte('}')
		return b.String()
	case 2: // an array
		parts := make([]string, r.IntN(4))
		for i := range parts {
			parts[i] = g.value(r, depth+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case 3, 4:
		return genString(r)
	case 5:
		return g.literals[r.IntN(len(g.literals))]
	}
	return genNumber(r)
}

func genString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", " ", "~", `\"`, `\\`, `\/`, "/", `\n`, `\t`, `\r`, `\b`, `\f`, `\u0001`, `\u001f`, `\u007f`, "\x7f",
		"é", `\u00e9`, "中", `\u4e2d`, "\u2028", "😀", `\ud83d\ude00`, `\ud800`, `\udfff`, "𝄞", `\uFFFF`, "ﬀ", "<&>"}
	var b strings.Builder
	b.WriteByte('"')
	for range r.IntN(8) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteByte('"')
	return b.String()
}

func genNumber(r *rand.Rand) string {
	digits := func(n int) string {
		var b strings.Builder
		b.WriteByte(byte('1' + r.IntN(9)))
		for range n - 1 {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	sign := []string{"", "", "-"}[r.IntN(3)]
	switch r.IntN(6) {
	case 0:
		return sign + strconv.Itoa(r.IntN(1000))
	case 1:
		return sign + digits(1+r.IntN(30)) // beyond 2^53 too
	case 2:
		return sign + digits(1+r.IntN(4)) + ".0"
	case 3:
		return sign + "0." + strings.Repeat("0", r.IntN(8)) + digits(1+r.IntN(17))
	case 4:
		return sign + digits(1+r.IntN(17)) + "." + digits(1+r.IntN(5))
	}
	e := []string{"e", "E"}[r.IntN(2)] + []string{"", "+", "-"}[r.IntN(3)] + strconv.Itoa(r.IntN(330))
	if r.IntN(2) == 0 {
		return sign + digits(1+r.IntN(17)) + e
	}
	return sign + digits(1) + "." + digits(1+r.IntN(16)) + e
}

// runPeer runs a command that reads one JSON value per line on stdin and
// writes one answer per line.
func runPeer(t *testing.T, dir string, lines []string, name string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
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
	if len(answers) != len(lines) {
		t.Fatalf("%s answered %d lines for %d", name, len(answers), len(lines))
	}
	return answers
}

// powertoolsNode returns node and the directory of the pinned Powertools
// TypeScript packages (SQSONCE_POWERTOOLS_NODE_DIR, or the one make
// installs), failing under CI=true when they are missing.
func powertoolsNode(t *testing.T) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs(filepath.Join("..", "..", "internal", "testenv", "powertools", "testdata"))
	if d := os.Getenv("SQSONCE_POWERTOOLS_NODE_DIR"); d != "" {
		dir = d
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@aws-lambda-powertools", "idempotency", "package.json"))
	}
	if err != nil {
		peerMissing(t, "node with @aws-lambda-powertools/idempotency in "+dir, err)
	}
	return node, dir
}

// peerMissing skips a test whose peer is not installed, except under
// CI=true, where it fails.
func peerMissing(t *testing.T, what string, err error) {
	t.Helper()
	testproc.Unavailable(t, what, err, "install it, or run make test, which does")
}

// pythonIJSON defines ijson(text): whether JSON text is I-JSON (no
// duplicate member name, no lone surrogate; json.loads refuses invalid
// UTF-8 itself), for the python3 peers.
const pythonIJSON = `
import sys, json, hashlib
class Duplicate(Exception):
    pass
def unique(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise Duplicate()
        d[k] = v
    return d
def wellformed(x):
    if isinstance(x, str):
        return not any(0xd800 <= ord(c) <= 0xdfff for c in x)
    if isinstance(x, list):
        return all(wellformed(e) for e in x)
    if isinstance(x, dict):
        return all(wellformed(k) and wellformed(v) for k, v in x.items())
    return True
def ijson(text):
    try:
        return wellformed(json.loads(text, object_pairs_hook=unique))
    except Duplicate:
        return False
`

// pythonPeer answers each line with the md5 of json.dumps(sort_keys=True),
// whether the line is I-JSON (1 or 0), and the spelling hashed.
const pythonPeer = pythonIJSON + `
for line in sys.stdin.buffer:
    s = json.dumps(json.loads(line), sort_keys=True)
    print(hashlib.md5(s.encode()).hexdigest(), int(ijson(line)), s)
`

// pythonAnswer splits a pythonPeer answer.
func pythonAnswer(answer string) (hash string, ijson bool, spelling string) {
	hash, rest, _ := strings.Cut(answer, " ")
	flag, spelling, _ := strings.Cut(rest, " ")
	return hash, flag == "1", spelling
}

// TestPowertoolsPythonDifferential compares FormatPowertoolsPython with
// python3's own json.dumps(sort_keys=True) and hashlib.md5, for the record
// id (through a Guard) and the validation hash (stored by DoPayload).
func TestPowertoolsPythonDifferential(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		peerMissing(t, "python3", err)
	}
	sels := selections()
	answers := runPeer(t, "", sels, python, "-c", pythonPeer)
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "fn.app.handler",
		Format: idempotency.FormatPowertoolsPython, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	failures, refused := 0, 0
	for i, sel := range sels {
		wantHash, ijson, wantSpelling := pythonAnswer(answers[i])
		k := idempotency.Selection{Selector: "differential", Value: []byte(sel)}
		id, err := g.ID(k)
		if !ijson { // refused, never hashed with a loss
			if err == nil {
				t.Errorf("selection %s is not I-JSON (python3), yet has the id %s", sel, id)
			}
			refused++
			continue
		}
		if want := "fn.app.handler#" + wantHash; err != nil || id != want {
			got, _ := idempotency.Spell(idempotency.FormatPowertoolsPython, k)
			t.Errorf("selection %s:\n id %s, %v\nwant %s\n our spelling    %s\n python spelling %s", sel, id, err, want, got, wantSpelling)
			if failures++; failures > 10 {
				t.FailNow()
			}
			continue
		}
		if i%10 == 0 { // the validation hash, as the guard stores it
			key := idempotency.Raw(fmt.Appendf(nil, `"payload-%d"`, i))
			if _, err := idempotency.Do(context.Background(), g, key, func(context.Context) (int, error) { return i, nil }, idempotency.WithPayload(idempotency.Raw([]byte(sel)))); err != nil {
				t.Fatal(err)
			}
			if rec, _ := store.Get(mustID(t, g, key)); rec.Validation != wantHash {
				t.Errorf("selection %s: validation hash %q, want %q", sel, rec.Validation, wantHash)
			}
		}
	}
	t.Logf("%d selections agree with python3, %d of them refused as not I-JSON", len(sels), refused)
}

const nodePeer = `
import { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { readFileSync } from 'node:fs';
class Hasher extends BasePersistenceLayer {
  async _getRecord() {} async _putRecord() {} async _updateRecord() {} async _deleteRecord() {}
}
const h = new Hasher();
h.configure({ config: new IdempotencyConfig({}), keyPrefix: 'fn' });
const v = new Hasher();
v.configure({ config: new IdempotencyConfig({ payloadValidationJmesPath: '@' }), keyPrefix: 'fn' });
const out = [];
for (const line of readFileSync(0, 'utf8').split('\n').slice(0, -1)) {
  const data = JSON.parse(line);
  out.push(h.getHashedIdempotencyKey(data) + ' ' + v.getHashedPayload(data));
}
console.log(out.join('\n'));
`

// TestPowertoolsTypeScriptDifferential compares FormatPowertoolsTypeScript
// with Powertools TypeScript's own getHashedIdempotencyKey and
// getHashedPayload (the pinned package, installed by npm ci in
// internal/testenv/powertools/testdata).
func TestPowertoolsTypeScriptDifferential(t *testing.T) {
	node, dir := powertoolsNode(t)
	sels := selections()
	answers := runPeer(t, dir, sels, node, "--input-type=module", "-e", nodePeer)
	python, err := exec.LookPath("python3")
	if err != nil {
		peerMissing(t, "python3", err)
	}
	verdicts := runPeer(t, "", sels, python, "-c", pythonPeer)
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "fn",
		Format: idempotency.FormatPowertoolsTypeScript, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	failures, refused := 0, 0
	for i, sel := range sels {
		wantID, wantValidation, _ := strings.Cut(answers[i], " ")
		k := idempotency.Selection{Selector: "differential", Value: []byte(sel)}
		id, err := g.ID(k)
		validation, verr := idempotency.FormatPowertoolsTypeScript.Hash(k)
		if _, ijson, _ := pythonAnswer(verdicts[i]); !ijson {
			if err == nil || verr == nil {
				t.Errorf("selection %s is not I-JSON (python3), yet has the id %s", sel, id)
			}
			refused++
			continue
		}
		if err != nil || verr != nil || id != wantID || validation != wantValidation {
			got, _ := idempotency.Spell(idempotency.FormatPowertoolsTypeScript, k)
			t.Errorf("selection %s:\n id %s, validation %s, %v %v\nwant %s, %s\n our spelling %s", sel, id, validation, err, verr, wantID, wantValidation, got)
			if failures++; failures > 10 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d selections agree with Powertools TypeScript, %d of them refused as not I-JSON", len(sels), refused)
}
