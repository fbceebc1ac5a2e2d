package idempotentconsumer_test

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// The tests below build each option in a stack of its own and assert on
// the template with the CDK's assertions library. When
// SQSONCE_TEMPLATE_DIR is set (make test), they also write the templates
// there for cfn-lint.

var zipPath string // a stand-in for build/bootstrap.zip, made by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "idempotentconsumer-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zipPath = filepath.Join(dir, "bootstrap.zip")
	if err := writeZip(zipPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	jsii.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func writeZip(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte("#!/bin/sh\n")); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// build adds a consumer with props (Code and Namespace filled in when
// empty) to a stack of its own, and returns the consumer and the template.
// extra may add resources to the stack first, and edit props.
func build(t *testing.T, name string, props idempotentconsumer.Props, extra func(stack awscdk.Stack, p *idempotentconsumer.Props)) (*idempotentconsumer.Consumer, assertions.Template) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String(name), nil)
	if props.Code == nil {
		props.Code = awslambda.Code_FromAsset(jsii.String(zipPath), nil)
	}
	if props.Namespace == "" {
		props.Namespace = "orders"
	}
	if extra != nil {
		extra(stack, &props)
	}
	c, err := idempotentconsumer.New(stack, "Consumer", props)
	if err != nil {
		t.Fatal(err)
	}
	var tpl assertions.Template
	check(t, "synth", func() { tpl = assertions.Template_FromStack(stack, nil) })
	if tpl == nil {
		t.FailNow()
	}
	if dir := os.Getenv("SQSONCE_TEMPLATE_DIR"); dir != "" {
		b, err := json.MarshalIndent(tpl.ToJSON(), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "Construct"+name+".template.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c, tpl
}

// check runs an assertion of the CDK's library, which panics on failure,
// and reports the failure as the test's.
func check(t *testing.T, what string, assertion func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assertion()
}

// resourceOf returns the one resource of type typ whose logical id starts
// with prefix.
func resourceOf(t *testing.T, tpl assertions.Template, typ, prefix string) (string, map[string]any) {
	t.Helper()
	var ids []string
	var found map[string]any
	for id, r := range *tpl.FindResources(jsii.String(typ), nil) {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
			found = *r
		}
	}
	if len(ids) != 1 {
		t.Fatalf("want one %s with a logical id starting %q, found %v", typ, prefix, ids)
	}
	return ids[0], found
}

