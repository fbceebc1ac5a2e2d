//go:build deploylocal

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/lambdaenv"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// TestOwnFunctionRoutineDuplicatesPageNoOne deploys the README's function
// with the construct (stack/) to moto, as TestOwnFunction does, and feeds
// it routine duplicates: an order whose key another worker (this test,
// with the function's own environment) holds while the function gets it,
// alone in its batch, and the same order again once the holder is done.
// No alarm of the deployed template may cross its threshold: the function
// returns no invocation error (the Errors rate stays 0), the dead-letter
// queue stays empty, and each outcome metric an alarm watches in one
// period stays at or below its threshold, but for an alarm that needs
// more periods in a row than the test lasts (InProgressRetried: a wait
// for a live holder is routine).
func TestOwnFunctionRoutineDuplicatesPageNoOne(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		testproc.Unavailable(t, "ownfunction", err, "install Node.js 20 or later (the CDK CLI and jsii run on it)")
	}
	if out, err := exec.Command("make", "-s", "-C", "../../infra", "cli").CombinedOutput(); err != nil {
		testproc.Unavailable(t, "ownfunction", err, "install npm: make -C infra cli installs the pinned CDK CLI: "+string(out))
	}
	cdkPath, err := filepath.Abs(filepath.Join(cacheDir(t), "sqsonce", "cdk-cli-2.1148.1", "node_modules", ".bin", "cdk"))
	if err != nil {
		t.Fatal(err)
	}
	riePath, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "ownfunction", err, rie.Install)
	}
	endpoint := moto.Endpoint(t)
	cfg := moto.Config(t)
	ctx := context.Background()

	dir := t.TempDir()
	bootstrap, zipPath := filepath.Join(dir, "bootstrap"), filepath.Join(dir, "bootstrap.zip")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	writeZip(t, bootstrap, zipPath)
	cdkEnv := cleanEnv("AWS_ENDPOINT_URL="+endpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1", "CDK_DISABLE_VERSION_CHECK=1",
		"AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION="+strings.Replace(endpoint, "127.0.0.1", "localhost", 1),
		"ORDERS_ZIP="+zipPath)
	assembly := filepath.Join(dir, "cdk.out")
	for _, args := range [][]string{
		{"bootstrap", "aws://123456789012/us-east-1", "-o", assembly},
		{"deploy", "--method=direct", "--no-previous-parameters", "--require-approval", "never", "-o", assembly},
	} {
		cmd := exec.Command(cdkPath, args...)
		cmd.Dir, cmd.Env = "stack", cdkEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cdk %s: %v\n%s", args[0], err, out)
		}
	}
	outputs := map[string]string{}
	st, err := cloudformation.NewFromConfig(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("Orders")})
	if err != nil || len(st.Stacks) != 1 {
		t.Fatalf("DescribeStacks: %v", err)
	}
	for _, o := range st.Stacks[0].Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	queueURL, fnName := outputs["QueueUrl"], outputs["FunctionName"]
	lc := lambda.NewFromConfig(cfg)
	fc, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(fnName)})
	if err != nil {
		t.Fatal(err)
	}
	maps, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(fnName)})
	if err != nil || len(maps.EventSourceMappings) != 1 {
		t.Fatalf("ListEventSourceMappings: %v", err)
	}
	m := maps.EventSourceMappings[0]
	if _, err := lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, Enabled: aws.Bool(false)}); err != nil {
		t.Fatal(err)
	}

	// The other worker: this process, with the function's environment,
	// wrapping the same charge as the function's main.
	env := map[string]string{"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}
	for k, v := range fc.Environment.Variables {
		env[k] = v
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	le, err := lambdaenv.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := idempotency.New(le.Config)
	if err != nil {
		t.Fatal(err)
	}
	claimed, release := make(chan struct{}), make(chan struct{})
	holder := idempotency.WrapJSON(g, idempotency.BodyField("order_id"), func(ctx context.Context, o Order, m events.SQSMessage) (Receipt, error) {
		close(claimed)
		<-release
		return charge(ctx, o, m)
	}, idempotency.WithPayload(idempotency.BodySubset("amount_cents")))

	fn, err := rie.Start(rie.Config{RIE: riePath, Bootstrap: bootstrap, Env: env, Timeout: time.Duration(aws.ToInt32(fc.Timeout)) * time.Second,
		FunctionName: fnName, MemorySize: int(aws.ToInt32(fc.MemorySize))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("the function's output:\n%s", fn.Output())
		}
		if err := fn.Close(); err != nil {
			t.Error(err)
		}
	}()
	sqsc := sqs.NewFromConfig(cfg)
	var mu sync.Mutex
	var deliveries []esm.Delivery
	p := &esm.Poller{
		Mapping: esm.Mapping{QueueURL: queueURL, QueueARN: aws.ToString(m.EventSourceArn), BatchSize: int(aws.ToInt32(m.BatchSize)),
			MaxBatchingWindow: time.Second, MaxConcurrency: 1},
		SQS: sqsc, Invokers: []esm.Invoker{fn},
		OnDelivery: func(d esm.Delivery) { mu.Lock(); deliveries = append(deliveries, d); mu.Unlock() },
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	body := `{"order_id":"o-routine-1","amount_cents":1299}`
	held := make(chan error, 1)
	go func() {
		// The other worker runs at Lambda's default timeout, 3 s, as the
		// function does: its lease, and so the pacing of the duplicate it
		// holds, ends a few seconds on (with no deadline the lease would be
		// the guard's longest, and the paced duplicate would come back only
		// then).
		hctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := holder(hctx, events.SQSMessage{MessageId: "m-holder", Body: body})
		held <- err
	}()
	<-claimed
	sent := time.Now()
	out, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.MessageId)
	find := func(acked bool) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range deliveries {
			if d.MessageID == id && d.Acked == acked {
				return true
			}
		}
		return false
	}
	// The function gets the order while the other worker holds it: a
	// routine duplicate, handed back to SQS.
	waitFor(t, 30*time.Second, func() bool { return find(false) })
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the other worker: %v", err)
	}
	// It comes back and is answered with the stored receipt.
	waitFor(t, 90*time.Second, func() bool { return find(true) })
	elapsed := time.Since(sent) // the metrics' span, from the first send
	// Paced: the duplicate came back near the holder's lease end, not at
	// the queue's visibility timeout (six times the function's).
	va, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	vt, err := time.ParseDuration(va.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)] + "s")
	if err != nil {
		t.Fatal(err)
	}
	if elapsed >= vt {
		t.Errorf("the in-progress duplicate was answered %v after it was sent, not before the queue's visibility timeout (%v): its redelivery was not paced to the holder's lease", elapsed.Round(time.Second), vt)
	}

	// Invocation errors: none, so the Errors rate is 0.
	mu.Lock()
	for _, d := range deliveries {
		if d.Err != nil {
			t.Errorf("delivery %s (invocation %d): %v; a routine duplicate must not be an invocation error", d.MessageID, d.Invocation, d.Err)
		}
	}
	n := len(deliveries)
	mu.Unlock()
	if n < 2 {
		t.Errorf("%d deliveries, want the duplicate in progress and its redelivery", n)
	}
	// The dead-letter queue stays empty.
	dlqURL := deadLetterURL(ctx, t, sqsc, queueURL)
	da, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	if got := da.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]; got != "0" {
		t.Errorf("the dead-letter queue holds %s messages, want 0", got)
	}

	// The outcome alarms: each metric's sum over the test (less than one
	// period) against its alarm's threshold.
	counts, _ := emf(t, fn.Output())
	if counts[metrics.InProgressRetried] < 1 || counts[metrics.DuplicatesSuppressed] < 1 {
		t.Errorf("metrics %v: want the duplicate in progress, then suppressed", counts)
	}
	for _, a := range outcomeAlarms(t, assembly) {
		v := counts[a.metric]
		switch {
		case v <= a.threshold:
		case a.periods > 1 && elapsed < 5*time.Minute:
			t.Logf("%s: %v in one period, above %v, but it fires after %d periods in a row", a.metric, v, a.threshold, a.periods)
		default:
			t.Errorf("%s: %v, above its alarm's threshold %v: a routine duplicate would page", a.metric, v, a.threshold)
		}
	}
	t.Logf("%d deliveries, metrics %v, in %v", n, counts, elapsed.Round(time.Second))
}

