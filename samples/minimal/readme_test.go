package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

var moto = motoserver.New()

// envShim makes the test binary act as the aws CLI (see awsShim).
const envShim = "SQSONCE_AWS_SHIM"

func TestMain(m *testing.M) {
	if os.Getenv(envShim) == "1" {
		os.Exit(awsShim(os.Args[1:]))
	}
	os.Exit(moto.Run(m))
}

// readmeSection is the README section this test runs.
const readmeSection = "## Use it in your own function"

// shBlocks returns the ```sh blocks of the README's own-function section.
func shBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+readmeSection+"\n")
	if i < 0 {
		t.Fatalf("README.md has no %q section", readmeSection)
	}
	s = s[i+1:]
	if j := strings.Index(s[len(readmeSection):], "\n## "); j >= 0 {
		s = s[:len(readmeSection)+j]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(s, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// block returns the one block that contains marker.
func block(t *testing.T, blocks []string, marker string) string {
	t.Helper()
	var found []string
	for _, b := range blocks {
		if strings.Contains(b, marker) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("README %q: %d sh blocks contain %q, want 1", readmeSection, len(found), marker)
	}
	return found[0]
}

// script is the README's recipe as one bash script: the moto block (its
// moto_server line left out: the test runs the server, and the endpoint
// rewritten to it), the table block and the run block, as written.
func script(t *testing.T, endpoint string) string {
	t.Helper()
	blocks := shBlocks(t)
	motoBlock := block(t, blocks, "moto_server ")
	var lines []string
	port := ""
	for _, l := range strings.Split(motoBlock, "\n") {
		if m := regexp.MustCompile(`^moto_server -H 127\.0\.0\.1 -p (\d+) &$`).FindStringSubmatch(l); m != nil {
			port = m[1]
			continue
		}
		lines = append(lines, l)
	}
	readmeEndpoint := "http://127.0.0.1:" + port
	env := strings.Join(lines, "\n")
	if port == "" || !strings.Contains(env, "AWS_ENDPOINT_URL_DYNAMODB="+readmeEndpoint+" ") {
		t.Fatalf("README: the moto block does not start moto_server on a port and point AWS_ENDPOINT_URL_DYNAMODB at it:\n%s", motoBlock)
	}
	env = strings.ReplaceAll(env, readmeEndpoint, endpoint)
	return "set -euo pipefail\n" + env + "\n" +
		block(t, blocks, "aws dynamodb create-table") + "\n" +
		block(t, blocks, "go run ./samples/minimal")
}

// TestReadmeRecipe runs the README's "Use it in your own function" recipe
// as written against moto_server: the table made with the aws CLI (or,
// without it, with the SDK in its place), then samples/minimal twice on
// the same event. The work runs once; the second process replays the
// record from the table.
func TestReadmeRecipe(t *testing.T) {
	if os.Getenv(motoserver.EnvEndpoint) != "" {
		t.Skipf("%s is set: this test creates and deletes a table named in the README, so it runs only on its own moto_server", motoserver.EnvEndpoint)
	}
	endpoint := moto.Endpoint(t)
	db := moto.DynamoDB(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, cli := range []string{"aws CLI", "SDK in place of the aws CLI"} {
		t.Run(cli, func(t *testing.T) {
			path := os.Getenv("PATH")
			if cli == "aws CLI" {
				if _, err := exec.LookPath("aws"); err != nil {
					t.Skip("the aws CLI is not installed; the SDK subtest runs the same recipe")
				}
			} else {
				dir := t.TempDir()
				shim := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", envShim, self)
				if err := os.WriteFile(filepath.Join(dir, "aws"), []byte(shim), 0o755); err != nil {
					t.Fatal(err)
				}
				path = dir + string(os.PathListSeparator) + path
			}
			dropTable(t, db, "idempotency")
			t.Cleanup(func() { dropTable(t, db, "idempotency") })

			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", script(t, endpoint))
			cmd.Dir = root
			cmd.Env = cleanEnv(path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the README recipe failed: %v\n%s", err, out)
			}
			for _, c := range []struct {
				text string
				want int
			}{
				{"minimal: work ran for message ", 1},
				{"outcome=claimed", 0}, // a claim logs at DEBUG
				{"outcome=replayed", 1},
				{`{"batchItemFailures":[]}`, 2},
			} {
				if n := bytes.Count(out, []byte(c.text)); n != c.want {
					t.Errorf("%q appears %d times, want %d; output:\n%s", c.text, n, c.want, out)
				}
			}
			checkTable(t, db, "idempotency")
		})
	}
}

// cleanEnv is the environment of the recipe: the test's, without AWS
// settings or shared config files, so that only the README's exports
// reach the aws CLI and the SDK.
func cleanEnv(path string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "SQSONCE_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+path,
		"AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_EC2_METADATA_DISABLED=true")
}

// checkTable checks the table the README made against the record format:
// partition key AttrID (S), TTL on AttrExpiration, and one completed
// record.
func checkTable(t *testing.T, db *dynamodb.Client, table string) {
	t.Helper()
	ctx := t.Context()
	d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	ks, defs := d.Table.KeySchema, d.Table.AttributeDefinitions
	if len(ks) != 1 || aws.ToString(ks[0].AttributeName) != driver.AttrID || ks[0].KeyType != types.KeyTypeHash ||
		len(defs) != 1 || aws.ToString(defs[0].AttributeName) != driver.AttrID || defs[0].AttributeType != types.ScalarAttributeTypeS {
		t.Errorf("key schema %+v, attributes %+v: want partition key %q of type S", ks, defs, driver.AttrID)
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != driver.AttrExpiration {
		t.Errorf("time to live %+v, want enabled on %q", d, driver.AttrExpiration)
	}
	items, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if len(items.Items) != 1 {
		t.Fatalf("%d records, want 1", len(items.Items))
	}
	if st, _ := items.Items[0][driver.AttrStatus].(*types.AttributeValueMemberS); st == nil || st.Value != string(driver.StatusCompleted) {
		t.Errorf("record %v, want status COMPLETED", items.Items[0])
	}
}

func dropTable(t *testing.T, db *dynamodb.Client, table string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &nf) {
		t.Fatalf("delete table %s: %v", table, err)
	}
	if err == nil {
		w := dynamodb.NewTableNotExistsWaiter(db, func(o *dynamodb.TableNotExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 25*time.Second); err != nil {
			t.Fatalf("wait for table %s to go: %v", table, err)
		}
	}
}

// awsShim does what the aws CLI does for the README's commands, with the
// Go SDK configured from the environment as the CLI is (so
// AWS_ENDPOINT_URL_DYNAMODB applies): dynamodb create-table,
// update-time-to-live and wait table-exists, with the flags the README
// uses. Anything else is refused, so that a README the shim cannot run
// fails the test rather than passing unread.
func awsShim(args []string) int {
	if err := runShim(args); err != nil {
		fmt.Fprintln(os.Stderr, "aws (test shim):", err)
		return 2
	}
	return 0
}

func runShim(args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if len(args) < 2 || args[0] != "dynamodb" {
		return fmt.Errorf("unsupported command %q", args)
	}
	op, args := args[1], args[2:]
	if op == "wait" && len(args) > 0 {
		op, args = "wait "+args[0], args[1:]
	}
	flags := map[string][]string{}
	var name string
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			name = a
			flags[name] = nil
			continue
		}
		if name == "" {
			return fmt.Errorf("%s: argument %q before any flag", op, a)
		}
		flags[name] = append(flags[name], a)
	}
	one := func(flag string) (string, error) {
		v, ok := flags[flag]
		if !ok || len(v) != 1 {
			return "", fmt.Errorf("%s: want one value for %s, got %q", op, flag, v)
		}
		delete(flags, flag)
		return v[0], nil
	}
	table, err := one("--table-name")
	if err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	db := dynamodb.NewFromConfig(cfg)
	switch op {
	case "create-table":
		in := &dynamodb.CreateTableInput{TableName: aws.String(table)}
		for _, v := range flags["--attribute-definitions"] {
			m, err := shorthand(v, "AttributeName", "AttributeType")
			if err != nil {
				return err
			}
			in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
				AttributeName: aws.String(m["AttributeName"]), AttributeType: types.ScalarAttributeType(m["AttributeType"])})
		}
		for _, v := range flags["--key-schema"] {
			m, err := shorthand(v, "AttributeName", "KeyType")
			if err != nil {
				return err
			}
			in.KeySchema = append(in.KeySchema, types.KeySchemaElement{
				AttributeName: aws.String(m["AttributeName"]), KeyType: types.KeyType(m["KeyType"])})
		}
		delete(flags, "--attribute-definitions")
		delete(flags, "--key-schema")
		mode, err := one("--billing-mode")
		if err != nil {
			return err
		}
		in.BillingMode = types.BillingMode(mode)
		if err := noneLeft(op, flags); err != nil {
			return err
		}
		_, err = db.CreateTable(ctx, in)
		return err
	case "update-time-to-live":
		v, err := one("--time-to-live-specification")
		if err != nil {
			return err
		}
		m, err := shorthand(v, "Enabled", "AttributeName")
		if err != nil {
			return err
		}
		if err := noneLeft(op, flags); err != nil {
			return err
		}
		_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(m["AttributeName"]), Enabled: aws.Bool(m["Enabled"] == "true")}})
		return err
	case "wait table-exists":
		if err := noneLeft(op, flags); err != nil {
			return err
		}
		return dynamodb.NewTableExistsWaiter(db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 50*time.Second)
	}
	return fmt.Errorf("unsupported command dynamodb %s", op)
}

// shorthand parses the CLI's "Key=Value,Key=Value" with exactly the keys
// given.
func shorthand(v string, keys ...string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("shorthand %q: %q is not Key=Value", v, kv)
		}
		m[k] = val
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok || len(m) != len(keys) {
			return nil, fmt.Errorf("shorthand %q: want exactly the keys %s", v, strings.Join(keys, ", "))
		}
	}
	return m, nil
}

func noneLeft(op string, flags map[string][]string) error {
	for f := range flags {
		return fmt.Errorf("%s: unsupported flag %s", op, f)
	}
	return nil
}
