package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

func TestParseRefusals(t *testing.T) {
	env := map[string]string{envTable: "t"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"inspect"}, "one of --key, --body, --message and --id"},
		{[]string{"inspect", "--key", `"a"`, "--id", "x#y"}, "one of --key, --body, --message and --id"},
		{[]string{"inspect", "--id", "x", "extra"}, "unexpected argument"},
		{[]string{"inspect", "--id", "x", "--key-field", "a..b"}, "empty member name"},
		{[]string{"inspect", "--id", "x", "--store", "mongo"}, "not one of dynamodb"},
		{[]string{"inspect", "--id", "x", "--table", ""}, "--table"},
		{[]string{"inspect", "--id", "x", "--format", "md5"}, "--format"},
		{[]string{"inspect", "--id", "x", "--data-format", "xml"}, "--data-format"},
		{[]string{"inspect", "--id", "x", "--sort-key", "sk"}, "needs --static-partition"},
		{[]string{"inspect", "--id", "x", "--store", "redis"}, "--redis-url"},
		{[]string{"inspect", "--id", "x", "--store", "postgres"}, "--postgres-url"},
		{[]string{"release", "--id", "x"}, "--owner is required"},
		{[]string{"resolve", "--id", "x", "--owner", "o"}, "one of --result and --result-file"},
		{[]string{"resolve", "--id", "x", "--owner", "o", "--result", "{"}, "not one JSON value"},
		{[]string{"resolve", "--id", "x", "--owner", "o", "--result", "1", "--force"}, "--force is for release only"},
		{[]string{"redrive"}, "--dlq and --queue are required"},
		{[]string{"redrive", "--dlq", "q", "--queue", "q"}, "the same queue"},
		{[]string{"redrive", "--dlq", "a", "--queue", "b", "--rate", "fast"}, "--rate"},
		{[]string{"redrive", "--dlq", "a", "--queue", "b", "--rate", "5/h"}, "the unit"},
		{[]string{"redrive", "--dlq", "a", "--queue", "b", "--max", "0"}, "--max"},
		{[]string{"redrive", "--dlq", "a.fifo", "--queue", "b"}, "both be FIFO"},
		{[]string{"list", "--bogus"}, "flag provided but not defined"},
	} {
		r := cli(t, env, tc.args...)
		if r.code != exitRefused || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sqsonce-ops %q: exit %d, stderr %q; want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// Global flags before the command, and the environment under flags.
	inv, err := parse([]string{"--json", "--namespace", "n1", "list", "--table", "t2"}, func(k string) string {
		return map[string]string{envTable: "t1", envNamespace: "n0"}[k]
	}, io.Discard)
	if err != nil || !inv.g.json || inv.g.namespace != "n1" || inv.g.table != "t2" || inv.g.store != storeDynamoDB {
		t.Errorf("parse: %+v, %v", inv, err)
	}
	if r := cli(t, env, "-h"); r.code != exitOK {
		t.Errorf("-h: exit %d", r.code)
	}
}

