package main

// The acceptance test, end to end: the real bootstrap, built as for Lambda,
// runs under the AWS Lambda Runtime Interface Emulator (aws-lambda-rie) with
// DynamoDB on moto and the stub provider writing the request log.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/poll"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

var moto = motoserver.New()

func TestMain(m *testing.M) {
	code := moto.Run(m)
	closeStoreServers()
	if bootstrapDir != "" {
		os.RemoveAll(bootstrapDir)
	}
	os.Exit(code)
}

// envRIE names the environment variable that points at the emulator binary.
const envRIE = "SQSONCE_RIE"

// rieInstall is how the emulator is installed.
const rieInstall = "go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// findRIE returns the emulator's path: $SQSONCE_RIE, else aws-lambda-rie on
// PATH, else in $(go env GOPATH)/bin. Without it the test fails under
// CI=true and is skipped otherwise.
func findRIE(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envRIE); p != "" {
		if _, err := os.Stat(p); err != nil {
			missing(t, fmt.Sprintf("%s=%s: %v", envRIE, p, err))
		}
		return p
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command(goTool(), "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "aws-lambda-rie")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	missing(t, "aws-lambda-rie is not on PATH, in $GOPATH/bin or in $"+envRIE)
	return ""
}

func missing(t *testing.T, why string) {
	t.Helper()
	testproc.Unavailable(t, "aws-lambda-rie", errors.New(why), "install it with: "+rieInstall)
}

// goTool is the go command: on PATH (as under go test), else in $GOROOT/bin.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

var (
	bootstrapOnce sync.Once
	bootstrapDir  string
	bootstrapPath string
	bootstrapErr  error
)

// buildBootstrap builds this command as Lambda runs it (-tags lambda.norpc,
// CGO off), for the host, once per test binary.
func buildBootstrap(t *testing.T) string {
	t.Helper()
	bootstrapOnce.Do(func() {
		bootstrapDir, bootstrapErr = os.MkdirTemp("", "summarise-e2e-")
		if bootstrapErr != nil {
			return
		}
		bootstrapPath = filepath.Join(bootstrapDir, "bootstrap")
		cmd := exec.Command(goTool(), "build", "-tags", "lambda.norpc", "-o", bootstrapPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			bootstrapErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if bootstrapErr != nil {
		t.Fatal(bootstrapErr)
	}
	return bootstrapPath
}

// awsEnv points the AWS SDK of this process at fake credentials and no
// shared configuration, so a developer's profile cannot leak in.
func awsEnv(t *testing.T) {
	for k, v := range awsVars() {
		t.Setenv(k, v)
	}
}

func awsVars() map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_REGION":                  motoserver.Region,
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer collects an emulator's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// emulator is one aws-lambda-rie process running the bootstrap: one Lambda
// execution environment.
type emulator struct {
	url     string
	out     *syncBuffer
	invoked atomic.Int32 // invocations sent
}

// output returns what the emulator and the function printed, once it holds
// the END line of every invocation sent. The function's log lines reach the
// pipe before it answers, and the emulator writes END after the answer, so
// the output up to the last END holds every line of those invocations; the
// HTTP response alone can arrive before the pipe is read.
func (e *emulator) output(t *testing.T) string {
	t.Helper()
	want := int(e.invoked.Load())
	poll.Until(t, 10*time.Second, fmt.Sprintf("the END lines of %d invocations in the emulator's output", want), func() bool {
		return strings.Count(e.out.String(), "END RequestId:") >= want
	})
	return e.out.String()
}

// deployment is what emulators of one test share: tables and request log.
type deployment struct {
	table, summaries, requestLog string
	env                          map[string]string
	db                           *dynamodb.Client
}

func newDeployment(t *testing.T, extra map[string]string) *deployment {
	t.Helper()
	db := moto.DynamoDB(t)
	d := &deployment{
		table:      motoserver.NewTable(t, db),
		summaries:  motoserver.NewTable(t, db),
		requestLog: filepath.Join(t.TempDir(), "requests.jsonl"),
		db:         db,
	}
	docs, err := filepath.Abs(filepath.Join(repoRoot, "samples", "documents"))
	if err != nil {
		t.Fatal(err)
	}
	d.env = map[string]string{
		envTable:                      d.table,
		envSummariesTable:             d.summaries,
		envNamespace:                  "summarise",
		envExpiresAfter:               "360h",
		envQueueWindow:                "98h",
		envProvider:                   providerStub,
		envModel:                      "stub-model",
		envDocumentsDir:               docs,
		envRequestLog:                 d.requestLog,
		envDynamoDBEndpoint:           moto.Endpoint(t),
		envSQSEndpoint:                moto.Endpoint(t), // pacing is on inside Lambda: never the real SQS
		envConcurrency:                "4",
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "180", // infra's default: 3m, SQSONCE_MIN_REMAINING 90s by default
		"AWS_LAMBDA_FUNCTION_NAME":    "summarise",
	}
	for k, v := range awsVars() {
		d.env[k] = v
	}
	for k, v := range extra {
		d.env[k] = v
	}
	return d
}

// start runs one emulator with the bootstrap and waits until it accepts
// connections. It is stopped, with its whole process group, when the test
// ends; its output is logged if the test failed.
func (d *deployment) start(t *testing.T, rie, bootstrap string) *emulator {
	t.Helper()
	addr, apiAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", apiAddr, bootstrap)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LOG_LEVEL=warn"}
	for k, v := range d.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", rie, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("emulator %s output:\n%s", addr, out.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("emulator exited at start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("emulator not listening on %s after 10s:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &emulator{url: "http://" + addr + "/2015-03-31/functions/function/invocations", out: out}
}

// invoke sends one SQS event and returns the batch response.
func (e *emulator) invoke(t *testing.T, ev events.SQSEvent) events.SQSEventResponse {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(b))
	e.invoked.Add(1)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("invoke: %v", err)
		return events.SQSEventResponse{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("invoke: status %d: %s", resp.StatusCode, body)
		return events.SQSEventResponse{}
	}
	var out events.SQSEventResponse
	if err := json.Unmarshal(body, &out); err != nil || out.BatchItemFailures == nil {
		t.Errorf("invoke: response %s is not a batch response: %v", body, err)
	}
	return out
}

// invokeError invokes the function with ev, which must fail as a whole,
// and returns the error Lambda reports (errorType, errorMessage).
func (e *emulator) invokeError(t *testing.T, ev events.SQSEvent) map[string]string {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(b))
	e.invoked.Add(1)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out map[string]string
	if err := json.Unmarshal(body, &out); err != nil || out["errorType"] == "" {
		t.Errorf("invoke: response %s is not an invocation error: %v", body, err)
	}
	return out
}

// logLines returns the emulator's JSON log lines with the given msg.
func (e *emulator) logLines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(e.output(t)))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

// emf returns the emulator's EMF lines, in order.
func (e *emulator) emf(t *testing.T) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(e.output(t)))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["_aws"] != nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// requestLog returns the lines of the request log file.
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

