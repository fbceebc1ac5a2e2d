package idempotentconsumer_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

// The function's environment as the construct synthesises it is pinned in
// testdata/environment.json: the root module's tests, which cannot import
// the CDK, read it there (middleware/lambdaenv/envvars and cmd/sqsonce-ops hold the variables
// they read against it). A change fails TestEnvironmentSnapshot until the snapshot
// is rewritten with go test -run TestEnvironmentSnapshot -update.

var updateEnvironment = flag.Bool("update", false, "rewrite testdata/environment.json from the synthesised function")

const environmentFile = "testdata/environment.json"

// environments are the Props whose environments the snapshot holds: the
// defaults, and every variable the construct can set.
var environments = []struct {
	name  string
	props idempotentconsumer.Props
}{
	{"defaults", idempotentconsumer.Props{}},
	{"sort-key-strict", idempotentconsumer.Props{SortKey: sortKey, Strict: true}},
	{"three-seconds-min-remaining", idempotentconsumer.Props{Timeout: 3 * time.Second, MinRemaining: 2 * time.Second}},
	{"metrics-names", idempotentconsumer.Props{MetricsNamespace: "shop", MetricsService: "charges-eu"}},
	{"key-source", idempotentconsumer.Props{KeySource: "body:order_id"}},
	{"tenancy", idempotentconsumer.Props{Tenancy: "message-group"}},
	{"seal-key", idempotentconsumer.Props{}},
}

// environmentMods complete the Props of an environment with what needs the
// stack: a key.
var environmentMods = map[string]func(awscdk.Stack, *idempotentconsumer.Props){
	"seal-key": func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.SealKey = awskms.NewKey(stack, jsii.String("SealKey"), nil)
	},
}

func TestEnvironmentSnapshot(t *testing.T) {
	snapshot := map[string]map[string]any{}
	for _, e := range environments {
		_, tpl := build(t, "Environment", e.props, environmentMods[e.name])
		_, fn := resourceOf(t, tpl, "AWS::Lambda::Function", "ConsumerFunction")
		env, _ := props(t, fn)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if len(vars) == 0 {
			t.Fatalf("%s: the function has no environment: %s", e.name, js(fn))
		}
		snapshot[e.name] = vars
	}
	got, err := json.MarshalIndent(snapshot, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *updateEnvironment {
		if err := os.WriteFile(environmentFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(environmentFile)
	if err != nil {
		t.Fatalf("%v (create it with go test -run TestEnvironmentSnapshot -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the function's environment changed: run go test -run TestEnvironmentSnapshot -update, "+
			"and check that cmd/sqsonce-ops reads what it must (its TestConstructEnvironment)\ngot:\n%s\nwant:\n%s", got, want)
	}
}
