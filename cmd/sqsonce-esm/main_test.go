package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// awsEnv gives the command moto's test credentials and region, and no
// shared configuration file or profile of the developer's. moto_server is
// started first: it is a process of this one, and these are not its.
func awsEnv(t *testing.T) {
	moto.Endpoint(t)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  motoserver.Region,
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_SQS":        "",
	} {
		t.Setenv(k, v) // restored when the test ends
		if v == "" {
			os.Unsetenv(k)
		}
	}
}

var (
	buildOnce sync.Once
	bootstrap string
	buildErr  error
)

// function starts testdata/fn under the emulator, at Lambda's default
// 3 s timeout.
func function(t *testing.T) *rie.Function {
	t.Helper()
	path, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "rie", err, rie.Install)
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sqsonce-esm-test-")
		if err != nil {
			buildErr = err
			return
		}
		bootstrap = filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./testdata/fn")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	fn := rie.StartTest(t, rie.Config{RIE: path, Bootstrap: bootstrap, Timeout: 3 * time.Second})
	return fn
}

// queues creates a queue whose messages come back after 1 s and move to
// a dead-letter queue after 2 receives.
func queues(t *testing.T, client *sqs.Client) (q, dlq esm.Queue) {
	t.Helper()
	dlq = esm.NewQueue(t, client, nil)
	q = esm.NewQueue(t, client, map[string]string{
		"VisibilityTimeout": "1",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, dlq.ARN),
	})
	return q, dlq
}

func send(t *testing.T, client *sqs.Client, q esm.Queue, body string) string {
	t.Helper()
	out, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.MessageId)
}

// drain returns the bodies on q, deleting them.
func drain(t *testing.T, client *sqs.Client, q esm.Queue) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runCmd runs the command with args until it exits, within a minute.
func runCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	code := run(ctx, args, &stderr)
	if ctx.Err() != nil {
		t.Fatalf("sqsonce-esm %s: still running after a minute; its log:\n%s", strings.Join(args, " "), stderr.String())
	}
	return code, stderr.String()
}

