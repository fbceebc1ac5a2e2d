package rie_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// start builds testdata/fn and runs it under the emulator.
func start(t *testing.T, c rie.Config) *rie.Function {
	t.Helper()
	path, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "rie", err, rie.Install)
	}
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./testdata/fn")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c.RIE, c.Bootstrap = path, bootstrap
	fn := rie.StartTest(t, c)
	return fn
}

func event(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: "m" + string(rune('0'+i)), Body: b, EventSource: "aws:sqs"})
	}
	return ev
}

func TestInvoke(t *testing.T) {
	fn := start(t, rie.Config{Env: map[string]string{"FAIL_BODY": "bad"}, Timeout: 2 * time.Second})
	ctx := context.Background()

	resp, err := fn.Invoke(ctx, event("ok", "bad", "ok"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m1" {
		t.Errorf("response %+v, want m1 failed (FAIL_BODY from Config.Env)", resp)
	}

	var fe *rie.FunctionError
	if _, err := fn.Invoke(ctx, event("error")); !errors.As(err, &fe) || !strings.Contains(fe.Message, "asked to fail") {
		t.Errorf("function error: %v, want a *FunctionError with the function's message", err)
	}
	begin := time.Now()
	if _, err := fn.Invoke(ctx, event("hang")); !errors.As(err, &fe) || fe.Type != "Sandbox.Timedout" {
		t.Errorf("timeout: %v, want a *FunctionError of type Sandbox.Timedout", err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("a hanging invocation took %v with a 2s timeout", d)
	}
	// The environment survives a timed-out invocation.
	if resp, err := fn.Invoke(ctx, event("bad")); err != nil || len(resp.BatchItemFailures) != 1 {
		t.Errorf("after a timeout: %+v, %v", resp, err)
	}
}

func TestReadEnvVars(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       map[string]string
		err        string
	}{
		{"function entry", `{"SummariseFunction": {"A": "1", "B": "x"}}`, map[string]string{"A": "1", "B": "x"}, ""},
		{"parameters, overridden by the function's entry",
			`{"Parameters": {"A": "p", "C": "p"}, "SummariseFunction": {"A": "f"}, "Other": {"C": "o"}}`,
			map[string]string{"A": "f", "C": "p"}, ""},
		{"parameters only", `{"Parameters": {"A": "p"}}`, map[string]string{"A": "p"}, ""},
		{"another function's entry only", `{"Other": {"A": "o"}}`, map[string]string{}, ""},
		{"values as SAM makes them",
			`{"SummariseFunction": {"T": true, "F": false, "N": 5, "X": 0.5, "Z": null, "L": [1], "O": {"Ref": "Table"}}}`,
			map[string]string{"T": "true", "F": "false", "N": "5", "X": "0.5", "Z": "", "L": "", "O": ""}, ""},
		{"not an object", `[]`, nil, "not a JSON object"},
		{"an entry not an object", `{"SummariseFunction": "A=1"}`, nil, `"SummariseFunction" is not an object`},
		{"two values", `{} {}`, nil, "more than one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rie.ReadEnvVars(strings.NewReader(tc.file), "SummariseFunction")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
