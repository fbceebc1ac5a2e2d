package importcheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/workspace"
)

const dynamoOnly = `package main

import (
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

var _ driver.Store = (*dynamostore.Store)(nil)

func main() {}
`

const withRedis = `package main

import (
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

var _ driver.Store = (*redisstore.Store)(nil)

func main() {}
`

// deps writes a module depending on this repository with main.go as its
// only file, and returns the packages go list -deps reports for it.
func deps(t *testing.T, main string) []string {
	t.Helper()
	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.26.0\n\n" + workspace.Replaces(t)
	sum := workspace.Sums(t)
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(main)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// go test puts its own GOROOT/bin first in PATH.
	cmd := exec.Command("go", "list", "-mod=mod", "-deps", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps in %s: %v\n%s", dir, err, out)
	}
	return strings.Fields(string(out))
}

func matching(pkgs []string, prefixes ...string) []string {
	var got []string
	for _, p := range pkgs {
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) {
				got = append(got, p)
				break
			}
		}
	}
	return got
}

var storeDrivers = []string{"github.com/redis/", "github.com/jackc/"}

func TestDynamoOnlyCompilesNoRedisOrPostgres(t *testing.T) {
	pkgs := deps(t, dynamoOnly)
	if len(matching(pkgs, "github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore", "github.com/aws/aws-sdk-go-v2/service/dynamodb")) < 2 {
		t.Fatalf("go list -deps does not list dynamostore and the DynamoDB client: %v", pkgs)
	}
	if bad := matching(pkgs, append(storeDrivers, "github.com/sqsonce/sqsonce/middleware/idempotency/redisstore", "github.com/sqsonce/sqsonce/middleware/idempotency/pgstore")...); len(bad) > 0 {
		t.Errorf("a program importing only idempotency and dynamostore compiles %v", bad)
	}
}

// TestRedisImportIsSeen is the check's control: importing redisstore does
// bring go-redis in.
func TestRedisImportIsSeen(t *testing.T) {
	if got := matching(deps(t, withRedis), "github.com/redis/go-redis/v9"); len(got) == 0 {
		t.Error("go list -deps of a program importing redisstore does not list go-redis: the check cannot see a driver")
	}
}

// TestDriverImportsOnlyTheStandardLibrary: a store's package compiles the
// driver package and nothing else beyond the standard library through it,
// but internal/inflate (the bounded gunzip of a compressed seal), itself
// of the standard library alone.
func TestDriverImportsOnlyTheStandardLibrary(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../../middleware/idempotency/driver")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	want := []string{"github.com/sqsonce/sqsonce/internal/inflate", "github.com/sqsonce/sqsonce/middleware/idempotency/driver"}
	if got := strings.Fields(string(out)); !slices.Equal(got, want) {
		t.Errorf("the driver package's non-standard dependencies are %v, want %v", got, want)
	}
}
