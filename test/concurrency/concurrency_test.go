package concurrency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/runtimeapi"
)

// perProcess is AWS_LAMBDA_MAX_CONCURRENCY: the invocations one process
// serves at once.
const perProcess = 4

// timeout is each invocation's: infra's function timeout (3 minutes), the
// one the app's default SQSONCE_MIN_REMAINING (90 s) is set against.
const timeout = 3 * time.Minute

var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

var moto = motoserver.New()

func TestMain(m *testing.M) {
	code := moto.Run(m)
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// bootstrap builds cmd/summarise as Lambda runs it (-tags lambda.norpc,
// CGO off), for this machine, once per test binary.
func bootstrap(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "concurrency-"); buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", buildPath, "../../cmd/summarise")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// The stores a scenario runs on: the memory store, and DynamoDB (the
// default inside Lambda) on moto_server, with the summaries table written
// in the record's completing transaction.
var stores = []string{"memory", "dynamodb"}

// env is cmd/summarise's environment for a run in one process on store:
// the stub provider (each call taking delay, so that the invocations
// overlap while it runs), the request log in a file, the bundled
// documents; pacing and the dead-letter queue off (the records' receipt
// handles are not real). The rest is events/env/stub.json's.
func env(t *testing.T, store, requestLog string, delay time.Duration) map[string]string {
	t.Helper()
	docs, err := filepath.Abs(filepath.Join("..", "..", "samples", "documents"))
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{
		"SQSONCE_STORE":         store,
		"SQSONCE_PROVIDER":      "stub",
		"SQSONCE_MODEL":         "stub-model",
		"SQSONCE_CONCURRENCY":   "4",
		"SQSONCE_STUB_DELAY":    delay.String(),
		"SQSONCE_REQUEST_LOG":   requestLog,
		"SQSONCE_DOCUMENTS_DIR": docs,
		"SQSONCE_PACING":        "off",
		"SQSONCE_DEAD_LETTER":   "off",
	}
	if store == "dynamodb" {
		db := moto.DynamoDB(t)
		e["SQSONCE_TABLE"] = motoserver.NewTable(t, db)
		e["SQSONCE_SUMMARIES_TABLE"] = motoserver.NewTable(t, db)
		e["SQSONCE_DYNAMODB_ENDPOINT"] = moto.Endpoint(t)
		e["AWS_ACCESS_KEY_ID"] = "test"
		e["AWS_SECRET_ACCESS_KEY"] = "test"
		e["AWS_REGION"] = motoserver.Region
		e["AWS_CONFIG_FILE"] = os.DevNull
		e["AWS_SHARED_CREDENTIALS_FILE"] = os.DevNull
		e["AWS_EC2_METADATA_DISABLED"] = "true"
	}
	return e
}

// start runs the function at AWS_LAMBDA_MAX_CONCURRENCY=perProcess under
// a runtime API of the test's own and waits until its init is done (all
// its workers poll /next).
func start(t *testing.T, store string, delay time.Duration, extra map[string]string) (*runtimeapi.Function, string) {
	t.Helper()
	requestLog := filepath.Join(t.TempDir(), "requests.jsonl")
	e := env(t, store, requestLog, delay)
	for k, v := range extra {
		e[k] = v
	}
	fn, err := runtimeapi.Start(runtimeapi.Config{
		Bootstrap:      bootstrap(t),
		Env:            e,
		MaxConcurrency: perProcess,
		Timeout:        timeout,
		FunctionName:   "summarise",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fn.Close(); err != nil {
			t.Error(err)
		}
		if err := fn.Err(); err != nil {
			t.Errorf("protocol errors: %v", err)
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", fn.Stdout(), fn.Stderr())
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := fn.WaitPolling(ctx, perProcess); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, fn.Stderr())
	}
	return fn, requestLog
}

// body is a summarise request for document 4471 version 9 under key.
func body(key string) string {
	return fmt.Sprintf(`{"idempotency_key":%q,"document":{"id":"4471","version":"9"},"model":"stub-model","prompt_version":"v1","parameters":{"max_tokens":300}}`, key)
}

// record is an SQS record as Lambda delivers it.
func record(messageID, key string) events.SQSMessage {
	return events.SQSMessage{
		MessageId:     messageID,
		ReceiptHandle: "AQEB" + messageID,
		Body:          body(key),
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "1",
			"SentTimestamp":                    "1735725600000",
			"SenderId":                         "AROAEXAMPLEPRODUCER:producer",
			"ApproximateFirstReceiveTimestamp": "1735725600120",
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSourceARN:    "arn:aws:sqs:us-east-1:123456789012:summarise",
		EventSource:       "aws:sqs",
		AWSRegion:         "us-east-1",
	}
}

// outcome is one invocation's answer.
type outcome struct {
	res  runtimeapi.Result
	resp events.SQSEventResponse
	err  error // a function error or an answer that is no batch response
}

// invokeAll enqueues the events at once and waits for every answer.
func invokeAll(t *testing.T, fn *runtimeapi.Function, evs []events.SQSEvent) []outcome {
	t.Helper()
	var calls []*runtimeapi.Call
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		c, err := fn.Enqueue(runtimeapi.Invocation{Payload: b})
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out := make([]outcome, len(calls))
	for i, c := range calls {
		res, err := c.Wait(ctx)
		if err != nil {
			t.Fatalf("invocation %d: %v", i, err)
		}
		out[i].res = res
		switch {
		case res.Err != nil:
			out[i].err = res.Err
		default:
			if err := json.Unmarshal(res.Response, &out[i].resp); err != nil || out[i].resp.BatchItemFailures == nil {
				out[i].err = fmt.Errorf("response %s is not a batch response: %v", res.Response, err)
			}
		}
	}
	return out
}

// overlapped reports whether every invocation was handed out before the
// first one was answered: they all ran at once.
func overlapped(out []outcome) bool {
	var lastOut, firstAnswer time.Time
	for _, o := range out {
		if o.res.HandedOut.After(lastOut) {
			lastOut = o.res.HandedOut
		}
		if firstAnswer.IsZero() || o.res.Answered.Before(firstAnswer) {
			firstAnswer = o.res.Answered
		}
	}
	return lastOut.Before(firstAnswer)
}

// requestLog returns the request log's lines.
func requestLog(t *testing.T, path string) []handler.CallRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []handler.CallRecord
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r handler.CallRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("request log line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// emfSums adds up the EMF lines' counts, and returns how many lines there
// were.
func emfSums(stdout string) (map[string]float64, int) {
	sums := map[string]float64{}
	n := 0
	for _, l := range runtimeapi.JSONLines(stdout) {
		if l["_aws"] == nil {
			continue
		}
		n++
		for _, m := range []string{"ProviderCalls", "DuplicatesSuppressed", "InProgressRetried", "TakenOver", "Failed", "DoubleRuns", "Quarantined"} {
			v, _ := l[m].(float64)
			sums[m] += v
		}
	}
	return sums, n
}

// outcomes counts the guard's log lines ("idempotency") by outcome/source.
func outcomes(stdout string) map[string]int {
	got := map[string]int{}
	for _, l := range runtimeapi.JSONLines(stdout) {
		if l["msg"] == "idempotency" {
			got[fmt.Sprint(l["outcome"], "/", l["source"])]++
		}
	}
	return got
}

// checkAnswers fails t for an invocation that failed, or failed a record.
func checkAnswers(t *testing.T, out []outcome) {
	t.Helper()
	for i, o := range out {
		if o.err != nil {
			t.Errorf("invocation %d (%s): %v", i, o.res.RequestID, o.err)
			continue
		}
		if len(o.resp.BatchItemFailures) != 0 {
			t.Errorf("invocation %d (%s): batchItemFailures %v, want none", i, o.res.RequestID, o.resp.BatchItemFailures)
		}
	}
}

// checkLines fails t for a line of standard output that is not one JSON
// object: concurrent invocations write their log and EMF lines whole.
func checkLines(t *testing.T, stdout string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("stdout line is not a JSON object (torn by a concurrent write?): %q", line)
		}
	}
}

// TestOneKey: four invocations at once in one process, each a batch of one
// record under one key, make one provider call; the three others share its
// result, and no record fails. Both a broker duplicate (one message id) and
// a producer re-send (a message id each).
func TestOneKey(t *testing.T) {
	for _, store := range stores {
		for _, tc := range []struct {
			name      string
			messageID func(i int) string
		}{
			{"broker duplicate", func(int) string { return "5f1b7a52-0c1e-4d8e-9b55-3c6f1a9e4471" }},
			{"producer re-send", func(i int) string { return fmt.Sprintf("5f1b7a52-0c1e-4d8e-9b55-3c6f1a9e447%d", i) }},
		} {
			t.Run(store+"/"+tc.name, func(t *testing.T) {
				fn, log := start(t, store, 500*time.Millisecond, nil)
				var evs []events.SQSEvent
				for i := range perProcess {
					evs = append(evs, events.SQSEvent{Records: []events.SQSMessage{record(tc.messageID(i), "sum-4471-9-one")}})
				}
				out := invokeAll(t, fn, evs)
				if !overlapped(out) {
					t.Errorf("the invocations did not all run at once")
				}
				if got := fn.MaxInFlight(); got != perProcess {
					t.Errorf("%d invocations in flight at most, want %d", got, perProcess)
				}
				checkAnswers(t, out)
				if calls := requestLog(t, log); len(calls) != 1 {
					t.Errorf("request log has %d lines, want 1: %+v", len(calls), calls)
				}
				if err := fn.Close(); err != nil {
					t.Fatal(err)
				}
				checkLines(t, fn.Stdout())
				checkLines(t, fn.Stdout())
				sums, lines := emfSums(fn.Stdout())
				if lines != perProcess || sums["ProviderCalls"] != 1 || sums["DuplicatesSuppressed"] != perProcess-1 || sums["InProgressRetried"] != 0 || sums["Failed"] != 0 {
					t.Errorf("%d EMF lines summing to %v, want %d lines, 1 call, %d suppressed", lines, sums, perProcess, perProcess-1)
				}
				t.Logf("outcomes: %v", outcomes(fn.Stdout()))
			})
		}
	}
}

// TestTwoKeys: four invocations at once, each a batch of two records under
// two keys. When every invocation carries the same two keys, two calls in
// all; when each carries keys of its own, one call per key, each for its
// own message.
func TestTwoKeys(t *testing.T) {
	for _, store := range stores {
		t.Run(store+"/shared keys", func(t *testing.T) {
			fn, log := start(t, store, 500*time.Millisecond, nil)
			var evs []events.SQSEvent
			for i := range perProcess {
				evs = append(evs, events.SQSEvent{Records: []events.SQSMessage{
					record(fmt.Sprintf("a-%d", i), "sum-4471-9-a"),
					record(fmt.Sprintf("b-%d", i), "sum-4471-9-b"),
				}})
			}
			out := invokeAll(t, fn, evs)
			if !overlapped(out) {
				t.Errorf("the invocations did not all run at once")
			}
			checkAnswers(t, out)
			calls := requestLog(t, log)
			ids := map[string]int{}
			for _, c := range calls {
				ids[c.RecordID]++
			}
			if len(calls) != 2 || len(ids) != 2 {
				t.Errorf("request log has %d lines for %d record ids, want 2 and 2: %+v", len(calls), len(ids), calls)
			}
			if err := fn.Close(); err != nil {
				t.Fatal(err)
			}
			checkLines(t, fn.Stdout())
			sums, lines := emfSums(fn.Stdout())
			if lines != perProcess || sums["ProviderCalls"] != 2 || sums["DuplicatesSuppressed"] != 2*perProcess-2 || sums["Failed"] != 0 {
				t.Errorf("%d EMF lines summing to %v, want %d lines, 2 calls, %d suppressed", lines, sums, perProcess, 2*perProcess-2)
			}
			t.Logf("outcomes: %v", outcomes(fn.Stdout()))
		})
		t.Run(store+"/keys of their own", func(t *testing.T) {
			fn, log := start(t, store, 500*time.Millisecond, nil)
			var evs []events.SQSEvent
			var want []string
			for i := range perProcess {
				a, b := fmt.Sprintf("a-%d", i), fmt.Sprintf("b-%d", i)
				evs = append(evs, events.SQSEvent{Records: []events.SQSMessage{
					record(a, "sum-4471-9-a-"+a),
					record(b, "sum-4471-9-b-"+b),
				}})
				want = append(want, a, b)
			}
			out := invokeAll(t, fn, evs)
			if !overlapped(out) {
				t.Errorf("the invocations did not all run at once")
			}
			checkAnswers(t, out)
			var got []string
			for _, c := range requestLog(t, log) {
				got = append(got, c.MessageID)
			}
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("calls for messages %v, want one each for %v", got, want)
			}
			if err := fn.Close(); err != nil {
				t.Fatal(err)
			}
			checkLines(t, fn.Stdout())
			sums, lines := emfSums(fn.Stdout())
			if lines != perProcess || sums["ProviderCalls"] != float64(2*perProcess) || sums["DuplicatesSuppressed"] != 0 || sums["Failed"] != 0 {
				t.Errorf("%d EMF lines summing to %v, want %d lines, %d calls, none suppressed", lines, sums, perProcess, 2*perProcess)
			}
			t.Logf("outcomes: %v", outcomes(fn.Stdout()))
		})
	}
}