func props(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	p, _ := r["Properties"].(map[string]any)
	return p
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func TestConstructDefaults(t *testing.T) {
	c, tpl := build(t, "Defaults", idempotentconsumer.Props{}, nil)
	check(t, "one table", func() { tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1)) })
	check(t, "deletion protection", func() {
		tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{"DeletionProtectionEnabled": true})
	})
	check(t, "standard queues", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"FifoQueue": assertions.Match_Absent()})
	})
	check(t, "function", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Runtime":       "provided.al2023",
			"Architectures": []any{"arm64"},
			"MemorySize":    idempotentconsumer.DefaultMemorySize,
			"Timeout":       idempotentconsumer.DefaultTimeout.Seconds(),
			"TracingConfig": assertions.Match_Absent(),
		})
	})
	check(t, "a batching window", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
			"MaximumBatchingWindowInSeconds": idempotentconsumer.DefaultMaxBatchingWindow.Seconds(),
		})
	})
	check(t, "no alarm actions", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"AlarmActions": assertions.Match_Absent()})
	})
	check(t, "ten alarms", func() { tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(len(c.Alarms()))) })
	if len(c.Alarms()) != 10 {
		t.Errorf("Alarms() has %d alarms, want 10", len(c.Alarms()))
	}

	// No fixed names: CloudFormation generates them, unique to the stack.
	// So no redrive-allow policy either (it could only name the queue's
	// ARN through a cycle).
	if c.Plan.QueueName != "" {
		t.Errorf("Plan.QueueName %q, want none by default", c.Plan.QueueName)
	}
	queueID, _ := resourceOf(t, tpl, "AWS::SQS::Queue", "ConsumerQueue")
	noFixedNames(t, tpl)
	check(t, "no redrive-allow policy", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"RedriveAllowPolicy": assertions.Match_Absent()})
	})

	// The function's own grant for pacing: exactly ChangeMessageVisibility
	// on its queue.
	check(t, "pacing grant", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Sid":      "PaceRedelivery",
				"Effect":   "Allow",
				"Action":   idempotentconsumer.VisibilityAction,
				"Resource": map[string]any{"Fn::GetAtt": []any{queueID, "Arn"}},
			}})},
		})
	})

	// The event source's grant: what Lambda's poller calls, once; neither
	// sqs:GetQueueUrl nor a second sqs:ChangeMessageVisibility.
	check(t, "event source grant", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Effect":   "Allow",
				"Action":   idempotentconsumer.EventSourceActions(),
				"Resource": map[string]any{"Fn::GetAtt": []any{queueID, "Arn"}},
			}})},
		})
	})
	for _, p := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		doc := js(props(t, *p)["PolicyDocument"])
		if strings.Contains(doc, "sqs:GetQueueUrl") || strings.Count(doc, idempotentconsumer.VisibilityAction) != 1 {
			t.Errorf("policy %s: want no sqs:GetQueueUrl and %s once", doc, idempotentconsumer.VisibilityAction)
		}
	}

	// The function's own grant for permanent failures: exactly SendMessage
	// on its dead-letter queue.
	dlqID, _ := resourceOf(t, tpl, "AWS::SQS::Queue", "ConsumerDeadLetterQueue")
	check(t, "dead-letter grant", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Sid":      "DeadLetterPermanentFailures",
				"Effect":   "Allow",
				"Action":   idempotentconsumer.DeadLetterAction,
				"Resource": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}},
			}})},
		})
	})

	// The expiry covers one redrive from the dead-letter queue.
	pl := c.Plan
	if want := idempotentconsumer.DefaultDeadLetterRetention + pl.QueueWindow; pl.DeadLetterWindow != want {
		t.Errorf("DeadLetterWindow %v, want DeadLetterRetention + QueueWindow = %v", pl.DeadLetterWindow, want)
	}
	check(t, "expiry", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				idempotentconsumer.EnvExpiresAfter: idempotentconsumer.GoSeconds(pl.DeadLetterWindow + idempotentconsumer.DefaultExpiryMargin),
				idempotentconsumer.EnvQueueWindow:  idempotentconsumer.GoSeconds(pl.QueueWindow),
			})},
		})
	})

	// Outcome alarms on the EMF metrics, Service = the namespace.
	for _, m := range []string{metrics.Failed, metrics.InProgressRetried, metrics.TakenOver, metrics.DoubleRuns, metrics.Quarantined} {
		check(t, m+" alarm", func() {
			tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
				"Namespace":  idempotentconsumer.DefaultMetricsNamespace,
				"MetricName": m,
				"Dimensions": []any{map[string]any{"Name": "Service", "Value": "orders"}},
				"Statistic":  "Sum",
			})
		})
	}
}

func TestConstructExistingTable(t *testing.T) {
	c, tpl := build(t, "ExistingTable", idempotentconsumer.Props{}, func(stack awscdk.Stack, p *idempotentconsumer.Props) {
		p.Table = awsdynamodb.Table_FromTableName(stack, jsii.String("Shared"), jsii.String("shared-idempotency"))
	})
	if c.Plan.NewTable {
		t.Error("Plan.NewTable with Props.Table set")
	}
	check(t, "no table", func() { tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(0)) })
	check(t, "SQSONCE_TABLE", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				idempotentconsumer.EnvTable: "shared-idempotency",
			})},
		})
	})
	tableArn := map[string]any{"Fn::Join": []any{"", []any{
		"arn:", map[string]any{"Ref": "AWS::Partition"}, ":dynamodb:", map[string]any{"Ref": "AWS::Region"}, ":",
		map[string]any{"Ref": "AWS::AccountId"}, ":table/shared-idempotency",
	}}}
	actions := make([]any, 0, len(idempotentconsumer.RecordActions()))
	for _, a := range idempotentconsumer.RecordActions() {
		actions = append(actions, a)
	}
	check(t, "item grant", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Effect": "Allow", "Action": actions, "Resource": tableArn,
			}})},
		})
	})
	_, throttle := resourceOf(t, tpl, "AWS::CloudWatch::Alarm", "ConsumerTableThrottleAlarm")
	if got := js(props(t, throttle)["Metrics"]); strings.Count(got, `{"Name":"TableName","Value":"shared-idempotency"}`) != len(idempotentconsumer.TableOperations()) {
		t.Errorf("throttle alarm metrics %s, want TableName shared-idempotency for each operation", got)
	}
}

func TestConstructDeletionProtectionOff(t *testing.T) {
	_, tpl := build(t, "Unprotected", idempotentconsumer.Props{
		DisableDeletionProtection: true, TableRemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	}, nil)
	check(t, "deletion protection off", func() {
		tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"Properties":     assertions.Match_ObjectLike(&map[string]any{"DeletionProtectionEnabled": false}),
			"DeletionPolicy": "Delete",
		})
	})
}

