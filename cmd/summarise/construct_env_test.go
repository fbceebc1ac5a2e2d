package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// TestConstructEnvironmentHonoured: every variable infra's construct sets
// on the function (each environment of its pinned snapshot,
// infra/idempotentconsumer/testdata/environment.json, and envvars.Set) is
// read by summarise and changes what it does: without the variable the
// configuration, or its refusal, is another (each checked in the
// environment that adds it to the defaults). A variable the app read but
// ignored would let sqsonce-ops, which reads the same environment, compute
// ids the function never writes (SQSONCE_TENANCY, SQSONCE_KEY were).
func TestConstructEnvironmentHonoured(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "infra", "idempotentconsumer", "testdata", "environment.json"))
	if err != nil {
		t.Fatal(err)
	}
	var snapshot map[string]map[string]any
	if err := json.Unmarshal(b, &snapshot); err != nil {
		t.Fatal(err)
	}
	if snapshot["defaults"] == nil {
		t.Fatalf("the snapshot has no defaults: %s", b)
	}
	set := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(snapshot)) {
		// The DynamoDB store, as inside Lambda; the documents of the
		// repository. A value CloudFormation resolves (a key's ARN) is
		// a placeholder here.
		kv := map[string]string{envStore: storeDynamoDB, envDocumentsDir: filepath.Join(repoRoot, "samples", "documents")}
		for k, v := range snapshot[name] {
			s, ok := v.(string)
			if !ok {
				s = "arn:aws:kms:us-east-1:123456789012:key/placeholder"
			}
			kv[k] = s
			set[k] = true
		}
		for _, v := range slices.Sorted(maps.Keys(snapshot[name])) {
			if _, ok := snapshot["defaults"][v]; ok && name != "defaults" {
				continue // checked where it is the only difference, in the defaults
			}
			read := false
			getenv := func(k string) string {
				read = read || k == v
				return kv[k]
			}
			with, withErr := loadConfig(getenv, "", "")
			if !read {
				t.Errorf("%s: the construct sets %s, which summarise does not read", name, v)
				continue
			}
			without := maps.Clone(kv)
			delete(without, v)
			wo, woErr := loadConfig(env(without), "", "")
			if reflect.DeepEqual(with, wo) && fmt.Sprint(withErr) == fmt.Sprint(woErr) {
				t.Errorf("%s: %s=%q changes nothing: summarise ignores it (config %+v, error %v)", name, v, kv[v], with, withErr)
			}
		}
	}
	for _, v := range envvars.Set() {
		if !set[v] {
			t.Errorf("envvars.Set names %s, which no environment of the construct's snapshot sets: it is not checked here", v)
		}
	}
}

// TestTenancy: SQSONCE_TENANCY is the guard's Tenancy. Under
// message-group, one request sent in two message groups of a fair queue
// runs once in each, under the id the guard scopes to the group (the id
// sqsonce-ops computes with the same environment); under invocation (the
// default) and off, the group does not scope the id and the second
// delivery replays the first.
func TestTenancy(t *testing.T) {
	base := loadFixture(t, "fifo.json").Records[0]
	msg := func(id, group string) events.SQSMessage {
		m := base
		m.MessageId = id
		m.Attributes = maps.Clone(base.Attributes)
		m.Attributes["MessageGroupId"] = group
		return m
	}
	groups := []string{"tenant-a", "tenant-b"}
	tests := []struct {
		tenancy string
		scoped  bool
	}{{"", false}, {envvars.TenancyInvocation, false}, {envvars.TenancyMessageGroup, true}, {envvars.TenancyOff, false}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.tenancy), func(t *testing.T) {
			c, err := loadConfig(localEnv(map[string]string{envTenancy: tt.tenancy}), "", "")
			if err != nil {
				t.Fatal(err)
			}
			a, err := build(t.Context(), c, outputs{Logger: slog.New(slog.DiscardHandler), Metrics: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			defer a.close()
			for i, g := range groups {
				resp, err := a.handle(t.Context(), one(msg(fmt.Sprintf("m-%d", i), g)))
				if err != nil || len(resp.BatchItemFailures) > 0 {
					t.Fatalf("group %s: %+v, %v", g, resp, err)
				}
			}
			// The ids the function must write: the guard's, scoped as
			// SQSONCE_TENANCY says.
			tenancy := idempotency.TenancyInvocation
			if tt.scoped {
				tenancy = idempotency.TenancyMessageGroup
			}
			ref, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: c.Namespace, Tenancy: tenancy})
			if err != nil {
				t.Fatal(err)
			}
			k, err := idempotency.Select(handler.Key(), base)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, g := range groups {
				if !tt.scoped {
					g = ""
				}
				id, err := ref.ScopedID("", g, k)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(want, id) {
					want = append(want, id)
				}
			}
			var got []string
			for _, r := range a.calls.Records() {
				got = append(got, r.RecordID)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s=%q: provider calls under record ids %v, want %v", envTenancy, tt.tenancy, got, want)
			}
		})
	}
}
