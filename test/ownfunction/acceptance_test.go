//go:build deploylocal

package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/internal/testenv/esm"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// TestOwnFunction is issue 27's acceptance: the README's own function
// (main.go, held to the README by TestMainIsTheREADMEs), deployed with the
// construct by a CDK app of its own (stack/) to moto_server with the CDK
// CLI and the flags docs/deploy-local.md gives, fed from its deployed
// queue by the event-source poller under the Lambda RIE at the deployed
// 3 s timeout. A duplicate (a lost acknowledgement) and a producer's
// re-send run the charge once; every metric the deployed alarms watch is
// in the function's output; sqsonce-ops, with the function's deployed
// environment, finds the record by the order id.
func TestOwnFunction(t *testing.T) {
	start := time.Now()
	phase := func(name string) { t.Logf("%-28s %6.1fs", name, time.Since(start).Seconds()) }
	if _, err := exec.LookPath("node"); err != nil {
		testproc.Unavailable(t, "ownfunction", err, "install Node.js 20 or later (the CDK CLI and jsii run on it)")
	}
	if out, err := exec.Command("make", "-s", "-C", "../../infra", "cli").CombinedOutput(); err != nil {
		testproc.Unavailable(t, "ownfunction", fmt.Errorf("make -C infra cli: %v\n%s", err, out), "install npm: make -C infra cli installs the pinned CDK CLI")
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

	// Build: the function for this machine (the emulator runs it) and
	// zipped (the stack deploys it), and the operator's tool.
	dir := t.TempDir()
	bootstrap, zipPath, opsBin := filepath.Join(dir, "bootstrap"), filepath.Join(dir, "bootstrap.zip"), filepath.Join(dir, "sqsonce-ops")
	for _, b := range [][]string{{bootstrap, "."}, {opsBin, "../../cmd/sqsonce-ops"}} {
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", b[0], b[1])
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	writeZip(t, bootstrap, zipPath)
	phase("built")

	// Deploy, as docs/deploy-local.md does.
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
		phase("cdk " + args[0])
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
	if queueURL == "" || fnName == "" {
		t.Fatalf("the stack's outputs: %v", outputs)
	}
	lc := lambda.NewFromConfig(cfg)
	fc, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(fnName)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToInt32(fc.Timeout) != 3 {
		t.Fatalf("deployed timeout %ds, want 3", aws.ToInt32(fc.Timeout))
	}
	maps, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(fnName)})
	if err != nil || len(maps.EventSourceMappings) != 1 {
		t.Fatalf("ListEventSourceMappings: %v, %d", err, len(maps.EventSourceMappings))
	}
	m := maps.EventSourceMappings[0]
	// moto's own copy of the mapping cannot invoke a Go function: off.
	if _, err := lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, Enabled: aws.Bool(false)}); err != nil {
		t.Fatal(err)
	}

	// Run it under the emulator with its deployed environment, moto as its AWS.
	env := map[string]string{"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}
	for k, v := range fc.Environment.Variables {
		env[k] = v
	}
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
	var lostOnce sync.Once
	var deliveries []esm.Delivery
	p := &esm.Poller{
		Mapping: esm.Mapping{QueueURL: queueURL, QueueARN: aws.ToString(m.EventSourceArn), BatchSize: int(aws.ToInt32(m.BatchSize)),
			MaxBatchingWindow: time.Second, MaxConcurrency: 1},
		SQS: sqsc, Invokers: []esm.Invoker{fn},
		OnDelivery: func(d esm.Delivery) { mu.Lock(); deliveries = append(deliveries, d); mu.Unlock() },
		// The first acknowledgement is lost: SQS delivers the order again.
		LoseAck: func(events.SQSMessage) bool {
			lost := false
			lostOnce.Do(func() { lost = true })
			return lost
		},
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
	phase("deployed, fed")

	// The producer's order; its first acknowledgement is lost (a duplicate
	// delivery), then the producer sends it again (a re-send).
	order := "o-" + strings.ToLower(rand.Text()[:8])
	body := `{"order_id":"` + order + `","amount_cents":1299}`
	send := func() string {
		out, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.MessageId)
	}
	acked := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range deliveries {
			if d.MessageID == id && d.Acked && !d.Lost {
				return true
			}
		}
		return false
	}
	first := send()
	waitFor(t, 30*time.Second, func() bool { return acked(first) })
	resend := send()
	waitFor(t, 30*time.Second, func() bool { return acked(resend) })
	phase("duplicate and re-send acked")

	// Once: one run, two deliveries answered with the stored result, in
	// the function's EMF lines.
	mu.Lock()
	n := len(deliveries)
	mu.Unlock()
	if n != 3 {
		t.Errorf("%d deliveries, want 3 (the first, its duplicate, the re-send)", n)
	}
	counts, declared := emf(t, fn.Output())
	if counts[metrics.DuplicatesSuppressed] != 2 || counts[metrics.Failed] != 0 || counts[metrics.RecordsFailed] != 0 {
		t.Errorf("metrics %v: want 2 %s, no failure", counts, metrics.DuplicatesSuppressed)
	}
	items, err := dynamodb.NewFromConfig(cfg).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(outputs["TableName"])})
	if err != nil || len(items.Items) != 1 {
		t.Errorf("the table holds %d records (%v), want 1", len(items.Items), err)
	}
	// The alarms' metrics: every metric an alarm of the template watches
	// in the function's namespace is declared in its output, with the
	// alarm's namespace and dimension.
	watched := alarmMetrics(t, assembly)
	t.Logf("the alarms watch %v; the function's lines sum to %v", watched, counts)
	if len(watched) < 5 {
		t.Errorf("the template's alarms watch %v", watched)
	}
	for _, w := range watched {
		if !declared[w] {
			t.Errorf("the alarm's metric %s is not in the function's output", w)
		}
	}

	// sqsonce-ops, with the function's environment, by the order id.
	cmd := exec.Command(opsBin, "inspect", "--json", "--key", `"`+order+`"`)
	cmd.Env = cleanEnv("AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1", "SQSONCE_DYNAMODB_ENDPOINT="+endpoint)
	for k, v := range fc.Environment.Variables {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	var v struct {
		State string `json:"state"`
	}
	if err != nil || json.Unmarshal(out, &v) != nil || v.State != "completed" {
		t.Errorf("sqsonce-ops inspect --key %q: %v\n%s", order, err, out)
	}
	phase("checked")

	// A poison message (no order_id): the function moves it to the
	// dead-letter queue at its first delivery, as the construct's
	// variables turn the mover on, instead of failing it until SQS's
	// maxReceiveCount.
	poisonBody := `{"amount_cents":1299}`
	po, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(poisonBody)})
	if err != nil {
		t.Fatal(err)
	}
	poison := aws.ToString(po.MessageId)
	dlqURL := deadLetterURL(ctx, t, sqsc, queueURL)
	var moved bool
	for deadline := time.Now().Add(60 * time.Second); !moved && time.Now().Before(deadline); {
		r, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 1, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Messages {
			if aws.ToString(m.Body) != poisonBody {
				continue
			}
			moved = true
			// Taken off again: the next test deploys the same stack and
			// expects an empty dead-letter queue.
			if _, err := sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !moved {
		t.Fatal("the poison message did not reach the dead-letter queue within 60 s")
	}
	poisonDeliveries := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, d := range deliveries {
			if d.MessageID == poison {
				n++
			}
		}
		return n
	}
	// The poller records a delivery once the invocation has returned,
	// which may be after the mover's send; then no more come.
	waitFor(t, 10*time.Second, func() bool { return poisonDeliveries() > 0 })
	time.Sleep(2 * time.Second)
	if pd := poisonDeliveries(); pd != 1 {
		t.Errorf("the poison message was delivered %d times before it reached the dead-letter queue, want 1", pd)
	}
	phase("poison message dead-lettered at its first delivery")
}

