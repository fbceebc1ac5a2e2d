package main

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// The stacks the tests synthesise, all in one app and one synth: jsii
// starts a Node process per test binary, which is the slow part.
const (
	defaultStack = defaultStackName // every setting at its default
	customStack  = "SqsonceCustom"  // every setting changed
	stubStack    = "SqsonceStub"    // provider stub, no batching window
)

// customContext is the context of customStack, as -c flags would give it.
func customContext() map[string]any {
	return map[string]any{
		"stackName":           customStack,
		"namespace":           "docs-v1",
		"model":               "us.anthropic.claude-3-5-haiku-20241022-v1:0",
		"documentsBucket":     "my-documents",
		"documentsPrefix":     "in/",
		"concurrency":         "8",
		"alarmTopicArn":       "arn:aws:sns:eu-west-1:123456789012:alarms",
		"memorySize":          float64(512), // a JSON number, as from cdk.json
		"timeout":             "1m",
		"minRemaining":        "45s",
		"retention":           "24h",
		"deadLetterRetention": "48h",
		"maxReceiveCount":     "3",
		"queueName":           "summarise-requests",
		"expiryMargin":        "2h",
		"batchSize":           "20",
		"maxBatchingWindow":   "10s",
		"maxConcurrency":      "2",
		"oldestMessageAlarm":  "15m",
		"tableRemovalPolicy":  "destroy",
		"deletionProtection":  "false",
		"tracing":             "active",
	}
}

func stubContext() map[string]any {
	return map[string]any{
		"stackName":         stubStack,
		"provider":          "stub",
		"maxBatchingWindow": "0s",
	}
}

// synthesis is the result of the one synth.
type synthesis struct {
	outdir       string
	bootstrapZip string
	templates    map[string]template
	err          error
}

var (
	synthOnce   sync.Once
	synthResult synthesis
	testTmp     string // TestMain's directory, removed at exit
)

func TestMain(m *testing.M) {
	var err error
	testTmp, err = os.MkdirTemp("", "sqsonce-infra-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	jsii.Close()
	os.RemoveAll(testTmp)
	os.Exit(code)
}

// synth synthesises the three stacks once per test binary and returns the
// parsed templates. When SQSONCE_TEMPLATE_DIR is set it also copies the
// templates there, for cfn-lint (see the Makefile).
func synth(t *testing.T) synthesis {
	t.Helper()
	synthOnce.Do(func() {
		synthResult = doSynth()
	})
	if synthResult.err != nil {
		t.Fatalf("synth: %v", synthResult.err)
	}
	return synthResult
}

func doSynth() (s synthesis) {
	defer func() {
		if r := recover(); r != nil { // a failed CDK validation is a panic
			s.err = fmt.Errorf("panic: %v", r)
		}
	}()
	zipPath, err := dummyZip(testTmp)
	if err != nil {
		return synthesis{err: err}
	}
	ctx, err := cliContext()
	if err != nil {
		return synthesis{err: err}
	}
	ctx["bootstrapZip"] = zipPath
	outdir := filepath.Join(testTmp, "cdk.out")
	app, err := newApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(outdir)})
	if err != nil {
		return synthesis{err: err}
	}
	for _, extra := range []map[string]any{customContext(), stubContext()} {
		extra["bootstrapZip"] = zipPath
		cfg, err := readConfig(func(k string) any { return extra[k] })
		if err != nil {
			return synthesis{err: err}
		}
		if _, err := newSummariseStack(app, cfg); err != nil {
			return synthesis{err: err}
		}
	}
	app.Synth(nil)

	s = synthesis{outdir: outdir, bootstrapZip: zipPath, templates: map[string]template{}}
	lintDir := os.Getenv("SQSONCE_TEMPLATE_DIR")
	if lintDir != "" {
		if err := os.MkdirAll(lintDir, 0o755); err != nil {
			return synthesis{err: err}
		}
	}
	for _, name := range []string{defaultStack, customStack, stubStack} {
		file := name + ".template.json"
		b, err := os.ReadFile(filepath.Join(outdir, file))
		if err != nil {
			return synthesis{err: err}
		}
		var tpl template
		if err := json.Unmarshal(b, &tpl); err != nil {
			return synthesis{err: fmt.Errorf("%s: %w", file, err)}
		}
		s.templates[name] = tpl
		if lintDir != "" {
			if err := os.WriteFile(filepath.Join(lintDir, file), b, 0o644); err != nil {
				return synthesis{err: err}
			}
		}
	}
	return s
}

