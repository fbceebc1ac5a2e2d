package motoserver_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

func TestTableRoundTrip(t *testing.T) {
	var calls motoserver.Counter
	db := moto.DynamoDB(t, calls.Option())
	table := motoserver.NewTable(t, db)
	ctx := context.Background()

	calls.Reset()
	item := map[string]types.AttributeValue{
		"id":  &types.AttributeValueMemberS{Value: "k"},
		"val": &types.AttributeValueMemberS{Value: "v"},
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"id": item["id"]},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := out.Item["val"].(*types.AttributeValueMemberS); v == nil || v.Value != "v" {
		t.Fatalf("GetItem = %v, want val v", out.Item)
	}
	if got := calls.Calls(); got["PutItem"] != 1 || got["GetItem"] != 1 || calls.Total() != 2 {
		t.Fatalf("calls = %v, want one PutItem and one GetItem", got)
	}
}

func TestReset(t *testing.T) {
	if os.Getenv(motoserver.EnvEndpoint) != "" {
		t.Skip("reset needs moto; an external endpoint is set")
	}
	db := moto.DynamoDB(t)
	name := motoserver.TableName(t)
	ctx := context.Background()
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	moto.Reset(t)
	_, err = db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("DescribeTable after reset: err = %v, want ResourceNotFoundException", err)
	}
}

// TestClose starts a server of its own and checks that Close stops it.
func TestClose(t *testing.T) {
	if os.Getenv(motoserver.EnvEndpoint) != "" {
		t.Skip("an external endpoint is set: nothing is started")
	}
	srv := motoserver.New()
	ep := srv.Endpoint(t)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	client := &http.Client{Timeout: time.Second}
	if resp, err := client.Get(ep + "/moto-api/data.json"); err == nil {
		resp.Body.Close()
		t.Fatalf("%s still answers after Close", ep)
	}
}

// TestUnavailable runs this test binary again with moto_server out of PATH:
// under CI=true a test that needs the server must fail, naming the command;
// otherwise it is skipped with the install hint.
func TestUnavailable(t *testing.T) {
	if os.Getenv("MOTOSERVER_CHILD") != "" {
		moto.Endpoint(t)
		t.Fatal("Endpoint returned without a server")
	}
	// broken is a moto_server that dies at once, as one with a broken
	// Python environment does.
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "moto_server"), []byte("#!/bin/sh\necho 'no module named moto' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		ci       string
		path     string
		wantFail bool
		want     []string
	}{
		{name: "missing/CI=true", ci: "true", path: t.TempDir(), wantFail: true,
			want: []string{"--- FAIL: TestUnavailable", "moto_server not found", "CI=true"}},
		{name: "missing/CI=", path: t.TempDir(),
			want: []string{"--- SKIP: TestUnavailable", "moto_server not found"}},
		{name: "broken/CI=true", ci: "true", path: broken, wantFail: true,
			want: []string{"--- FAIL: TestUnavailable", "exited before answering", "no module named moto"}},
		{name: "broken/CI=", path: broken,
			want: []string{"--- SKIP: TestUnavailable", "exited before answering"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestUnavailable$", "-test.v")
			cmd.Env = append(withoutEnv(os.Environ(), "PATH", "CI", motoserver.EnvEndpoint),
				"PATH="+tc.path, "MOTOSERVER_CHILD=1", "CI="+tc.ci)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.wantFail {
				t.Fatalf("child failed = %v (%v), want %v; output:\n%s", failed, err, tc.wantFail, out)
			}
			for _, want := range append(tc.want, "pip install 'moto[server]'") {
				if !strings.Contains(string(out), want) {
					t.Errorf("child output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