// TestRecordIDs: the tool computes a request's record id as the guard
// does, from --key, --key-field and --body, in every format.
func TestRecordIDs(t *testing.T) {
	for name, f := range formats {
		g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns", Format: f})
		if err != nil {
			t.Fatal(err)
		}
		o := &ops{g: globals{namespace: "ns", format: name}, guard: g}
		for _, tc := range []struct {
			sel  selector
			body string                // the message the producer sends
			kf   *idempotency.Selector // the app's key selector for it; nil for handler.Key
		}{
			{selector{key: `"order-17"`, app: appEnv[0]}, `{"idempotency_key":"order-17"}`, nil},
			{selector{key: ` {"b":2, "a":[1,2.50]} `, app: appEnv[0]}, `{"idempotency_key":{"b":2,"a":[1,2.50]}}`, nil},
			{selector{key: `4471`, keyField: "document.id"}, `{"document":{"id":4471}}`, ptr(idempotency.BodyField("document", "id"))},
			{selector{key: `"x"`, keyField: `["a.b"]`}, `{"a.b":"x"}`, ptr(idempotency.BodyField("a.b"))},
		} {
			kf := handler.Key()
			if tc.kf != nil {
				kf = *tc.kf
			}
			want, err := messageID(o, kf, events.SQSMessage{Body: tc.body})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.sel.resolve(o, nil)
			if err != nil || got != want {
				t.Errorf("%s: %+v: %s, %v; want %s", name, tc.sel, got, err, want)
			}
			path := filepath.Join(t.TempDir(), "body")
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err = (&selector{body: path, keyField: tc.sel.keyField, app: tc.sel.app}).resolve(o, nil)
			if err != nil || got != want {
				t.Errorf("%s: --body %s: %s, %v; want %s", name, tc.body, got, err, want)
			}
			stdinGot, err := (&selector{body: "-", keyField: tc.sel.keyField, app: tc.sel.app}).resolve(o, strings.NewReader(tc.body))
			if err != nil || stdinGot != want {
				t.Errorf("%s: --body - : %s, %v; want %s", name, stdinGot, err, want)
			}
		}
		// The app's canonical subset, when the body has no key field.
		work := `{"document":{"id":"d1","version":3},"prompt_version":"v2","model":"m"}`
		want, err := messageID(o, handler.Key(), events.SQSMessage{Body: work})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "work")
		if err := os.WriteFile(path, []byte(work), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := (&selector{body: path, app: appEnv[0]}).resolve(o, nil); err != nil || got != want || !strings.HasPrefix(got, "ns#") {
			t.Errorf("%s: canonical subset: %s, %v; want %s", name, got, err, want)
		}
	}
	// A body without a key: a clear error that quotes no content.
	o := &ops{g: globals{namespace: "ns"}}
	g, _ := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns"})
	o.guard = g
	_, err := (&selector{body: "-", app: appEnv[0]}).resolve(o, strings.NewReader(`{"secret":"s3cr3t-value"}`))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a body without a key: %v", err)
	}
	// A plain string is the string key, as its JSON-quoted spelling.
	plain, err := (&selector{key: "r-2", app: appEnv[0]}).resolve(o, nil)
	quoted, qerr := (&selector{key: `"r-2"`, app: appEnv[0]}).resolve(o, nil)
	if err != nil || qerr != nil || plain != quoted {
		t.Errorf("--key r-2: %s, %v; --key '\"r-2\"': %s, %v; want one id", plain, err, quoted, qerr)
	}
}

// TestRefusesUnreadable: a record in another data format, or an id of
// another namespace, is shown by inspect and refused by release and
// resolve with exit 2, nothing written.
func TestRefusesUnreadable(t *testing.T) {
	env, store, db, table := dynamoEnv(t, "orders")
	s := seed(t, store, "orders", quarantineDynamo(db, table))
	ts := map[string]string{}
	for k, v := range env {
		ts[k] = v
	}
	ts[envDataFormat] = "powertools-typescript"
	v := inspectJSON(t, ts, exitRefused, "--id", s.completed)
	if v.State != stateCompleted || v.Owner == "" || !strings.Contains(v.Problem, "dynamostore: data is") || v.DataFormat != "json" {
		t.Errorf("inspect in another data format: %+v", v)
	}
	r := cli(t, ts, "resolve", "--id", s.completed, "--owner", v.Owner, "--result", "1").want(t, exitRefused)
	if !strings.Contains(r.stderr, "refused") {
		t.Errorf("resolve: %s", r.stderr)
	}
	cli(t, ts, "list", "--all").want(t, exitOK) // only COMPLETED is unreadable, and list shows INPROGRESS

	other := map[string]string{}
	for k, v := range env {
		other[k] = v
	}
	other[envNamespace] = "billing"
	v = inspectJSON(t, other, exitRefused, "--id", s.stuck)
	if v.State != stateLeaseLapsed || !strings.Contains(v.Problem, `namespace "billing"`) {
		t.Errorf("inspect in another namespace: %+v", v)
	}
	cli(t, other, "release", "--id", s.stuck, "--owner", s.stuckOwner).want(t, exitRefused)
	if v := inspectJSON(t, env, exitOK, "--id", s.stuck); v.State != stateLeaseLapsed || v.Owner != s.stuckOwner {
		t.Errorf("after the refusals: %+v", v)
	}
}

// TestBinary builds the command and runs it as an operator would.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sqsonce-ops")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env, store, db, table := dynamoEnv(t, "orders")
	s := seed(t, store, "orders", quarantineDynamo(db, table))
	cmd := exec.Command(bin, "inspect", "--key", `"order-quarantined"`)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "record "+s.quarantined) || !strings.Contains(string(out), "state        quarantined") {
		t.Errorf("sqsonce-ops inspect: %v\n%s", err, out)
	}
	cmd = exec.Command(bin)
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != exitRefused || !strings.Contains(string(out), "usage: sqsonce-ops") {
		t.Errorf("sqsonce-ops without a command: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

func ptr[T any](v T) *T { return &v }