// TestMany: 24 invocations through the process's four workers, each a
// batch of three records whose keys come from six: one call per key, no
// record failed, one EMF line per invocation.
func TestMany(t *testing.T) {
	const invocations, perBatch, keys = 24, 3, 6
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			fn, log := start(t, store, 200*time.Millisecond, nil)
			var evs []events.SQSEvent
			for i := range invocations {
				var ev events.SQSEvent
				for j := range perBatch {
					ev.Records = append(ev.Records, record(fmt.Sprintf("m-%d-%d", i, j), fmt.Sprintf("sum-4471-9-many-%d", (i+j)%keys)))
				}
				evs = append(evs, ev)
			}
			out := invokeAll(t, fn, evs)
			checkAnswers(t, out)
			if got := fn.MaxInFlight(); got != perProcess {
				t.Errorf("%d invocations in flight at most, want %d", got, perProcess)
			}
			calls := requestLog(t, log)
			ids := map[string]int{}
			for _, c := range calls {
				ids[c.RecordID]++
			}
			if len(calls) != keys || len(ids) != keys {
				t.Errorf("request log has %d lines for %d record ids, want %d and %d", len(calls), len(ids), keys, keys)
			}
			if err := fn.Close(); err != nil {
				t.Fatal(err)
			}
			checkLines(t, fn.Stdout())
			sums, lines := emfSums(fn.Stdout())
			if lines != invocations || sums["ProviderCalls"] != keys || sums["DuplicatesSuppressed"] != invocations*perBatch-keys ||
				sums["Failed"] != 0 || sums["InProgressRetried"] != 0 {
				t.Errorf("%d EMF lines summing to %v, want %d lines, %d calls, %d suppressed", lines, sums, invocations, keys, invocations*perBatch-keys)
			}
			t.Logf("outcomes: %v", outcomes(fn.Stdout()))
		})
	}
}