// outcomeAlarm is an alarm of the template on a metric of the library.
type outcomeAlarm struct {
	metric    string
	threshold float64
	periods   int
}

// outcomeAlarms returns the template's alarms in the library's namespace.
func outcomeAlarms(t *testing.T, assembly string) []outcomeAlarm {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(assembly, "Orders.template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				MetricName        string
				Namespace         string
				Threshold         float64
				EvaluationPeriods int
			}
		}
	}
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatal(err)
	}
	var out []outcomeAlarm
	for _, r := range tpl.Resources {
		if r.Type == "AWS::CloudWatch::Alarm" && r.Properties.Namespace == metrics.DefaultNamespace {
			out = append(out, outcomeAlarm{r.Properties.MetricName, r.Properties.Threshold, r.Properties.EvaluationPeriods})
		}
	}
	if len(out) < 5 {
		t.Fatalf("the template's outcome alarms: %v", out)
	}
	return out
}

// deadLetterURL is the URL of the dead-letter queue queueURL's
// RedrivePolicy names.
func deadLetterURL(ctx context.Context, t *testing.T, sqsc *sqs.Client, queueURL string) string {
	t.Helper()
	qa, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
	if err != nil {
		t.Fatal(err)
	}
	var rp struct{ DeadLetterTargetArn string }
	if err := json.Unmarshal([]byte(qa.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]), &rp); err != nil {
		t.Fatal(err)
	}
	dlqName := rp.DeadLetterTargetArn[strings.LastIndex(rp.DeadLetterTargetArn, ":")+1:]
	dlq, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(dlqName)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(dlq.QueueUrl)
}
