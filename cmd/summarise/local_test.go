package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
)

// repoRoot is the module root, where the runner's default documents folder
// (samples/documents) and the event fixtures are.
var repoRoot = filepath.Join("..", "..")

func fixture(name string) string { return filepath.Join(repoRoot, "events", name) }

type runResult struct {
	status    int
	responses []events.SQSEventResponse
	summary   string
	stderr    string
}

func runRunner(t *testing.T, getenv func(string) string, args ...string) runResult {
	t.Helper()
	var stdout, stderr strings.Builder
	r := runResult{status: runLocal(t.Context(), args, getenv, &stdout, &stderr), stderr: stderr.String()}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "deliveries: ") {
			r.summary = line
			continue
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		r.responses = append(r.responses, resp)
	}
	return r
}

func failed(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// localEnv is a local environment with the documents of the repository.
func localEnv(extra map[string]string) func(string) string {
	kv := map[string]string{envDocumentsDir: filepath.Join(repoRoot, "samples", "documents")}
	for k, v := range extra {
		kv[k] = v
	}
	return env(kv)
}

func TestRunnerFixtures(t *testing.T) {
	tests := []struct {
		file    string
		repeat  int
		summary string
		failed  []string // per delivery
	}{
		{"duplicate-delivery.json", 2, "deliveries: 2, provider calls: 1", nil},
		{"producer-resend.json", 1, "deliveries: 2, provider calls: 1", nil},
		{"same-key-batch.json", 3, "deliveries: 6, provider calls: 1", nil},
		{"fifo.json", 2, "deliveries: 6, provider calls: 3", nil},
		{"malformed.json", 2, "deliveries: 4, provider calls: 1", []string{"8c3e5a7b-2d4f-4b6c-9e8a-0f1b2c3d0502"}},
		{"missing-key.json", 1, "deliveries: 2, provider calls: 1", []string{"ae5a7c9d-4f6b-4d8e-b1ca-2b3d4e5f0602"}},
		{"mixed-batch.json", 2, "deliveries: 10, provider calls: 2",
			[]string{"1b2c3d4e-5f6a-4b7c-9d8e-0f1a2b3c0702", "3d4e5f6a-7b8c-4d9e-bfa0-2b3c4d5e0704"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := runRunner(t, localEnv(nil), "-event", fixture(tt.file), "-repeat", fmt.Sprint(tt.repeat))
			if r.status != 0 {
				t.Fatalf("status %d, stderr:\n%s", r.status, r.stderr)
			}
			if r.summary != tt.summary {
				t.Errorf("summary line %q, want %q", r.summary, tt.summary)
			}
			if len(r.responses) != tt.repeat {
				t.Fatalf("%d responses, want %d", len(r.responses), tt.repeat)
			}
			want := tt.failed
			if want == nil {
				want = []string{}
			}
			for i, resp := range r.responses {
				if got := failed(resp); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("delivery %d: failed %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

func TestRunnerErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte(`{"Records":[]}`), 0o644)
	notJSON := filepath.Join(dir, "bad.json")
	os.WriteFile(notJSON, []byte(`nope`), 0o644)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no event", nil, nil, "-event is required"},
		{"missing file", nil, []string{"-event", filepath.Join(dir, "none.json")}, "no such file"},
		{"no records", nil, []string{"-event", empty}, "no Records"},
		{"not an event", nil, []string{"-event", notJSON}, "not an SQS event"},
		{"bad repeat", nil, []string{"-event", fixture("duplicate-delivery.json"), "-repeat", "0"}, "-repeat 0"},
		{"bad store", nil, []string{"-event", fixture("duplicate-delivery.json"), "-store", "valkey"}, `store "valkey"`},
		{"dynamodb without table", nil, []string{"-event", fixture("duplicate-delivery.json"), "-store", "dynamodb"}, envTable},
		{"bad provider", nil, []string{"-event", fixture("duplicate-delivery.json"), "-provider", "gpt"}, "gpt"},
		{"expiry below the queue window", map[string]string{envExpiresAfter: "24h", envQueueWindow: "96h"},
			[]string{"-event", fixture("duplicate-delivery.json")}, "shorter than the queue's window"},
		{"stray argument", nil, []string{"-event", fixture("duplicate-delivery.json"), "extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runRunner(t, localEnv(tt.env), tt.args...)
			if r.status != 2 {
				t.Errorf("status %d, want 2", r.status)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not mention %q", r.stderr, tt.want)
			}
			if r.summary != "" {
				t.Errorf("summary line printed after a configuration error: %q", r.summary)
			}
		})
	}
}

func TestRunnerVerboseAndMetrics(t *testing.T) {
	r := runRunner(t, localEnv(nil), "-event", fixture("duplicate-delivery.json"), "-repeat", "2", "-v", "-metrics")
	if r.status != 0 {
		t.Fatalf("status %d: %s", r.status, r.stderr)
	}
	for _, want := range []string{"outcome=claimed", "outcome=replayed", `msg="provider call"`, `"DuplicatesSuppressed":1`, `"ProviderCalls":1`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %s:\n%s", want, r.stderr)
		}
	}
}

// TestRunnerDynamoDB runs the local runner on the DynamoDB store (moto):
// the second run is a new process in all but name (a new guard and store),
// and still makes no provider call.
func TestRunnerDynamoDB(t *testing.T) {
	db := moto.DynamoDB(t)
	table, summaries := motoserver.NewTable(t, db), motoserver.NewTable(t, db)
	awsEnv(t)
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	getenv := localEnv(map[string]string{envTable: table, envSummariesTable: summaries,
		envDynamoDBEndpoint: moto.Endpoint(t), envRequestLog: log})
	for i, want := range []string{"deliveries: 1, provider calls: 1", "deliveries: 2, provider calls: 0"} {
		r := runRunner(t, getenv, "-event", fixture("duplicate-delivery.json"), "-repeat", fmt.Sprint(i+1), "-store", "dynamodb")
		if r.status != 0 || r.summary != want {
			t.Fatalf("run %d: status %d, summary %q, want %q; stderr:\n%s", i+1, r.status, r.summary, want, r.stderr)
		}
	}
	if lines := requestLog(t, log); len(lines) != 1 {
		t.Errorf("request log has %d lines, want 1", len(lines))
	}
}

// TestRunnerDynamoDBSortKey: with the sort key variables the idempotentconsumer
// construct sets for a table with a composite key, the records go to that
// table under its two keys (the partition value and the record id), and a
// second run replays them. Before the variables were read, every claim
// failed: the items lacked the table's keys.
func TestRunnerDynamoDBSortKey(t *testing.T) {
	db := moto.DynamoDB(t)
	table := motoserver.NewTableWithSortKey(t, db, "pk", "sk")
	awsEnv(t)
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	getenv := localEnv(map[string]string{envTable: table, envDynamoDBEndpoint: moto.Endpoint(t), envRequestLog: log,
		envPartitionKey: "pk", envSortKey: "sk", envStaticPartition: "orders#idempotency"})
	for i, want := range []string{"deliveries: 1, provider calls: 1", "deliveries: 2, provider calls: 0"} {
		r := runRunner(t, getenv, "-event", fixture("duplicate-delivery.json"), "-repeat", fmt.Sprint(i+1), "-store", "dynamodb")
		if r.status != 0 || r.summary != want {
			t.Fatalf("run %d: status %d, summary %q, want %q; stderr:\n%s", i+1, r.status, r.summary, want, r.stderr)
		}
	}
	lines := requestLog(t, log)
	if len(lines) != 1 {
		t.Fatalf("request log has %d lines, want 1", len(lines))
	}
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "orders#idempotency"},
			"sk": &types.AttributeValueMemberS{Value: lines[0].RecordID},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := out.Item["status"].(*types.AttributeValueMemberS); st == nil || st.Value != "COMPLETED" {
		t.Errorf("record under (orders#idempotency, %s) = %v, want COMPLETED", lines[0].RecordID, out.Item)
	}
}

// TestRunnerMetricsSameKeyBatch checks the EMF counts of a batch whose two
// records share a key: one provider call, the other record answered
// without a call (from the run it shared in process, or from the store if
// it arrived after the run completed), and nothing failed; the batch after
// it replays both.
func TestRunnerMetricsSameKeyBatch(t *testing.T) {
	r := runRunner(t, localEnv(nil), "-event", fixture("same-key-batch.json"), "-repeat", "2", "-metrics")
	if r.status != 0 {
		t.Fatalf("status %d: %s", r.status, r.stderr)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.stderr))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["_aws"] != nil {
			lines = append(lines, m)
		}
	}
	want := []map[string]float64{
		{"Records": 2, "ProviderCalls": 1, "DuplicatesSuppressed": 1, "InProgressRetried": 0, "Failed": 0},
		{"Records": 2, "ProviderCalls": 0, "DuplicatesSuppressed": 2, "InProgressRetried": 0, "Failed": 0},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d EMF lines, want %d:\n%s", len(lines), len(want), r.stderr)
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("batch %d: %s = %v, want %v", i+1, k, lines[i][k], v)
			}
		}
	}
}