// cliContext is the context the CDK CLI hands the app: cdk.json's context
// (its feature flags change what is synthesised) and the CLI's own flags.
func cliContext() (map[string]any, error) {
	b, err := os.ReadFile("cdk.json")
	if err != nil {
		return nil, err
	}
	var cdkJSON struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &cdkJSON); err != nil {
		return nil, fmt.Errorf("cdk.json: %w", err)
	}
	ctx := cdkJSON.Context
	ctx["aws:cdk:enable-path-metadata"] = true
	ctx["aws:cdk:enable-asset-metadata"] = true
	ctx["aws:cdk:version-reporting"] = true
	return ctx, nil
}

// dummyZip writes a zip holding an executable "bootstrap", standing in for
// the output of make build.
func dummyZip(dir string) (string, error) {
	path := filepath.Join(dir, "bootstrap.zip")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return "", err
	}
	if _, err := w.Write([]byte("#!/bin/sh\necho not a real build\n")); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return path, f.Close()
}

// template is a parsed CloudFormation template.
type template struct {
	Resources map[string]resource `json:"Resources"`
	Outputs   map[string]struct {
		Value any `json:"Value"`
	} `json:"Outputs"`
}

// resource is one resource of a template.
type resource struct {
	Type           string         `json:"Type"`
	Properties     map[string]any `json:"Properties"`
	Metadata       map[string]any `json:"Metadata"`
	DeletionPolicy string         `json:"DeletionPolicy"`
	UpdatePolicy   string         `json:"UpdateReplacePolicy"`
}

// only returns the one resource of type typ whose construct path contains
// pathPart, failing the test unless there is exactly one.
func (tpl template) only(t *testing.T, typ, pathPart string) (string, resource) {
	t.Helper()
	var ids []string
	for id, r := range tpl.Resources {
		path, _ := r.Metadata["aws:cdk:path"].(string)
		if r.Type == typ && strings.Contains(path, pathPart) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("want one %s at a path with %q, found %v", typ, pathPart, ids)
	}
	return ids[0], tpl.Resources[ids[0]]
}

// ofType returns the logical ids of every resource of type typ, sorted.
func (tpl template) ofType(typ string) []string {
	var ids []string
	for id, r := range tpl.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// get walks a parsed JSON value by map keys and slice indexes.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	cur := v
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not an object", path[:i+1], cur)
			}
			cur, ok = m[k]
			if !ok {
				t.Fatalf("at %v: no key %q in %s", path[:i+1], k, js(m))
			}
		case int:
			s, ok := cur.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("at %v: %s has no index %d", path[:i+1], js(cur), k)
			}
			cur = s[k]
		}
	}
	return cur
}

// num returns a JSON number as an int.
func num(t *testing.T, v any) int {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		t.Fatalf("%s is not an integer", js(v))
	}
	return int(f)
}

// secs returns a JSON number of seconds as a duration.
func secs(t *testing.T, v any) time.Duration {
	t.Helper()
	return time.Duration(num(t, v)) * time.Second
}

// js is the canonical JSON of v (object keys sorted), to compare and print
// template values.
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func ref(id string) string          { return js(map[string]any{"Ref": id}) }
func getAtt(id, attr string) string { return js(map[string]any{"Fn::GetAtt": []any{id, attr}}) }
func list(v any) []any {
	if s, ok := v.([]any); ok {
		return s
	}
	return []any{v}
}

// strs returns a JSON string or list of strings as a sorted slice.
func strs(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, e := range list(v) {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("%s is not a string", js(e))
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
