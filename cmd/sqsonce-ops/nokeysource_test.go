package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// ownFunctionEnv is dynamoEnv's environment and store, namespace orders,
// as the README's own function's environment: no key source, and none of
// the reference app's variables.
func ownFunctionEnv(t *testing.T) (map[string]string, *dynamostore.Store) {
	t.Helper()
	env, store, _, _ := dynamoEnv(t, "orders")
	env = maps.Clone(env)
	for _, name := range []string{envKey, "SQSONCE_PROVIDER", "SQSONCE_SUMMARIES_TABLE"} {
		delete(env, name)
	}
	return env, store
}

// TestNoKeySourceRefused: the README's own function, keyed by
// BodyField("order_id") and deployed with the README's construct props
// (no KeySource, so no $SQSONCE_KEY), completes an order. Without a key
// source the tool does not take the reference app's key in its place,
// which showed the COMPLETED record as absent ("the next delivery runs
// the operation" where it replays): --key, --body and --message are
// refused (exit 2), naming --key-source, $SQSONCE_KEY and
// Props.KeySource. With the function's key source, the tool finds the
// record and says which key source it used; in the reference app's
// function environment it takes the app's key, and says so.
func TestNoKeySourceRefused(t *testing.T) {
	env, store := ownFunctionEnv(t)
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"order_id":"o-1","amount_cents":1299}`
	charge := idempotency.Wrap(g, idempotency.BodyField("order_id"), func(context.Context, events.SQSMessage) (string, error) { return "receipt", nil })
	if _, err := charge(context.Background(), events.SQSMessage{MessageId: "m-1", Body: body}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bodyFile := filepath.Join(dir, "body.json")
	msgFile := filepath.Join(dir, "record.json")
	rec, _ := json.Marshal(events.SQSMessage{MessageId: "m-1", Body: body})
	for path, b := range map[string][]byte{bodyFile: []byte(body), msgFile: rec} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	for _, args := range [][]string{
		{"inspect", "--key", `"o-1"`},
		{"inspect", "--json", "--key", "o-1"},
		{"inspect", "--body", bodyFile},
		{"inspect", "--message", msgFile},
		{"release", "--key", `"o-1"`, "--owner", "-", "--dry-run"},
		{"resolve", "--body", bodyFile, "--owner", "-", "--result", `"r"`, "--dry-run"},
	} {
		r := cli(t, env, args...)
		if strings.Contains(r.stdout, "absent") || strings.Contains(r.stdout, "runs the operation") {
			t.Errorf("sqsonce-ops %s, no key source: shows the COMPLETED record as absent:\n%s", strings.Join(args, " "), r.stdout)
		}
		r.want(t, exitRefused)
		for _, want := range []string{"--key-source", "$SQSONCE_KEY", "Props.KeySource", "--id"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("sqsonce-ops %s, no key source: the refusal does not name %s:\n%s", strings.Join(args, " "), want, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "1299") {
			t.Errorf("sqsonce-ops %s: the refusal quotes the message:\n%s", strings.Join(args, " "), r.stderr)
		}
	}

	// --id needs no key source.
	with := func(k, v string) map[string]string {
		e := maps.Clone(env)
		e[k] = v
		return e
	}
	keyed := with(envKey, "body:order_id")
	want := inspectJSON(t, keyed, exitOK, "--key", `"o-1"`)
	if want.State != stateCompleted {
		t.Fatalf("with $SQSONCE_KEY=body:order_id: %+v, want the COMPLETED record", want)
	}
	if v := inspectJSON(t, env, exitOK, "--id", want.ID); v.State != stateCompleted {
		t.Errorf("--id without a key source: %+v", v)
	}

	// The function's key source, from the environment or the flag: the
	// record, and the key source named.
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{keyed, []string{"inspect", "--key", `"o-1"`}, "key source: body:order_id"},
		{env, []string{"inspect", "--key-source", "body:order_id", "--body", bodyFile}, "key source: body:order_id"},
		{env, []string{"inspect", "--key-field", "order_id", "--key", "o-1"}, "key source: --key-field order_id"},
	} {
		r := cli(t, tc.env, tc.args...).want(t, exitOK)
		if !strings.Contains(r.stdout, "state        completed") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sqsonce-ops %s:\nstdout:\n%s\nstderr:\n%s\nwant the COMPLETED record and %q", strings.Join(tc.args, " "), r.stdout, r.stderr, tc.want)
		}
	}

	// The reference app's function environment (infra/app.go sets
	// SQSONCE_PROVIDER and SQSONCE_SUMMARIES_TABLE): its key, named. The
	// order's id is not under it, and the note says the key source may be
	// the wrong one.
	for _, name := range []string{"SQSONCE_PROVIDER", "SQSONCE_SUMMARIES_TABLE"} {
		r := cli(t, with(name, "x"), "inspect", "--key", `"o-1"`).want(t, exitOK)
		if !strings.Contains(r.stderr, "key source: the reference app's") || !strings.Contains(r.stderr, "$"+name) {
			t.Errorf("$%s set: the key source is not named:\n%s", name, r.stderr)
		}
		if !strings.Contains(r.stdout, "state        absent") || !strings.Contains(r.stdout, "the wrong key source") {
			t.Errorf("$%s set, another function's key: the absent note does not name the key source:\n%s", name, r.stdout)
		}
	}
}

// TestRedriveNoKeySource: redrive without a key source classes nothing by
// another function's key: it is refused before it reads a message, which
// stays in the dead-letter queue; with the function's key source it
// classes the COMPLETED order replay and names the key source.
func TestRedriveNoKeySource(t *testing.T) {
	env, store := ownFunctionEnv(t)
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"order_id":"o-1","amount_cents":1299}`
	charge := idempotency.Wrap(g, idempotency.BodyField("order_id"), func(context.Context, events.SQSMessage) (string, error) { return "receipt", nil })
	if _, err := charge(context.Background(), events.SQSMessage{MessageId: "m-1", Body: body}); err != nil {
		t.Fatal(err)
	}
	q := newQueues(t)
	q.failToDLQ(t, body)
	for _, extra := range [][]string{{"--dry-run"}, nil} {
		args := append([]string{"redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s"}, extra...)
		r := cli(t, env, args...)
		if strings.Contains(r.stdout, "message(s) read") {
			t.Errorf("redrive %v, no key source: classes the messages by another function's key (the COMPLETED order is not replay):\n%s", extra, r.stdout)
		}
		r.want(t, exitRefused)
		if !strings.Contains(r.stderr, "--key-source") || !strings.Contains(r.stderr, "$SQSONCE_KEY") {
			t.Errorf("redrive %v, no key source: the refusal does not name --key-source and $SQSONCE_KEY:\n%s", extra, r.stderr)
		}
		if n, m := q.count(t, q.dlq.URL), q.count(t, q.source.URL); n != 1 || m != 0 {
			t.Errorf("redrive %v, refused: %d message(s) in the dead-letter queue, %d in the queue; want 1, 0", extra, n, m)
		}
	}
	keyed := maps.Clone(env)
	keyed[envKey] = "body:order_id"
	r := cli(t, keyed, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s", "--dry-run", "--json").want(t, exitOK)
	var report struct {
		KeySource string `json:"key_source"`
		Messages  []redriveMessage
	}
	r.decode(t, &report)
	if len(report.Messages) != 1 || report.Messages[0].Class != classReplay || !strings.Contains(report.KeySource, "body:order_id") {
		t.Errorf("redrive with $SQSONCE_KEY=body:order_id: %+v, want the order classed %s and the key source named", report, classReplay)
	}
	text := cli(t, keyed, "redrive", "--dlq", q.dlq.URL, "--queue", q.source.URL, "--wait", "1s", "--dry-run").want(t, exitOK).stdout
	if !strings.Contains(text, "key source: body:order_id") {
		t.Errorf("redrive's text does not name the key source:\n%s", text)
	}
}