// physicalNames are the properties that give each resource type a fixed
// physical name.
var physicalNames = map[string][]string{
	"AWS::DynamoDB::Table":  {"TableName"},
	"AWS::SQS::Queue":       {"QueueName"},
	"AWS::S3::Bucket":       {"BucketName", "BucketNamePrefix"},
	"AWS::Logs::LogGroup":   {"LogGroupName"},
	"AWS::IAM::Role":        {"RoleName"},
	"AWS::Lambda::Function": {"FunctionName"},
}

// noFixedNames fails t if a resource of tpl has a fixed physical name.
func noFixedNames(t *testing.T, tpl assertions.Template) {
	t.Helper()
	for typ, names := range physicalNames {
		for id, r := range *tpl.FindResources(jsii.String(typ), nil) {
			for _, n := range names {
				if v, ok := props(t, *r)[n]; ok {
					t.Errorf("%s %s has %s %s, want a name CloudFormation generates", typ, id, n, js(v))
				}
			}
		}
	}
}

// A user-given queue name names the queue, and only then does the
// dead-letter queue get a redrive-allow policy naming the queue.
func TestConstructQueueName(t *testing.T) {
	for _, tc := range []struct {
		name, queueName string
		fifo            bool
		want            string
	}{
		{"Named", "orders", false, "orders"},
		{"NamedFIFO", "orders", true, "orders.fifo"},
		{"NamedFIFOSuffix", "orders.fifo", true, "orders.fifo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tpl := build(t, tc.name, idempotentconsumer.Props{QueueName: tc.queueName, FIFO: tc.fifo}, nil)
			if c.Plan.QueueName != tc.want {
				t.Errorf("Plan.QueueName %q, want %q", c.Plan.QueueName, tc.want)
			}
			_, q := resourceOf(t, tpl, "AWS::SQS::Queue", "ConsumerQueue")
			if got := props(t, q)["QueueName"]; got != tc.want {
				t.Errorf("QueueName %s, want %q", js(got), tc.want)
			}
			_, dlq := resourceOf(t, tpl, "AWS::SQS::Queue", "ConsumerDeadLetterQueue")
			if got, ok := props(t, dlq)["QueueName"]; ok {
				t.Errorf("dead-letter queue QueueName %s, want a generated name", js(got))
			}
			queueArn := map[string]any{"Fn::Join": []any{"", []any{
				"arn:", map[string]any{"Ref": "AWS::Partition"}, ":sqs:", map[string]any{"Ref": "AWS::Region"}, ":",
				map[string]any{"Ref": "AWS::AccountId"}, ":" + tc.want,
			}}}
			if got, want := js(props(t, dlq)["RedriveAllowPolicy"]), js(map[string]any{"redrivePermission": "byQueue", "sourceQueueArns": []any{queueArn}}); got != want {
				t.Errorf("DLQ RedriveAllowPolicy %s, want %s", got, want)
			}
		})
	}
}

// Two stacks whose names share their first 70 characters, and a consumer
// in each of two nested stacks: no resource has a fixed name, so the names
// CloudFormation generates (stack name, logical id, a random suffix)
// cannot collide.
func TestConstructNoNameCollisions(t *testing.T) {
	long := strings.Repeat("S", 70)
	for _, name := range []string{long + "A", long + "B"} {
		_, tpl := build(t, name, idempotentconsumer.Props{}, nil)
		noFixedNames(t, tpl)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	parent := awscdk.NewStack(app, jsii.String("Parent"), nil)
	var nested []awscdk.NestedStack
	for _, id := range []string{"One", "Two"} {
		n := awscdk.NewNestedStack(parent, jsii.String(id), nil)
		if _, err := idempotentconsumer.New(n, "Consumer", idempotentconsumer.Props{
			Code: awslambda.Code_FromAsset(jsii.String(zipPath), nil), Namespace: "orders",
		}); err != nil {
			t.Fatal(err)
		}
		nested = append(nested, n)
	}
	for _, n := range nested {
		var tpl assertions.Template
		id := *n.Node().Id()
		check(t, "synth "+id, func() { tpl = assertions.Template_FromStack(n, nil) })
		if tpl == nil {
			t.FailNow()
		}
		check(t, "two queues in "+id, func() { tpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(2)) })
		noFixedNames(t, tpl)
	}
}