// TestTenants: invocations carrying a TenantID (Lambda-Runtime-Aws-Tenant-Id).
// One tenant and one key twice: one run. Two tenants and one key: two
// runs, so that a tenant never replays another's result.
func TestTenants(t *testing.T) {
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			for _, tc := range []struct {
				name    string
				tenants []string
				runs    int
			}{
				{"one tenant, one key twice", []string{"tenant-a", "tenant-a"}, 1},
				{"two tenants, one key", []string{"tenant-a", "tenant-b"}, 2},
			} {
				t.Run(tc.name, func(t *testing.T) {
					fn, log := start(t, store, 500*time.Millisecond, nil)
					var calls []*runtimeapi.Call
					for i, tenant := range tc.tenants {
						ev := events.SQSEvent{Records: []events.SQSMessage{record(fmt.Sprintf("m-%d", i), "sum-4471-9-tenant")}}
						b, err := json.Marshal(ev)
						if err != nil {
							t.Fatal(err)
						}
						c, err := fn.Enqueue(runtimeapi.Invocation{Payload: b, TenantID: tenant})
						if err != nil {
							t.Fatal(err)
						}
						calls = append(calls, c)
					}
					for _, c := range calls {
						r, err := c.Wait(t.Context())
						if err != nil {
							t.Fatal(err)
						}
						if r.Err != nil || string(r.Response) != `{"batchItemFailures":[]}` {
							t.Errorf("tenant %s: %s %v", r.TenantID, r.Response, r.Err)
						}
					}
					if got := len(requestLog(t, log)); got != tc.runs {
						t.Errorf("%d provider calls, want %d", got, tc.runs)
					}
					if err := fn.Close(); err != nil {
						t.Fatal(err)
					}
					tenants := map[string]int{}
					for _, l := range runtimeapi.JSONLines(fn.Stdout()) {
						if l["msg"] == "idempotency" {
							tenants[fmt.Sprint(l["tenant"])]++
						}
					}
					for tenant := range tenants {
						if !slices.Contains(tc.tenants, tenant) {
							t.Errorf("a guard line names tenant %q, want one of %v", tenant, tc.tenants)
						}
					}
				})
			}
		})
	}
}