// lines returns the log lines that hold all of subs.
func lines(log string, subs ...string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// Records the function acknowledges are deleted; one it names in
// batchItemFailures stays, comes back after the visibility timeout, and
// reaches the dead-letter queue after maxReceiveCount receives; the log
// says so by message id and never quotes a body.
func TestPartialBatchResponse(t *testing.T) {
	awsEnv(t)
	client := esm.SQSClient(t, moto)
	fn := function(t)
	q, dlq := queues(t, client)
	marker := rand.Text()
	ok1 := send(t, client, q, "ok "+marker)
	ok2 := send(t, client, q, "ok again "+marker)
	bad := send(t, client, q, "fail "+marker)

	code, log := runCmd(t, "--queue-url", q.URL, "--endpoint", moto.Endpoint(t), "--invoke", fn.URL(), "--idle", "3s")
	if code != exitOK {
		t.Fatalf("exit %d, want %d; log:\n%s", code, exitOK, log)
	}
	for _, id := range []string{ok1, ok2} {
		if n := len(lines(log, "acknowledged and deleted", "message_id="+id)); n != 1 {
			t.Errorf("%d lines acknowledging %s, want 1; log:\n%s", n, id, log)
		}
	}
	if got := lines(log, "a batch item failure", "message_id="+bad); len(got) != 2 ||
		!strings.Contains(got[0], "receive_count=1") || !strings.Contains(got[1], "receive_count=2") {
		t.Errorf("the failed record's lines %q, want receive counts 1 then 2", got)
	}
	if strings.Contains(log, marker) {
		t.Errorf("the log quotes a message body:\n%s", log)
	}
	if got := drain(t, client, dlq); len(got) != 1 || got[0] != "fail "+marker {
		t.Errorf("dead-letter queue holds %q, want only the failed record", got)
	}
	if got := drain(t, client, q); len(got) != 0 {
		t.Errorf("queue still holds %q", got)
	}
	if len(lines(log, "stopped", "invocations=2", "records=4", "deleted=2", "left_on_queue=2")) != 1 {
		t.Errorf("no summary of 2 invocations, 4 records, 2 deleted, 2 left; log:\n%s", log)
	}
}

// A function error deletes no record of its batch, and a response naming
// a record not in the batch fails the whole batch, as Lambda does; the
// function's error message (which quotes a body) is not logged. The queue
// is found through AWS_ENDPOINT_URL, as the SDK reads it.
func TestFailedInvocationDeletesNothing(t *testing.T) {
	awsEnv(t)
	client := esm.SQSClient(t, moto)
	fn := function(t)
	for _, first := range []string{"error", "bogus"} {
		t.Run(first, func(t *testing.T) {
			t.Setenv("AWS_ENDPOINT_URL", moto.Endpoint(t))
			q, dlq := queues(t, client)
			marker := rand.Text()
			send(t, client, q, first+" "+marker)
			send(t, client, q, "ok "+marker)

			code, log := runCmd(t, "--queue-url", q.URL, "--invoke", fn.URL(), "--idle", "3s")
			if code != exitOK {
				t.Fatalf("exit %d, want %d; log:\n%s", code, exitOK, log)
			}
			if n := len(lines(log, "acknowledged and deleted")); n != 0 {
				t.Errorf("%d records deleted, want none; log:\n%s", n, log)
			}
			if n := len(lines(log, "left on the queue: the invocation failed")); n != 4 {
				t.Errorf("%d records left by a failed invocation, want 4 (2 records, 2 receives); log:\n%s", n, log)
			}
			if strings.Contains(log, marker) {
				t.Errorf("the log quotes a message body:\n%s", log)
			}
			if got := drain(t, client, dlq); len(got) != 2 {
				t.Errorf("dead-letter queue holds %d messages, want both", len(got))
			}
		})
	}
}

func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--queue-url or --function is required"},
		{[]string{"--queue-url", "orders"}, "is not a URL"},
		{[]string{"--queue-url", "http://q/1/a", "--batch-size", "0"}, "--batch-size 0: between 1 and 10000"},
		{[]string{"--queue-url", "http://q/1/a", "--batch-size", "20"}, "needs a --window"},
		{[]string{"--queue-url", "http://q/1/a", "--window", "6m"}, "--window 6m0s: between 0 and 5m"},
		{[]string{"--queue-url", "http://q/1/a", "--invoke", "127.0.0.1:8080"}, "not an http(s) URL"},
		{[]string{"--queue-url", "http://q/1/a", "extra"}, `unexpected argument "extra"`},
	} {
		code, log := runCmd(t, c.args...)
		if code != exitUsage || !strings.Contains(log, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, log, exitUsage, c.want)
		}
	}
}

// A queue that cannot be read is exit 1 before any polling, naming the
// queue.
// A batching window as long as the queue's visibility timeout is refused:
// a record would come back while its batch is still gathered, and be in it
// twice.
func TestWindowNotBelowVisibility(t *testing.T) {
	awsEnv(t)
	q, _ := queues(t, esm.SQSClient(t, moto))
	code, log := runCmd(t, "--queue-url", q.URL, "--endpoint", moto.Endpoint(t), "--window", "1s")
	if code != exitUsage || !strings.Contains(log, "--window 1s is not below the queue's visibility timeout of 1s") {
		t.Errorf("exit %d, %q; want %d and the two durations", code, log, exitUsage)
	}
}

// --idle shorter than the batching window never stops the command with a
// batch in hand: the record received first waits out the window in the
// poller, counts as activity, and is invoked and deleted before the
// command exits (it is not left in flight to use up a receive).
func TestIdleWaitsForTheBatchInHand(t *testing.T) {
	awsEnv(t)
	client := esm.SQSClient(t, moto)
	fn := function(t)
	q := esm.NewQueue(t, client, map[string]string{"VisibilityTimeout": "30"})
	id := send(t, client, q, "ok")
	code, log := runCmd(t, "--queue-url", q.URL, "--endpoint", moto.Endpoint(t), "--invoke", fn.URL(), "--window", "3s", "--idle", "1s")
	if code != exitOK || len(lines(log, "acknowledged and deleted", "message_id="+id)) != 1 ||
		len(lines(log, "stopped", "invocations=1", "records=1", "deleted=1", "left_on_queue=0")) != 1 {
		t.Errorf("exit %d; want 0 and the record invoked and deleted before the command stopped; log:\n%s", code, log)
	}
	if got := drain(t, client, q); len(got) != 0 {
		t.Errorf("the queue still holds %d messages", len(got))
	}
}