func waitFor(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// emf sums the metrics of the output's EMF lines, and returns the names
// they declare with namespace sqsonce and dimension Service.
func emf(t *testing.T, output string) (map[string]float64, map[string]bool) {
	t.Helper()
	counts, declared := map[string]float64{}, map[string]bool{}
	for _, line := range strings.Split(output, "\n") {
		i := strings.Index(line, `{"_aws"`)
		if i < 0 {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(line[i:]), &doc); err != nil {
			continue
		}
		var meta struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		}
		b, _ := json.Marshal(doc["_aws"])
		_ = json.Unmarshal(b, &meta)
		for _, cw := range meta.CloudWatchMetrics {
			if cw.Namespace != metrics.DefaultNamespace || len(cw.Dimensions) != 1 || len(cw.Dimensions[0]) != 1 || cw.Dimensions[0][0] != metrics.Dimension {
				continue
			}
			if doc[metrics.Dimension] != "orders" {
				continue
			}
			for _, m := range cw.Metrics {
				declared[m.Name] = true
				if f, ok := doc[m.Name].(float64); ok {
					counts[m.Name] += f
				}
			}
		}
	}
	if len(declared) == 0 {
		t.Errorf("no EMF line in the function's output")
	}
	return counts, declared
}

// alarmMetrics returns the metrics the template's alarms watch in the
// library's namespace.
func alarmMetrics(t *testing.T, assembly string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(assembly, "Orders.template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				MetricName string
				Namespace  string
				Dimensions []struct {
					Name  string
					Value any
				}
			}
		}
	}
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range tpl.Resources {
		if r.Type == "AWS::CloudWatch::Alarm" && r.Properties.Namespace == metrics.DefaultNamespace {
			if len(r.Properties.Dimensions) != 1 || r.Properties.Dimensions[0].Name != metrics.Dimension || fmt.Sprint(r.Properties.Dimensions[0].Value) != "orders" {
				t.Errorf("alarm on %s: dimensions %v", r.Properties.MetricName, r.Properties.Dimensions)
			}
			out = append(out, r.Properties.MetricName)
		}
	}
	return out
}

func writeZip(t *testing.T, bootstrap, zipPath string) {
	t.Helper()
	bin, err := os.ReadFile(bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = w.Write(bin)
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = os.WriteFile(zipPath, buf.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// cleanEnv is this process's environment without AWS_ and CDK_ settings
// (a developer's profile must not leak into the deploy), plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "CDK_") && !strings.HasPrefix(kv, "SQSONCE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func cacheDir(t *testing.T) string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(home, ".cache")
}
