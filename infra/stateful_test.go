package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The stateful resources of the app's stacks must survive every upgrade:
// CloudFormation replaces a resource whose logical id changes, or one of
// whose replacement-requiring properties changes, and a replaced table,
// queue or bucket loses its data. TestStatefulSnapshot pins both in
// testdata/stateful.json; a change fails it until the snapshot is updated
// (go test -run TestStatefulSnapshot -update) and README.md's Upgrades
// section has a note naming the new snapshot's digest.

var update = flag.Bool("update", false, "rewrite testdata/stateful.json from the synthesised stacks")

const snapshotFile = "testdata/stateful.json"

// replacing lists, for each stateful resource type the app creates, the
// properties whose change makes CloudFormation replace the resource: those
// the CloudFormation resource reference marks "Update requires:
// Replacement" and the resource schema's createOnlyProperties
// (TestReplacingCoversSchemas checks the second against cfn-lint's copy).
// Each resource's DeletionPolicy and UpdateReplacePolicy are pinned too:
// they decide what a delete or a replacement leaves behind.
var replacing = map[string][]string{
	"AWS::DynamoDB::Table": {"TableName", "KeySchema", "KeyAttributeTypes", "LocalSecondaryIndexes", "ImportSourceSpecification"},
	"AWS::SQS::Queue":      {"QueueName", "FifoQueue"},
	"AWS::S3::Bucket":      {"BucketName", "BucketNamePrefix", "BucketNamespace"},
	"AWS::Logs::LogGroup":  {"LogGroupName"},
}

// snapshot is, per stack and logical id, a stateful resource's type,
// policies and replacement-requiring properties (null when absent).
type snapshot map[string]map[string]map[string]any

func takeSnapshot(t *testing.T) snapshot {
	t.Helper()
	s := snapshot{}
	for name, tpl := range synth(t).templates {
		s[name] = map[string]map[string]any{}
		for id, r := range tpl.Resources {
			props, ok := replacing[r.Type]
			if !ok {
				continue
			}
			entry := map[string]any{
				"Type":                r.Type,
				"DeletionPolicy":      r.DeletionPolicy,
				"UpdateReplacePolicy": r.UpdatePolicy,
			}
			for _, p := range props {
				entry[p] = r.Properties[p]
			}
			if r.Type == "AWS::DynamoDB::Table" {
				entry["KeyAttributeTypes"] = keyAttributeTypes(t, r)
			}
			s[name][id] = entry
		}
	}
	return s
}

// keyAttributeTypes returns the types of the key schema's attributes, from
// the table's AttributeDefinitions (which also hold index attributes, whose
// change does not replace the table).
func keyAttributeTypes(t *testing.T, r resource) map[string]any {
	t.Helper()
	keys := map[string]bool{}
	for _, k := range list(r.Properties["KeySchema"]) {
		name, _ := get(t, k, "AttributeName").(string)
		keys[name] = true
	}
	types := map[string]any{}
	for _, d := range list(r.Properties["AttributeDefinitions"]) {
		if name, _ := get(t, d, "AttributeName").(string); keys[name] {
			types[name] = get(t, d, "AttributeType")
		}
	}
	return types
}

