package jmespath_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// determinismCases are generated cases plus ones that reveal object order
// (keys, values, *, to_string, merge) on objects and on the record's maps.
func determinismCases() []diffCase {
	attrs := map[string]string{}
	mattrs := map[string]events.SQSMessageAttribute{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		v := "v-" + k
		attrs[k] = v
		mattrs[k] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	body := `{"o":{"z":1,"y":2,"x":3,"w":4,"v":5,"u":6,"t":7,"s":8},"p":{"b":1,"a":2}}`
	var cases []diffCase
	for _, expr := range []string{
		"keys(powertools_json(body).o)", "values(powertools_json(body).o)", "powertools_json(body).o.*",
		"to_string(powertools_json(body).o)", "merge(powertools_json(body).o, powertools_json(body).p)",
		"keys(merge(powertools_json(body).o, powertools_json(body).p))", "powertools_json(body).o",
		"attributes", "keys(attributes)", "values(attributes)", "attributes.*", "messageAttributes.*.stringValue",
		"[attributes.a, messageAttributes.h.stringValue]", "length(attributes)",
	} {
		cases = append(cases, diffCase{expr, events.SQSMessage{MessageId: "m-1", Body: body, Attributes: attrs, MessageAttributes: mattrs}})
	}
	return append(cases, generated(1000)...)
}

// outcomes evaluates each case n times and returns, per case, the
// outcome (the record ids in the three formats, or the refusal), failing
// when one evaluation differs from another.
func outcomes(t *testing.T, cases []diffCase, n int) []string {
	t.Helper()
	out := make([]string, len(cases))
	for i, c := range cases {
		for range n {
			o := outcome(c)
			if out[i] != "" && o != out[i] {
				t.Errorf("%s: two evaluations of one message differ:\n %s\n %s", c.expr, out[i], o)
				break
			}
			out[i] = o
		}
	}
	return out
}

func outcome(c diffCase) string {
	k, err := selectKey(c)
	if err != nil {
		return "refused: " + err.Error()
	}
	var ids []string
	for _, f := range []idempotency.Format{idempotency.FormatNative, idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript} {
		h, err := f.Hash(k)
		if err != nil {
			h = "refused: " + err.Error()
		}
		ids = append(ids, h)
	}
	return strings.Join(ids, " ")
}

const determinismChild = "SQSONCE_JMESPATH_DETERMINISM_CHILD"

// TestDeterministic: one message always gives one outcome (issue 20,
// item 1): each case is evaluated 10 times here, then once more in a
// second process (Go's map iteration order differs from one map, and one
// process, to the next), and every outcome is the same. The old evaluator
// followed Go's map order for keys(), values() and *.
func TestDeterministic(t *testing.T) {
	cases := determinismCases()
	here := outcomes(t, cases, 10)
	if os.Getenv(determinismChild) != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeterministicChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), determinismChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("second process: %v\n%s", err, out)
	}
	there := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if digest, o, ok := strings.Cut(line, " = "); ok {
			there[digest] = o
		}
	}
	differ := 0
	for i, c := range cases {
		if o, ok := there[caseDigest(c)]; !ok || o != here[i] {
			differ++
			if differ <= 5 {
				t.Errorf("%s: outcome here %q, in a second process %q", c.expr, here[i], o)
			}
		}
	}
	t.Logf("%d cases, 10 evaluations each and one in a second process: %d differ", len(cases), differ)
}

// TestDeterministicChild prints every case's outcome for TestDeterministic.
func TestDeterministicChild(t *testing.T) {
	if os.Getenv(determinismChild) == "" {
		t.Skip("run by TestDeterministic")
	}
	cases := determinismCases()
	for i, o := range outcomes(t, cases, 1) {
		os.Stdout.WriteString(caseDigest(cases[i]) + " = " + o + "\n")
	}
}

func caseDigest(c diffCase) string {
	h := sha256.New()
	h.Write([]byte(c.expr + "\x00" + c.m.Body + "\x00" + c.m.MessageId))
	return hex.EncodeToString(h.Sum(nil)[:12])
}
