package oteltrace_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/workspace"
)

// TestNoOpenTelemetryWithoutIt: a function's module that imports
// idempotency, dynamostore and batch, but not this package, has no
// OpenTelemetry module in its build list.
func TestNoOpenTelemetryWithoutIt(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/fn\n\ngo 1.26.0\n\n"+workspace.Replaces(t))
	write("go.sum", string(workspace.Sums(t)))
	write("main.go", `package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

var _ = dynamostore.New

func main() {
	g, _ := idempotency.New(idempotency.Config{})
	_ = g
	lambda.StartHandlerFunc(batch.SQS[string](nil, batch.Options{}))
}
`)
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	list := exec.Command("go", "list", "-m", "all")
	list.Dir = dir
	list.Env = append(os.Environ(), "GOWORK=off")
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/aws/aws-sdk-go-v2/service/dynamodb") {
		t.Fatalf("the build list lacks dynamodb: the module did not build as meant:\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "go.opentelemetry.io/") {
			t.Errorf("a function that does not import oteltrace has %s in its build list", line)
		}
	}
}
