package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

func TestEnvironment(t *testing.T) {
	defaults := map[string]string{"SQSONCE_STORE": "memory", "SQSONCE_PROVIDER": "stub", "SQSONCE_DOCUMENTS_DIR": "/docs"}
	for _, tc := range []struct {
		name    string
		environ []string
		file    map[string]string
		want    map[string]string
	}{
		{"defaults", nil, nil, defaults},
		{"the process's variables, not others",
			[]string{"SQSONCE_PROVIDER=bedrock", "AWS_REGION=eu-west-1", "OPENAI_API_KEY=k", "HOME=/root", "PATH=/bin"}, nil,
			map[string]string{"SQSONCE_STORE": "memory", "SQSONCE_PROVIDER": "bedrock", "SQSONCE_DOCUMENTS_DIR": "/docs", "AWS_REGION": "eu-west-1", "OPENAI_API_KEY": "k"}},
		{"the file wins", []string{"SQSONCE_PROVIDER=bedrock"}, map[string]string{"SQSONCE_PROVIDER": "openai", "SQSONCE_MODEL": "m"},
			map[string]string{"SQSONCE_STORE": "memory", "SQSONCE_PROVIDER": "openai", "SQSONCE_DOCUMENTS_DIR": "/docs", "SQSONCE_MODEL": "m"}},
		{"a bucket replaces the default folder", nil, map[string]string{"SQSONCE_DOCUMENTS_BUCKET": "b"},
			map[string]string{"SQSONCE_STORE": "memory", "SQSONCE_PROVIDER": "stub", "SQSONCE_DOCUMENTS_BUCKET": "b"}},
		{"a folder given with a bucket stays (the app refuses both)", []string{"SQSONCE_DOCUMENTS_DIR=/mine"}, map[string]string{"SQSONCE_DOCUMENTS_BUCKET": "b"},
			map[string]string{"SQSONCE_STORE": "memory", "SQSONCE_PROVIDER": "stub", "SQSONCE_DOCUMENTS_DIR": "/mine", "SQSONCE_DOCUMENTS_BUCKET": "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := environment(defaults, tc.environ, tc.file)
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// make invoke with an env-vars file in SAM's shape and a bundled event:
// the file's variables reach the function (its request log is where the
// file says), another function's entry does not.
func TestRunWithEnvVars(t *testing.T) {
	riePath, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "invoke", err, rie.Install)
	}
	dir := t.TempDir()
	bootstrap := filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "../../cmd/summarise")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	requestLog := filepath.Join(dir, "requests.jsonl")
	envFile := filepath.Join(dir, "env.json")
	if err := os.WriteFile(envFile, []byte(`{
		"Parameters": {"SQSONCE_REQUEST_LOG": "`+requestLog+`"},
		"SummariseFunction": {"SQSONCE_PROVIDER": "stub"},
		"OtherFunction": {"SQSONCE_PROVIDER": "bedrock"}
	}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir("../..") // make invoke runs at the repository's root
	var out bytes.Buffer
	if err := run([]string{"-rie", riePath, "-env-vars", envFile, bootstrap, "events/duplicate-delivery.json"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	want := "{\"batchItemFailures\":[]}\n{\"batchItemFailures\":[]}\ninvocations: 2, provider calls: 1\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	b, err := os.ReadFile(requestLog)
	if err != nil {
		t.Fatalf("the request log the file names: %v", err)
	}
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Errorf("%d lines in the request log, want 1", n)
	}
}