func (s snapshot) encode(t *testing.T) []byte {
	t.Helper()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// digest names a snapshot in README.md's upgrade notes.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

func TestStatefulSnapshot(t *testing.T) {
	got := takeSnapshot(t).encode(t)
	if *update {
		if err := os.WriteFile(snapshotFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(snapshotFile)
	if err != nil {
		t.Fatalf("%v (create it with go test -run TestStatefulSnapshot -update)", err)
	}
	if !bytes.Equal(got, want) {
		var g, w snapshot
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatalf("%s: %v", snapshotFile, err)
		}
		for _, line := range diffSnapshots(w, g) {
			t.Error(line)
		}
		t.Fatalf("the stateful resources changed: a deployed stack would replace or lose them. If that is intended, " +
			"run go test -run TestStatefulSnapshot -update and add an upgrade note to README.md (Upgrades) naming the new snapshot")
	}

	// Every snapshot has its upgrade note.
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	upgrades := section(string(readme), "## Upgrades")
	if upgrades == "" {
		t.Fatal("README.md has no \"## Upgrades\" section")
	}
	if d := digest(want); !strings.Contains(upgrades, "snapshot `"+d+"`") {
		t.Errorf("README.md's Upgrades section has no note for snapshot `%s` (%s): say what this change replaces "+
			"and what the owner of a deployed stack must do first", d, snapshotFile)
	}
}

// diffSnapshots lists what differs between two snapshots, resource by
// resource.
func diffSnapshots(old, new snapshot) []string {
	var out []string
	for _, stack := range sortedKeys(mergeKeys(old, new)) {
		o, n := old[stack], new[stack]
		for _, id := range sortedKeys(mergeKeys(o, n)) {
			switch {
			case o[id] == nil:
				out = append(out, stack+": new "+id+" "+js(n[id]))
			case n[id] == nil:
				out = append(out, stack+": "+id+" is gone (renamed, or removed: CloudFormation deletes or replaces it) "+js(o[id]))
			default:
				for _, p := range sortedKeys(mergeKeys(o[id], n[id])) {
					if js(o[id][p]) != js(n[id][p]) {
						out = append(out, stack+": "+id+" "+p+": "+js(o[id][p])+" -> "+js(n[id][p]))
					}
				}
			}
		}
	}
	return out
}

func mergeKeys[V any](a, b map[string]V) map[string]V {
	m := map[string]V{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// section returns the text of the Markdown section that starts with the
// heading line, up to the next heading of the same or a higher level.
func section(doc, heading string) string {
	level := strings.IndexByte(heading, ' ')
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+1+len(heading):]
	end := regexp.MustCompile(`\n#{1,` + strconv.Itoa(level) + `} `).FindStringIndex(rest)
	if end != nil {
		rest = rest[:end[0]]
	}
	return rest
}

// TestReplacingCoversSchemas checks replacing against the
// createOnlyProperties of CloudFormation's resource schemas, as cfn-lint
// ships them: a property CloudFormation cannot update in place must be in
// the snapshot.
func TestReplacingCoversSchemas(t *testing.T) {
	types := sortedKeys(replacing)
	script := `
import json, sys
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER as m
print(json.dumps({t: m.get_resource_schema("us-east-1", t).schema.get("createOnlyProperties", []) for t in sys.argv[1:]}))
`
	out, err := exec.Command("python3", append([]string{"-c", script}, types...)...).Output()
	if err != nil {
		msg := "python3 with cfn-lint (pip install cfn-lint) reads CloudFormation's resource schemas: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var createOnly map[string][]string
	if err := json.Unmarshal(out, &createOnly); err != nil {
		t.Fatalf("cfn-lint's schemas: %v: %s", err, out)
	}
	for _, typ := range types {
		if len(createOnly[typ]) == 0 {
			t.Errorf("%s: cfn-lint lists no createOnlyProperties", typ)
		}
		for _, p := range createOnly[typ] {
			name := strings.TrimPrefix(p, "/properties/")
			if !slices.Contains(replacing[typ], name) {
				t.Errorf("%s: %s is create-only in CloudFormation's schema but not in the snapshot's properties", typ, name)
			}
		}
	}
}

// A renamed logical id and a named queue both show in the diff that
// TestStatefulSnapshot prints.
func TestDiffSnapshots(t *testing.T) {
	queue := func(name any) map[string]any {
		return map[string]any{"Type": "AWS::SQS::Queue", "QueueName": name, "FifoQueue": nil}
	}
	old := snapshot{"S": {"QueueA": queue(nil), "Table": {"Type": "AWS::DynamoDB::Table"}}}
	new := snapshot{"S": {"QueueA": queue("orders"), "TableRenamed": {"Type": "AWS::DynamoDB::Table"}}}
	got := diffSnapshots(old, new)
	want := []string{
		`S: QueueA QueueName: null -> "orders"`,
		`S: Table is gone (renamed, or removed: CloudFormation deletes or replaces it) {"Type":"AWS::DynamoDB::Table"}`,
		`S: new TableRenamed {"Type":"AWS::DynamoDB::Table"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := diffSnapshots(old, old); len(d) != 0 {
		t.Errorf("diff of a snapshot with itself: %v", d)
	}
}