// TestLogAttribution: with four invocations interleaving their lines on
// one standard output, each of the guard's lines must name the request id
// of the invocation it belongs to (Lambda frames no invocation's lines
// under Managed Instances).
func TestLogAttribution(t *testing.T) {
	fn, _ := start(t, "memory", 500*time.Millisecond, nil)
	var evs []events.SQSEvent
	for i := range perProcess {
		evs = append(evs, events.SQSEvent{Records: []events.SQSMessage{record(fmt.Sprintf("m-%d", i), "sum-4471-9-logs")}})
	}
	out := invokeAll(t, fn, evs)
	checkAnswers(t, out)
	byMessage := map[string]string{} // message id: the request id of its invocation
	for i, o := range out {
		byMessage[evs[i].Records[0].MessageId] = o.res.RequestID
	}
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
	lines, attributed := 0, 0
	for _, l := range runtimeapi.JSONLines(fn.Stdout()) {
		if l["msg"] != "idempotency" {
			continue
		}
		lines++
		want := byMessage[fmt.Sprint(l["input_id"])]
		for _, k := range []string{"request_id", "aws_request_id", "function_request_id"} {
			if l[k] != nil && l[k] == want {
				attributed++
				break
			}
		}
	}
	if lines != perProcess-1 {
		t.Errorf("%d guard lines, want %d (the shared replays)", lines, perProcess-1)
	}
	if attributed != lines {
		t.Errorf("%d of %d guard lines name their invocation's request id", attributed, lines)
	}
	emf := 0
	requestIDs := map[string]bool{}
	for _, o := range out {
		requestIDs[o.res.RequestID] = true
	}
	for _, l := range runtimeapi.JSONLines(fn.Stdout()) {
		if l["_aws"] != nil {
			emf++
			if id, _ := l["request_id"].(string); !requestIDs[id] {
				t.Errorf("EMF line %v names no invocation's request id", l)
			}
			delete(requestIDs, fmt.Sprint(l["request_id"]))
		}
	}
	if emf != perProcess {
		t.Errorf("%d EMF lines, want %d, one per invocation", emf, perProcess)
	}
}

