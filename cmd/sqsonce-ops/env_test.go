package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv/envvars"
)

// envvarsByName maps the envvars constants' names to their values.
var envvarsByName = map[string]string{
	"EnvTable": envvars.EnvTable, "EnvNamespace": envvars.EnvNamespace, "EnvExpiresAfter": envvars.EnvExpiresAfter,
	"EnvQueueWindow": envvars.EnvQueueWindow, "EnvPartitionKey": envvars.EnvPartitionKey, "EnvSortKey": envvars.EnvSortKey,
	"EnvStaticPartition": envvars.EnvStaticPartition, "EnvStrict": envvars.EnvStrict, "EnvMinRemaining": envvars.EnvMinRemaining,
	"EnvMetrics": envvars.EnvMetrics, "EnvMetricsNamespace": envvars.EnvMetricsNamespace, "EnvMetricsService": envvars.EnvMetricsService,
	"EnvDynamoDBEndpoint": envvars.EnvDynamoDBEndpoint, "EnvKey": envvars.EnvKey,
}

// toolOwn are the tool's variables for settings the app does not have:
// none, now that the function reads every setting the tool does (the key
// format, the data format and the Redis key prefix and cluster included).
var toolOwn []string

// notRecords are the construct's variables that do not say where records
// are or how they are read: the tool has no use for them.
var notRecords = []string{envvars.EnvExpiresAfter, envvars.EnvQueueWindow, envvars.EnvMinRemaining,
	envvars.EnvMetricsNamespace, envvars.EnvMetricsService}

// appNames are the SQSONCE_ variables cmd/summarise reads: the string
// constants of its config.go, and the envvars constants it names there.
func appNames(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../summarise/config.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(v, "SQSONCE_") {
				names = append(names, v)
			}
		}
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "envvars" {
				names = append(names, envvarsByName[sel.Sel.Name])
			}
		}
		return true
	})
	if len(names) < 10 {
		t.Fatalf("../summarise/config.go names %d SQSONCE_ variables: %v", len(names), names)
	}
	return names
}

// TestEnvironmentNames: the tool and the app read one set of names. Each
// variable the tool reads is one the app reads, or a setting the app does
// not have; each variable infra's construct sets on the function (as its
// TestEnvironmentSnapshot pins it) is one the tool reads, or one that does
// not say where the records are.
func TestEnvironmentNames(t *testing.T) {
	// The function's: cmd/summarise's, and the contract's that any
	// function reads through lambdaenv (SQSONCE_KEY among them).
	app := append(appNames(t), append(envvars.Set(), envvars.Optional()...)...)
	for _, name := range envNames {
		if slices.Contains(app, name) == slices.Contains(toolOwn, name) {
			t.Errorf("the tool reads $%s: the app reads it %v, the tool's own %v: want exactly one", name, slices.Contains(app, name), slices.Contains(toolOwn, name))
		}
	}
	b, err := os.ReadFile("../../infra/idempotentconsumer/testdata/environment.json")
	if err != nil {
		t.Fatal(err)
	}
	var snapshot map[string]map[string]any
	if err := json.Unmarshal(b, &snapshot); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for props, env := range snapshot {
		for name := range env {
			seen++
			if !slices.Contains(envNames, name) && !slices.Contains(notRecords, name) {
				t.Errorf("the construct (%s) sets $%s, which the tool does not read", props, name)
			}
			if !slices.Contains(app, name) {
				t.Errorf("the construct (%s) sets $%s, which the app does not read", props, name)
			}
		}
	}
	if seen < 10 {
		t.Errorf("the snapshot holds %d variables: %s", seen, b)
	}
}

// TestRenamedVariableRefused: a variable an earlier release of the tool
// read under another name is refused, naming the new one, rather than
// ignored (which found no record on a table with a sort key).
func TestRenamedVariableRefused(t *testing.T) {
	env := map[string]string{envTable: "t", envSortKey: "sk", "SQSONCE_SORT_KEY_PARTITION": "p"}
	r := cli(t, env, "list").want(t, exitRefused)
	if !strings.Contains(r.stderr, "SQSONCE_SORT_KEY_PARTITION is now $SQSONCE_STATIC_PARTITION") {
		t.Errorf("stderr: %s", r.stderr)
	}
	// The app's PostgreSQL table is pgstore's default, whatever
	// $SQSONCE_TABLE (the DynamoDB table) says; --table names another.
	inv, err := parse([]string{"list"}, func(k string) string {
		return map[string]string{envStore: storePostgres, envPostgresURL: "postgres://x", envTable: "dynamo-table", envNamespace: "n"}[k]
	}, io.Discard)
	if err != nil || inv.g.table != "" {
		t.Errorf("postgres with $%s: %+v, %v", envTable, inv, err)
	}
	inv, err = parse([]string{"list", "--table", "records"}, func(k string) string {
		return map[string]string{envStore: storePostgres, envPostgresURL: "postgres://x", envNamespace: "n"}[k]
	}, io.Discard)
	if err != nil || inv.g.table != "records" {
		t.Errorf("postgres with --table: %+v, %v", inv, err)
	}
}

// TestConstructEnvironment: with the function's own environment, as infra's
// construct synthesises it (infra/idempotentconsumer/testdata, pinned by
// its TestEnvironmentSnapshot) and as Lambda completes it, the tool finds
// the records the function writes: here on a table with a sort key.
func TestConstructEnvironment(t *testing.T) {
	b, err := os.ReadFile("../../infra/idempotentconsumer/testdata/environment.json")
	if err != nil {
		t.Fatal(err)
	}
	var snapshot map[string]map[string]any
	if err := json.Unmarshal(b, &snapshot); err != nil {
		t.Fatal(err)
	}
	fn := snapshot["sort-key-strict"]
	str := func(name string) string {
		v, ok := fn[name].(string)
		if !ok {
			t.Fatalf("the construct's environment has no %s: %v", name, fn)
		}
		return v
	}
	pk, sk, partition := str("SQSONCE_PARTITION_KEY"), str("SQSONCE_SORT_KEY"), str("SQSONCE_STATIC_PARTITION")
	db := moto.DynamoDB(t)
	table := motoserver.NewTableWithSortKey(t, db, pk, sk)
	// The store as cmd/summarise builds it from these variables.
	store, err := dynamostore.New(db, table, dynamostore.WithAttributes(dynamostore.Attributes{ID: pk}),
		dynamostore.WithSortKey(dynamostore.SortKey{Attr: sk, Partition: partition}))
	if err != nil {
		t.Fatal(err)
	}
	s := seed(t, store, str("SQSONCE_NAMESPACE"), func(t *testing.T, rec driver.Record) {})
	env := map[string]string{envDynamoDBEndpoint: moto.Endpoint(t), "AWS_LAMBDA_FUNCTION_NAME": "summarise-fn"}
	for k, v := range fn {
		if v, ok := v.(string); ok {
			env[k] = v
		}
	}
	env["SQSONCE_TABLE"] = table // a Ref in the template
	if v := inspectJSON(t, env, exitOK, "--id", s.completed); v.State != stateCompleted {
		t.Errorf("a COMPLETED record, with the function's environment: %+v", v)
	}
	var l listing
	cli(t, env, "list", "--json").want(t, exitOK).decode(t, &l)
	var ids []string
	for _, v := range l.Records {
		ids = append(ids, v.ID)
	}
	if !slices.Contains(ids, s.stuck) {
		t.Errorf("list with the function's environment: %v, want the stuck %s", ids, s.stuck)
	}
}