func loadFixture(t *testing.T, name string) events.SQSEvent {
	t.Helper()
	ev, err := readEvent(fixture(name))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func one(m events.SQSMessage) events.SQSEvent {
	return events.SQSEvent{Records: []events.SQSMessage{m}}
}

func wantFailed(t *testing.T, what string, resp events.SQSEventResponse, ids ...string) {
	t.Helper()
	got := failed(resp)
	if ids == nil {
		ids = []string{}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("%s: batchItemFailures %v, want %v", what, got, ids)
	}
}

func getItem(t *testing.T, db *dynamodb.Client, table, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func attr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// TestE2E is the acceptance test: "send the same message twice and confirm
// exactly one provider call appears in your request log".
func TestE2E(t *testing.T) {
	rie := findRIE(t)
	bootstrap := buildBootstrap(t)

	t.Run("1 broker duplicate: same message twice, one call", func(t *testing.T) {
		d := newDeployment(t, nil)
		e := d.start(t, rie, bootstrap)
		ev := loadFixture(t, "duplicate-delivery.json")
		wantFailed(t, "first delivery", e.invoke(t, ev))
		wantFailed(t, "second delivery", e.invoke(t, ev))

		calls := requestLog(t, d.requestLog)
		if len(calls) != 1 {
			t.Fatalf("request log has %d lines, want exactly 1: %+v", len(calls), calls)
		}
		msgID := ev.Records[0].MessageId
		if calls[0].MessageID != msgID || calls[0].Provider != "stub" || !strings.HasPrefix(calls[0].RecordID, "summarise#") {
			t.Errorf("request log line %+v", calls[0])
		}
		// The second delivery returned the stored result: the guard
		// replayed it from the store. The claim is logged at DEBUG, below
		// the function's INFO: the request log line shows that call.
		var outcomes []string
		for _, l := range e.logLines(t, "idempotency") {
			outcomes = append(outcomes, fmt.Sprint(l["outcome"], "/", l["source"]))
		}
		if !slices.Equal(outcomes, []string{"replayed/store"}) {
			t.Errorf("outcomes %v, want one line: replayed from the store", outcomes)
		}
		// The record and the summary were committed together.
		rec := getItem(t, d.db, d.table, calls[0].RecordID)
		if attr(rec, "status") != "COMPLETED" || !strings.Contains(attr(rec, "data"), "[stub summary]") {
			t.Errorf("record %v, want COMPLETED with the summary", rec)
		}
		if sum := getItem(t, d.db, d.summaries, calls[0].RecordID); attr(sum, "message_id") != msgID || attr(sum, "document_id") != "4471" {
			t.Errorf("summary item %v", sum)
		}
		// One EMF line per batch: a call, then a suppressed duplicate.
		emf := e.emf(t)
		if len(emf) != 2 || emf[0]["ProviderCalls"] != 1.0 || emf[1]["DuplicatesSuppressed"] != 1.0 || emf[1]["ProviderCalls"] != 0.0 {
			t.Errorf("EMF lines %v", emf)
		}
	})

	t.Run("2 producer re-send: new messageId, same key, one call", func(t *testing.T) {
		d := newDeployment(t, nil)
		e := d.start(t, rie, bootstrap)
		ev := loadFixture(t, "producer-resend.json")
		wantFailed(t, "original", e.invoke(t, one(ev.Records[0])))
		wantFailed(t, "re-send", e.invoke(t, one(ev.Records[1])))
		// And on another execution environment.
		wantFailed(t, "re-send elsewhere", d.start(t, rie, bootstrap).invoke(t, one(ev.Records[1])))
		if calls := requestLog(t, d.requestLog); len(calls) != 1 || calls[0].MessageID != ev.Records[0].MessageId {
			t.Errorf("request log %+v, want one call, for the original", calls)
		}
	})

	t.Run("3 in progress elsewhere: the record fails (and so its batch), then acked without a call", func(t *testing.T) {
		d := newDeployment(t, map[string]string{envStubDelay: "3s"})
		a, b := d.start(t, rie, bootstrap), d.start(t, rie, bootstrap)
		// Initialise both execution environments first.
		wantFailed(t, "warm-up a", a.invoke(t, events.SQSEvent{Records: []events.SQSMessage{}}))
		wantFailed(t, "warm-up b", b.invoke(t, events.SQSEvent{Records: []events.SQSMessage{}}))

		ev := loadFixture(t, "duplicate-delivery.json")
		first := make(chan events.SQSEventResponse, 1)
		go func() { first <- a.invoke(t, ev) }()
		// The call is logged before it is made: wait for the line, then
		// deliver the same message to the other environment.
		poll.Until(t, 20*time.Second, "the first invocation's provider call", func() bool {
			return len(requestLog(t, d.requestLog)) > 0
		})
		// Its only record is in progress elsewhere: a routine duplicate, listed
		// failed in a response, not an invocation error (no Errors metric).
		wantFailed(t, "concurrent delivery", b.invoke(t, ev), ev.Records[0].MessageId)
		wantFailed(t, "first delivery", <-first)
		wantFailed(t, "redelivery after completion", b.invoke(t, ev))
		if calls := requestLog(t, d.requestLog); len(calls) != 1 {
			t.Errorf("request log has %d lines, want exactly 1", len(calls))
		}
		var outcomes []string
		for _, l := range b.logLines(t, "idempotency") {
			outcomes = append(outcomes, fmt.Sprint(l["outcome"]))
		}
		if !slices.Equal(outcomes, []string{"in_progress", "replayed"}) {
			t.Errorf("outcomes on the second environment %v, want in_progress, replayed", outcomes)
		}
		if emf := b.emf(t); len(emf) != 3 || emf[1]["InProgressRetried"] != 1.0 || emf[2]["DuplicatesSuppressed"] != 1.0 {
			t.Errorf("EMF lines of the second environment %v", emf)
		}
	})

	t.Run("4 malformed body and missing key: that record fails, no call for it", func(t *testing.T) {
		d := newDeployment(t, nil)
		e := d.start(t, rie, bootstrap)
		for _, name := range []string{"malformed.json", "missing-key.json"} {
			ev := loadFixture(t, name)
			wantFailed(t, name, e.invoke(t, ev), ev.Records[1].MessageId)
		}
		calls := requestLog(t, d.requestLog)
		var ids []string
		for _, c := range calls {
			ids = append(ids, c.MessageID)
		}
		want := []string{loadFixture(t, "malformed.json").Records[0].MessageId, loadFixture(t, "missing-key.json").Records[0].MessageId}
		if !slices.Equal(ids, want) {
			t.Errorf("calls for %v, want only the good records %v", ids, want)
		}
	})
}

// TestE2EShortTimeout runs the function with a timeout below the default
// SQSONCE_MIN_REMAINING, as a deployment that sets one but not the other
// would: no record starts, none is called, and a warning says why.
func TestE2EShortTimeout(t *testing.T) {
	rie := findRIE(t)
	bootstrap := buildBootstrap(t)
	d := newDeployment(t, map[string]string{"AWS_LAMBDA_FUNCTION_TIMEOUT": "60"})
	e := d.start(t, rie, bootstrap)
	ev := loadFixture(t, "duplicate-delivery.json")
	// Its only record is not started: the invocation fails as a whole.
	if got := e.invokeError(t, ev); got["errorType"] != "FullBatchFailureError" {
		t.Errorf("delivery with 60s left and a 90s margin: invocation error %v, want a FullBatchFailureError", got)
	}
	if calls := requestLog(t, d.requestLog); len(calls) != 0 {
		t.Errorf("request log has %d lines, want none: %+v", len(calls), calls)
	}
	warn := e.logLines(t, "summarise: the invocation starts with less time than "+envMinRemaining+
		": no record will start; raise the function timeout above it or lower it")
	if len(warn) != 1 || warn[0]["min_remaining"] != "1m30s" {
		t.Errorf("warning lines %v, want one naming the 1m30s margin", warn)
	}
}