func TestConstructFIFO(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dedup bool
	}{
		{"FIFO", false},
		{"FIFODedup", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tpl := build(t, tc.name, idempotentconsumer.Props{FIFO: true, ContentBasedDeduplication: tc.dedup}, nil)
			var dedup any = assertions.Match_Absent()
			if tc.dedup {
				dedup = true
			}
			check(t, "FIFO queue", func() {
				tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
					"QueueName": assertions.Match_Absent(), "FifoQueue": true, "ContentBasedDeduplication": dedup,
				})
			})
			check(t, "FIFO dead-letter queue", func() {
				tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
					"QueueName": assertions.Match_Absent(), "FifoQueue": true, "ContentBasedDeduplication": assertions.Match_Absent(),
				})
			})
			check(t, "no batching window", func() {
				tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
					"MaximumBatchingWindowInSeconds": assertions.Match_Absent(),
					"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
				})
			})
			// A FIFO dead-letter queue restarts the retention.
			pl := c.Plan
			if want := pl.Retention + pl.DeadLetterRetention + pl.QueueWindow; pl.DeadLetterWindow != want {
				t.Errorf("DeadLetterWindow %v, want Retention + DeadLetterRetention + QueueWindow = %v", pl.DeadLetterWindow, want)
			}
			check(t, "expiry", func() {
				tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
					"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
						idempotentconsumer.EnvExpiresAfter: idempotentconsumer.GoSeconds(pl.DeadLetterWindow + idempotentconsumer.DefaultExpiryMargin),
					})},
				})
			})
			// The function never learns a deduplication id: nothing in its
			// environment names one.
			_, fn := resourceOf(t, tpl, "AWS::Lambda::Function", "ConsumerFunction")
			if env := js(props(t, fn)["Environment"]); strings.Contains(strings.ToLower(env), "dedup") {
				t.Errorf("function environment %s mentions deduplication", env)
			}
		})
	}
}

func TestConstructFunctionSettings(t *testing.T) {
	_, tpl := build(t, "FunctionSettings", idempotentconsumer.Props{
		Runtime:      awslambda.Runtime_NODEJS_22_X(),
		Handler:      "index.handler",
		Architecture: awslambda.Architecture_X86_64(),
		MemorySize:   1024,
		Tracing:      awslambda.Tracing_ACTIVE,
	}, nil)
	check(t, "function", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Runtime":       "nodejs22.x",
			"Handler":       "index.handler",
			"Architectures": []any{"x86_64"},
			"MemorySize":    1024,
			"TracingConfig": map[string]any{"Mode": "Active"},
		})
	})
	check(t, "X-Ray grant", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Effect": "Allow", "Action": []any{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, "Resource": "*",
			}})},
		})
	})
}

func TestConstructAlarmTopic(t *testing.T) {
	var topicID string
	c, tpl := build(t, "AlarmTopic", idempotentconsumer.Props{MetricsNamespace: "shop", MetricsService: "checkout"},
		func(stack awscdk.Stack, p *idempotentconsumer.Props) {
			topic := awssns.NewTopic(stack, jsii.String("Alarms"), nil)
			topicID = *stack.GetLogicalId(topic.Node().DefaultChild().(awscdk.CfnElement))
			p.AlarmTopic = topic
		})
	check(t, "every alarm notifies the topic", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"AlarmActions": []any{map[string]any{"Ref": topicID}},
		})
	})
	check(t, "count", func() { tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(len(c.Alarms()))) })
	check(t, "metrics namespace and service", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"Namespace":  "shop",
			"MetricName": metrics.Failed,
			"Dimensions": []any{map[string]any{"Name": "Service", "Value": "checkout"}},
		})
	})
}

// The figures a construct refuses for the options above, before anything
// is added to a scope.
func TestConstructRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props idempotentconsumer.Props
		want  string
	}{
		{"removal policy with an existing table", idempotentconsumer.Props{TableRemovalPolicy: awscdk.RemovalPolicy_DESTROY},
			"TableRemovalPolicy is set with Props.Table"},
		{"deletion protection with an existing table", idempotentconsumer.Props{DisableDeletionProtection: true},
			"DisableDeletionProtection is set with Props.Table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			stack := awscdk.NewStack(app, jsii.String("Refused"), nil)
			p := tc.props
			p.Code = awslambda.Code_FromAsset(jsii.String(zipPath), nil)
			p.Namespace = "orders"
			p.Table = awsdynamodb.Table_FromTableName(stack, jsii.String("Shared"), jsii.String("shared"))
			_, err := idempotentconsumer.New(stack, "Consumer", p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
			if n := len(*stack.Node().Children()); n != 1 {
				t.Errorf("the stack has %d children after a refusal, want only the imported table", n)
			}
		})
	}
}
