package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestKeySource: a function keyed by each kind of key source writes a
// record; the tool, given that key source (as $SQSONCE_KEY) and the
// producer's key or the message body, computes that record's id.
func TestKeySource(t *testing.T) {
	body := `{"order_id":"o-1","customer_id":"c-9","amount":1250}`
	for _, tc := range []struct {
		source string
		sel    idempotency.Selector // the function's own selector
		key    string               // --key, or "" for --body only
	}{
		{"body:order_id", idempotency.BodyField("order_id"), `"o-1"`},
		{"body:customer_id,amount", idempotency.BodySubset("customer_id", "amount"), `{"amount":1250,"customer_id":"c-9"}`},
		{"jmespath:powertools_json(body).order_id", jmespath.MustCompile("powertools_json(body).order_id").Selector(), ""},
	} {
		store := memstore.New()
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "charges", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		charge := idempotency.Wrap(g, tc.sel, func(context.Context, events.SQSMessage) (string, error) { return "receipt", nil })
		if _, err := charge(context.Background(), events.SQSMessage{MessageId: "m-1", Body: body}); err != nil {
			t.Fatal(err)
		}
		var written []string
		for rec, err := range store.List(context.Background(), driver.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			written = append(written, rec.ID)
		}
		if len(written) != 1 {
			t.Fatalf("%s: the function wrote %v", tc.source, written)
		}
		env := map[string]string{envTable: "t", envNamespace: "charges", envKey: tc.source}
		inv, err := parse([]string{"inspect", "--id", "x"}, func(k string) string { return env[k] }, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		o := &ops{g: inv.g, store: store, inspect: store, guard: g}
		path := filepath.Join(t.TempDir(), "body")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		sels := []selector{{body: path}}
		if tc.key != "" {
			sels = append(sels, selector{key: tc.key})
		}
		for _, s := range sels {
			got, err := s.resolve(o, nil)
			if err != nil || got != written[0] {
				t.Errorf("%s: %+v: %s, %v; want the function's %s", tc.source, s, got, err, written[0])
			}
		}
		if tc.key == "" {
			if _, err := (&selector{key: `"o-1"`}).resolve(o, nil); err == nil || !strings.Contains(err.Error(), "--body") {
				t.Errorf("%s: --key: %v, want a pointer to --body", tc.source, err)
			}
		}
		// --tenant: the id the guard scopes to the tenant.
		k, _ := idempotency.Select(tc.sel, events.SQSMessage{Body: body})
		want, _ := g.ScopedID("acme", "", k)
		if got, err := (&selector{body: path, tenant: "acme"}).resolve(o, nil); err != nil || got != want || got == written[0] {
			t.Errorf("%s: --tenant acme: %s, %v; want %s", tc.source, got, err, want)
		}
	}
}

// TestKeySourceRefusals: a bad key source, one given twice, and no
// namespace are usage errors naming the flag and the variable.
func TestKeySourceRefusals(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{envTable: "t"}, []string{"list"}, "--namespace ($SQSONCE_NAMESPACE) is required"},
		{map[string]string{envTable: "t", envNamespace: "n", envKey: "header:x"}, []string{"list"}, "--key-source ($SQSONCE_KEY)"},
		{map[string]string{envTable: "t", envNamespace: "n"}, []string{"inspect", "--key-source", "body:", "--key", "1"}, "--key-source ($SQSONCE_KEY)"},
		{map[string]string{envTable: "t", envNamespace: "n"}, []string{"inspect", "--tenant", "a", "--id", "n#x"}, "--tenant"},
	} {
		var stderr bytes.Buffer
		_, err := parse(tc.args, func(k string) string { return tc.env[k] }, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want %q", tc.env, tc.args, err, tc.want)
		}
	}
	g, _ := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "n"})
	o := &ops{g: globals{namespace: "n", keySource: "body:a"}, guard: g}
	if _, err := (&selector{key: "1", keyField: "b"}).resolve(o, nil); err == nil || !strings.Contains(err.Error(), "both name the key") {
		t.Errorf("--key-field with --key-source: %v", err)
	}
}

// TestListOtherNamespaces: list in a namespace that holds nothing, on a
// table holding another's records, says so and exits 2; in one that
// holds records, it names the others' count and exits 0.
func TestListOtherNamespaces(t *testing.T) {
	store := memstore.New()
	for _, ns := range []string{"charges", "charges", "refunds"} {
		g, err := idempotency.New(idempotency.Config{Store: store, Namespace: ns, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		f := idempotency.Wrap(g, idempotency.BodyField("k"), func(context.Context, events.SQSMessage) (int, error) { return 1, nil })
		if _, err := f(context.Background(), events.SQSMessage{Body: `{"k":"` + ns + `-` + string(rune('0'+store.Len())) + `"}`}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		ns     string
		code   int
		others int
		line   string
	}{
		{"summarise", exitRefused, 3, "no record of namespace summarise; the table holds 3 record(s) of 2 other namespace(s)"},
		{"charges", exitOK, 1, "the table also holds 1 record(s) of 1 other namespace(s)"},
	} {
		for _, asJSON := range []bool{false, true} {
			var stdout, stderr bytes.Buffer
			g, _ := idempotency.New(idempotency.Config{Store: store, Namespace: tc.ns})
			o := &ops{g: globals{namespace: tc.ns, json: asJSON}, store: store, inspect: store, guard: g, stdout: &stdout, stderr: &stderr}
			if code := (&listCmd{}).exec(context.Background(), o); code != tc.code {
				t.Errorf("list --namespace %s: exit %d, want %d; %s%s", tc.ns, code, tc.code, stdout.String(), stderr.String())
			}
			if asJSON {
				var l listing
				if err := json.Unmarshal(stdout.Bytes(), &l); err != nil || l.OtherRecords != tc.others {
					t.Errorf("list --json --namespace %s: %+v, %v; want other_records %d", tc.ns, l, err, tc.others)
				}
			} else if !strings.Contains(stdout.String()+stderr.String(), tc.line) {
				t.Errorf("list --namespace %s: %q, want %q", tc.ns, stdout.String()+stderr.String(), tc.line)
			}
		}
	}
}