// TestWaiterDeadline: an invocation whose record waits for the same key's
// run in another invocation of the process stops waiting at its own
// deadline (the run goes on and completes). The record is then in
// progress, as it would be found in the store from another process
// (outcome in_progress, InProgressRetried, paced to the holder's lease),
// not failed.
// With one timeout for every invocation of a function the waiter arrives
// later and has the later deadline, so this needs a run that outlives its
// own invocation's reserve, or invocations of unequal timeouts as here.
func TestWaiterDeadline(t *testing.T) {
	fn, log := start(t, "memory", 3*time.Second, map[string]string{"SQSONCE_MIN_REMAINING": "0"})
	payload := func(id string) []byte {
		b, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{record(id, "sum-4471-9-waiter")}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	runner, err := fn.Enqueue(runtimeapi.Invocation{Payload: payload("m-runner"), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The call is logged before it is made: then the waiter arrives.
	deadline := time.Now().Add(20 * time.Second)
	for len(requestLog(t, log)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no provider call within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	waiter, err := fn.Enqueue(runtimeapi.Invocation{Payload: payload("m-waiter"), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := waiter.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rr, err := runner.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rr.Err != nil || string(rr.Response) != `{"batchItemFailures":[]}` {
		t.Errorf("runner: %s %v", rr.Response, rr.Err)
	}
	// A batch whose one record is in progress elsewhere is a routine
	// duplicate: a response listing it, not an invocation error.
	if rw.Err != nil || string(rw.Response) != `{"batchItemFailures":[{"itemIdentifier":"m-waiter"}]}` || !rw.Answered.Before(rr.Answered) {
		t.Errorf("waiter: %s %+v, want its record listed failed, without an error, before the runner's answer", rw.Response, rw.Err)
	}
	if calls := requestLog(t, log); len(calls) != 1 {
		t.Errorf("%d provider calls, want 1", len(calls))
	}
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
	got := outcomes(fn.Stdout())
	sums, _ := emfSums(fn.Stdout())
	if got["in_progress/shared"] != 1 || sums["InProgressRetried"] != 1 || sums["Failed"] != 0 {
		t.Errorf("the waiter's record: outcomes %v, EMF %v; want in_progress/shared and InProgressRetried 1, Failed 0", got, sums)
	}
}
