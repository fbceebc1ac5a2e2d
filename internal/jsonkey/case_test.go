package jsonkey

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// runNode runs script under node with stdin and returns its output lines. It
// skips the test when node is missing, except under CI=true.
func runNode(t *testing.T, script string, stdin string) []string {
	t.Helper()
	path, err := exec.LookPath("node")
	if err != nil {
		testproc.Unavailable(t, "node", err, "install node")
	}
	cmd := exec.Command(path, "-e", script)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// lowerClasses prints, for every code point whose lower case is not itself
// or that takes part in the final-sigma rule, its lower case and its class
// in that rule as V8 (ICU) applies it: C, cased (a sigma after it ends a
// word); I, case-ignorable (skipped); N, neither. Other code points are
// "N" and their own lower case.
const lowerClasses = `
const out = [];
for (let c = 0; c <= 0x10ffff; c++) {
  if (c >= 0xd800 && c <= 0xdfff) continue;
  const s = String.fromCodePoint(c), l = s.toLowerCase();
  const after = (s + 'Σ').toLowerCase().endsWith('ς');      // C alone ends a word before Σ
  const skipped = ('A' + s + 'Σ').toLowerCase().endsWith('ς'); // I or C
  const cls = after ? 'C' : skipped ? 'I' : 'N';
  if (l !== s || cls !== 'N') out.push(c.toString(16) + ' ' + Array.from(l, (x) => x.codePointAt(0).toString(16)).join(',') + ' ' + cls);
}
console.log('unicode ' + process.versions.unicode);
console.log(out.join('\n'));
`

// TestLowerCaseMatchesNode pins the TypeScript format's key sort to V8's
// String.prototype.toLowerCase, over every code point: each one CaseStable
// accepts has node's lower case and node's class in the final-sigma rule,
// and every code point where this package and node differ is one
// CaseStable refuses (those a newer Unicode assigned or changed).
func TestLowerCaseMatchesNode(t *testing.T) {
	lines := runNode(t, lowerClasses, "")
	t.Logf("node's %s; Go's tables: Unicode 15.0", lines[0])
	theirs := map[rune]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		c, _ := strconv.ParseUint(f[0], 16, 32)
		theirs[rune(c)] = f[1] + " " + f[2]
	}
	compared, refused, differ := 0, 0, 0
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		var lower []string
		for _, x := range jsLower(string(r)) {
			lower = append(lower, strconv.FormatInt(int64(x), 16))
		}
		cls := "N"
		switch {
		case caseIgnorable(r):
			cls = "I"
		case cased(r):
			cls = "C"
		}
		ours := strings.Join(lower, ",") + " " + cls
		want, ok := theirs[r]
		if !ok {
			want = strconv.FormatInt(int64(r), 16) + " N"
		}
		stable := CaseStable(string(r))
		switch {
		case !stable:
			refused++
			if ours != want {
				differ++
			}
		case ours != want:
			t.Errorf("U+%04X: ours %s, node %s", r, ours, want)
		default:
			compared++
		}
	}
	t.Logf("%d code points agree with node, %d refused (%d of them differ)", compared, refused, differ)
	if compared < 280_000 { // Unicode 15.0 assigns 286,717 outside the surrogates, private use included
		t.Errorf("only %d code points compared", compared)
	}
}

// TestFinalSigmaMatchesNode: words of sigmas between cased, case-ignorable
// and other characters lower-case as V8 lower-cases them.
func TestFinalSigmaMatchesNode(t *testing.T) {
	alphabet := []rune{'Σ', 'Σ', 'a', 'A', 'ǅ', 'ª', 'ʰ', 'Ⓐ', 'ⓐ', '\'', '.', ':', '·', '‘', '’', '\u0301', '\u00ad',
		'\u200d', '^', '1', ' ', '-', 'ß', 'İ', '中', '😀', 'ᾼ', 'ͅ', '\u0387', '\uff0e', 'Ω'}
	r := rand.New(rand.NewPCG(20, 3))
	var words []string
	for range 5000 {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		words = append(words, b.String())
	}
	in, _ := json.Marshal(words)
	got := runNode(t, `const w = JSON.parse(require('fs').readFileSync(0, 'utf8')); console.log(JSON.stringify(w.map((s) => s.toLowerCase())));`, string(in))
	var want []string
	if err := json.Unmarshal([]byte(got[0]), &want); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, w := range words {
		if l := jsLower(w); l != want[i] {
			t.Errorf("%q: ours %q, node %q", w, l, want[i])
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d words agree with node", len(words))
}