func TestUnreadableQueue(t *testing.T) {
	awsEnv(t)
	url := strings.TrimSuffix(moto.Endpoint(t), "/") + "/123456789012/no-such-queue"
	code, log := runCmd(t, "--queue-url", url, "--endpoint", moto.Endpoint(t))
	if code != exitQueue || !strings.Contains(log, "read the queue "+url) {
		t.Errorf("exit %d, %q; want %d naming the queue", code, log, exitQueue)
	}
}

// deployFunction creates, on moto, a function (its code is never run:
// moto cannot run it) with an SQS event source mapping of batch size 2
// on q, and returns the function's name and the mapping's UUID.
func deployFunction(t *testing.T, q esm.Queue, mapping bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	cfg := moto.Config(t)
	name := motoserver.TableName(t)
	role, err := iam.NewFromConfig(cfg).CreateRole(ctx, &iam.CreateRoleInput{
		RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, _ := zw.Create("bootstrap")
	w.Write([]byte("not run"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	fns := lambda.NewFromConfig(cfg)
	if _, err := fns.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String(name), Role: role.Role.Arn, Runtime: lambdatypes.RuntimeProvidedal2023,
		Handler: aws.String("bootstrap"), Code: &lambdatypes.FunctionCode{ZipFile: zipped.Bytes()},
	}); err != nil {
		t.Fatal(err)
	}
	if !mapping {
		return name, ""
	}
	m, err := fns.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		FunctionName: aws.String(name), EventSourceArn: aws.String(q.ARN), BatchSize: aws.Int32(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	return name, aws.ToString(m.UUID)
}

// --function reads the queue and the batch size from the function's
// mapping, and warns while the mapping is enabled, naming its UUID.
func TestFunctionMapping(t *testing.T) {
	awsEnv(t)
	client := esm.SQSClient(t, moto)
	fn := function(t)
	q, _ := queues(t, client)
	name, uuid := deployFunction(t, q, true)

	code, log := runCmd(t, "--function", name, "--endpoint", moto.Endpoint(t), "--invoke", fn.URL(), "--idle", "1s")
	if code != exitOK || len(lines(log, "polling", "batch_size=2", "queue=")) != 1 ||
		len(lines(log, "level=WARN", "not disabled", "uuid="+uuid)) != 1 {
		t.Errorf("enabled mapping: exit %d; want 0, batch_size=2 and a warning naming %s; log:\n%s", code, uuid, log)
	}

	if _, err := lambda.NewFromConfig(moto.Config(t)).UpdateEventSourceMapping(context.Background(), &lambda.UpdateEventSourceMappingInput{
		UUID: aws.String(uuid), Enabled: aws.Bool(false),
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		send(t, client, q, "ok")
	}
	code, log = runCmd(t, "--function", name, "--endpoint", moto.Endpoint(t), "--invoke", fn.URL(), "--idle", "3s")
	if code != exitOK || len(lines(log, "level=WARN")) != 0 ||
		len(lines(log, "stopped", "invocations=2", "records=3", "deleted=3")) != 1 {
		t.Errorf("disabled mapping: exit %d; want 0, no warning, 3 records in 2 invocations of at most 2; log:\n%s", code, log)
	}
	if got := drain(t, client, q); len(got) != 0 {
		t.Errorf("the queue still holds %d messages", len(got))
	}

	other, _ := deployFunction(t, q, false)
	code, log = runCmd(t, "--function", other, "--endpoint", moto.Endpoint(t))
	if code != exitQueue || !strings.Contains(log, "function "+other+" has no SQS event source mapping") {
		t.Errorf("no mapping: exit %d, %q; want %d and the reason", code, log, exitQueue)
	}
	code, log = runCmd(t, "--function", name, "--queue-url", q.URL)
	if code != exitUsage || !strings.Contains(log, "give one") {
		t.Errorf("both: exit %d, %q; want %d", code, log, exitUsage)
	}
}
