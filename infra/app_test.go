package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// tableWithTTL returns the idempotency table: the consumer's table.
func tableWithTTL(t *testing.T, tpl template) (string, resource) {
	t.Helper()
	return tpl.only(t, "AWS::DynamoDB::Table", "/Consumer/Table/")
}

func TestTables(t *testing.T) {
	tpl := synth(t).templates[defaultStack]
	if ids := tpl.ofType("AWS::DynamoDB::GlobalTable"); len(ids) != 0 {
		t.Errorf("global tables %v: want plain AWS::DynamoDB::Table (TableV2 makes GlobalTables)", ids)
	}
	if ids := tpl.ofType("AWS::DynamoDB::Table"); len(ids) != 2 {
		t.Fatalf("tables %v, want the idempotency table and the summaries table", ids)
	}
	idemID, _ := tableWithTTL(t, tpl)
	sumID, _ := tpl.only(t, "AWS::DynamoDB::Table", "/Summaries/")

	for _, tc := range []struct {
		name string
		id   string
		ttl  bool
	}{
		{"idempotency", idemID, true},
		{"summaries", sumID, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tpl.Resources[tc.id]
			p := r.Properties
			if got, want := js(p["KeySchema"]), js([]any{map[string]any{"AttributeName": driver.AttrID, "KeyType": "HASH"}}); got != want {
				t.Errorf("KeySchema %s, want %s", got, want)
			}
			if got, want := js(p["AttributeDefinitions"]), js([]any{map[string]any{"AttributeName": driver.AttrID, "AttributeType": "S"}}); got != want {
				t.Errorf("AttributeDefinitions %s, want %s", got, want)
			}
			if got := p["BillingMode"]; got != "PAY_PER_REQUEST" {
				t.Errorf("BillingMode %v, want PAY_PER_REQUEST (on demand)", got)
			}
			if got := get(t, p, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"); got != true {
				t.Errorf("point-in-time recovery %v, want true", got)
			}
			if got := get(t, p, "SSESpecification", "SSEEnabled"); got != true {
				t.Errorf("SSEEnabled %v, want true", got)
			}
			if r.DeletionPolicy != "Retain" || r.UpdatePolicy != "Retain" {
				t.Errorf("DeletionPolicy %q UpdateReplacePolicy %q, want Retain by default", r.DeletionPolicy, r.UpdatePolicy)
			}
			if got := p["DeletionProtectionEnabled"]; got != true {
				t.Errorf("DeletionProtectionEnabled %v, want true by default", got)
			}
			ttl, hasTTL := p["TimeToLiveSpecification"]
			if hasTTL != tc.ttl {
				t.Fatalf("TimeToLiveSpecification present %v, want %v", hasTTL, tc.ttl)
			}
			if tc.ttl {
				if got := get(t, ttl, "AttributeName"); got != driver.AttrExpiration {
					t.Errorf("TTL attribute %v, want driver.AttrExpiration %q (what the runtime writes)", got, driver.AttrExpiration)
				}
				if got := get(t, ttl, "Enabled"); got != true {
					t.Errorf("TTL enabled %v", got)
				}
			}
		})
	}
}

// queueFigures returns the queue's retention, visibility timeout and max
// receive count from the template, and checks its redrive targets the DLQ.
func queueFigures(t *testing.T, tpl template) (retention, visibility time.Duration, maxReceive int) {
	t.Helper()
	_, q := tpl.only(t, "AWS::SQS::Queue", "/Consumer/Queue/")
	dlqID, _ := tpl.only(t, "AWS::SQS::Queue", "/Consumer/DeadLetterQueue/")
	if got := js(get(t, q.Properties, "RedrivePolicy", "deadLetterTargetArn")); got != getAtt(dlqID, "Arn") {
		t.Errorf("redrive target %s, want the dead-letter queue %s", got, getAtt(dlqID, "Arn"))
	}
	return secs(t, get(t, q.Properties, "MessageRetentionPeriod")),
		secs(t, get(t, q.Properties, "VisibilityTimeout")),
		num(t, get(t, q.Properties, "RedrivePolicy", "maxReceiveCount"))
}

func functionOf(t *testing.T, tpl template) resource {
	t.Helper()
	r, ok := tpl.Resources[functionLogicalID]
	if !ok || r.Type != "AWS::Lambda::Function" {
		t.Fatalf("no AWS::Lambda::Function with the logical id %s (sam local invoke uses it)", functionLogicalID)
	}
	return r
}

func envOf(t *testing.T, tpl template) map[string]any {
	t.Helper()
	return get(t, functionOf(t, tpl).Properties, "Environment", "Variables").(map[string]any)
}

func TestQueues(t *testing.T) {
	for _, tc := range []struct {
		stack                   string
		retention, dlqRetention time.Duration
		maxReceive              int
		queueName               string
	}{
		{defaultStack, idempotentconsumer.DefaultRetention, idempotentconsumer.DefaultDeadLetterRetention, idempotentconsumer.DefaultMaxReceiveCount, ""},
		{customStack, 24 * time.Hour, 48 * time.Hour, 3, "summarise-requests"},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			tpl := synth(t).templates[tc.stack]
			if ids := tpl.ofType("AWS::SQS::Queue"); len(ids) != 2 {
				t.Fatalf("queues %v, want the queue and its dead-letter queue", ids)
			}
			retention, visibility, maxReceive := queueFigures(t, tpl)
			if retention != tc.retention {
				t.Errorf("retention %v, want %v", retention, tc.retention)
			}
			if maxReceive != tc.maxReceive {
				t.Errorf("maxReceiveCount %d, want %d", maxReceive, tc.maxReceive)
			}
			_, dlq := tpl.only(t, "AWS::SQS::Queue", "/Consumer/DeadLetterQueue/")
			if got := secs(t, get(t, dlq.Properties, "MessageRetentionPeriod")); got != tc.dlqRetention {
				t.Errorf("DLQ retention %v, want %v", got, tc.dlqRetention)
			}
			if _, ok := dlq.Properties["RedrivePolicy"]; ok {
				t.Errorf("the dead-letter queue has a redrive policy of its own")
			}
			// By default CloudFormation names the queue and the dead-letter
			// queue has no redrive-allow policy; with queueName, only the
			// queue may use the dead-letter queue: its ARN, spelled from the
			// name (a reference would be a cycle).
			_, q := tpl.only(t, "AWS::SQS::Queue", "/Consumer/Queue/")
			if tc.queueName == "" {
				for _, p := range []string{"QueueName", "RedriveAllowPolicy"} {
					if v, ok := q.Properties[p]; ok {
						t.Errorf("queue %s %s, want none by default", p, js(v))
					}
					if v, ok := dlq.Properties[p]; ok {
						t.Errorf("DLQ %s %s, want none by default", p, js(v))
					}
				}
			} else {
				if got := q.Properties["QueueName"]; got != tc.queueName {
					t.Errorf("QueueName %s, want %q", js(got), tc.queueName)
				}
				queueArn := join("arn:", pseudo("Partition"), ":sqs:", pseudo("Region"), ":", pseudo("AccountId"), ":"+tc.queueName)
				want := js(map[string]any{"redrivePermission": "byQueue", "sourceQueueArns": []any{jsonValue(queueArn)}})
				if got := js(dlq.Properties["RedriveAllowPolicy"]); got != want {
					t.Errorf("DLQ RedriveAllowPolicy %s, want %s", got, want)
				}
			}
			timeout := secs(t, get(t, functionOf(t, tpl).Properties, "Timeout"))
			if visibility < idempotentconsumer.VisibilityFactor*timeout {
				t.Errorf("visibility timeout %v < %d × function timeout %v", visibility, idempotentconsumer.VisibilityFactor, timeout)
			}
			for _, id := range tpl.ofType("AWS::SQS::Queue") {
				p := tpl.Resources[id].Properties
				if p["SqsManagedSseEnabled"] != true {
					t.Errorf("%s: SqsManagedSseEnabled %v, want true", id, p["SqsManagedSseEnabled"])
				}
				if _, ok := p["KmsMasterKeyId"]; ok {
					t.Errorf("%s: a KMS key; SQS-managed encryption needs no key grants", id)
				}
			}
		})
	}
}

func TestQueuePoliciesEnforceTLS(t *testing.T) {
	tpl := synth(t).templates[defaultStack]
	covered := map[string]bool{}
	for _, id := range tpl.ofType("AWS::SQS::QueuePolicy") {
		p := tpl.Resources[id].Properties
		for _, q := range list(p["Queues"]) {
			for _, s := range list(get(t, p, "PolicyDocument", "Statement")) {
				if get(t, s, "Effect") != "Deny" || js(get(t, s, "Principal")) != `{"AWS":"*"}` ||
					js(strs(t, get(t, s, "Action"))) != `["sqs:*"]` ||
					js(get(t, s, "Condition")) != `{"Bool":{"aws:SecureTransport":"false"}}` {
					continue
				}
				queueID := get(t, q, "Ref").(string)
				if js(get(t, s, "Resource")) == getAtt(queueID, "Arn") {
					covered[queueID] = true
				}
			}
		}
	}
	for _, id := range tpl.ofType("AWS::SQS::Queue") {
		if !covered[id] {
			t.Errorf("queue %s has no policy denying requests without TLS", id)
		}
	}
}

func TestFunction(t *testing.T) {
	s := synth(t)
	tpl := s.templates[defaultStack]
	fn := functionOf(t, tpl)
	p := fn.Properties
	for _, tc := range []struct {
		key  string
		want any
	}{
		{"Runtime", "provided.al2023"},
		{"Architectures", []any{"arm64"}},
		{"Handler", idempotentconsumer.DefaultHandler},
		{"Timeout", idempotentconsumer.DefaultTimeout.Seconds()},
		{"MemorySize", float64(idempotentconsumer.DefaultMemorySize)},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := p[tc.key]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s %s, want %s", tc.key, js(got), js(tc.want))
			}
		})
	}
	t.Run("no tracing by default", func(t *testing.T) {
		if v, ok := p["TracingConfig"]; ok {
			t.Errorf("TracingConfig %s, want none (tracing disabled by default)", js(v))
		}
	})
	t.Run("logging", func(t *testing.T) {
		if got := get(t, p, "LoggingConfig", "LogFormat"); got != "JSON" {
			t.Errorf("LogFormat %v, want JSON", got)
		}
		logsID, _ := tpl.only(t, "AWS::Logs::LogGroup", "/Consumer/Logs/")
		if got := js(get(t, p, "LoggingConfig", "LogGroup")); got != ref(logsID) {
			t.Errorf("LogGroup %s, want %s", got, ref(logsID))
		}
	})
	t.Run("SAM asset path", func(t *testing.T) {
		// sam local invoke -t cdk.out/<stack>.template.json reads these.
		if got := fn.Metadata["aws:asset:property"]; got != "Code" {
			t.Errorf("aws:asset:property %v, want Code", got)
		}
		asset, _ := fn.Metadata["aws:asset:path"].(string)
		if !strings.HasSuffix(asset, ".zip") {
			t.Fatalf("aws:asset:path %q, want the staged zip", asset)
		}
		if _, err := os.Stat(filepath.Join(s.outdir, asset)); err != nil {
			t.Errorf("staged asset: %v", err)
		}
	})
}

func TestEventSourceMapping(t *testing.T) {
	for _, tc := range []struct {
		stack                         string
		batch, window, maxConcurrency any // window nil: no batching window
	}{
		{defaultStack, float64(idempotentconsumer.DefaultBatchSize), idempotentconsumer.DefaultMaxBatchingWindow.Seconds(), float64(idempotentconsumer.DefaultMaxConcurrency)},
		{customStack, float64(20), float64(10), float64(2)},
		{stubStack, float64(idempotentconsumer.DefaultBatchSize), nil, float64(idempotentconsumer.DefaultMaxConcurrency)},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			tpl := synth(t).templates[tc.stack]
			ids := tpl.ofType("AWS::Lambda::EventSourceMapping")
			if len(ids) != 1 {
				t.Fatalf("event source mappings %v, want one", ids)
			}
			p := tpl.Resources[ids[0]].Properties
			queueID, _ := tpl.only(t, "AWS::SQS::Queue", "/Consumer/Queue/")
			if got := js(p["EventSourceArn"]); got != getAtt(queueID, "Arn") {
				t.Errorf("EventSourceArn %s, want the queue", got)
			}
			if got := js(p["FunctionName"]); got != ref(functionLogicalID) {
				t.Errorf("FunctionName %s, want the function", got)
			}
			if got := js(p["FunctionResponseTypes"]); got != `["ReportBatchItemFailures"]` {
				t.Errorf("FunctionResponseTypes %s, want [ReportBatchItemFailures]: without it one failed record fails the batch", got)
			}
			if got := p["BatchSize"]; got != tc.batch {
				t.Errorf("BatchSize %v, want %v", got, tc.batch)
			}
			if got := p["MaximumBatchingWindowInSeconds"]; got != tc.window {
				t.Errorf("MaximumBatchingWindowInSeconds %v, want %v", got, tc.window)
			}
			if got := get(t, p, "ScalingConfig", "MaximumConcurrency"); got != tc.maxConcurrency {
				t.Errorf("MaximumConcurrency %v, want %v", got, tc.maxConcurrency)
			}
		})
	}
}

// TestEnvironment checks the contract with the runtime: the variable names
// verbatim, and an expiry that covers the window of the queue in the same
// template.
func TestEnvironment(t *testing.T) {
	for _, tc := range []struct {
		stack, namespace, model, prefix, concurrency string
		margin, minRemaining                         time.Duration
	}{
		{defaultStack, defaultNamespace, defaultModel, defaultPrefix, strconv.Itoa(idempotentconsumer.DefaultBatchSize), idempotentconsumer.DefaultExpiryMargin,
			idempotentconsumer.DefaultTimeout / 2},
		{customStack, "docs-v1", "us.anthropic.claude-3-5-haiku-20241022-v1:0", "in/", "8", 2 * time.Hour, 45 * time.Second},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			tpl := synth(t).templates[tc.stack]
			env := envOf(t, tpl)
			var keys []string
			for k := range env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			want := []string{"SQSONCE_CONCURRENCY", "SQSONCE_DOCUMENTS_BUCKET", "SQSONCE_DOCUMENTS_PREFIX", "SQSONCE_EXPIRES_AFTER",
				"SQSONCE_MIN_REMAINING", "SQSONCE_MODEL", "SQSONCE_NAMESPACE", "SQSONCE_PROVIDER", "SQSONCE_QUEUE_WINDOW",
				"SQSONCE_SUMMARIES_TABLE", "SQSONCE_TABLE"}
			if !reflect.DeepEqual(keys, want) {
				t.Errorf("variables %v, want %v", keys, want)
			}

			idemID, _ := tableWithTTL(t, tpl)
			sumID, _ := tpl.only(t, "AWS::DynamoDB::Table", "/Summaries/")
			if got := js(env["SQSONCE_TABLE"]); got != ref(idemID) {
				t.Errorf("SQSONCE_TABLE %s, want the table with the TTL %s", got, ref(idemID))
			}
			if got := js(env["SQSONCE_SUMMARIES_TABLE"]); got != ref(sumID) {
				t.Errorf("SQSONCE_SUMMARIES_TABLE %s, want %s", got, ref(sumID))
			}
			// A literal: never a reference to the (generated) function name.
			if got := env["SQSONCE_NAMESPACE"]; got != tc.namespace {
				t.Errorf("SQSONCE_NAMESPACE %s, want the fixed string %q", js(got), tc.namespace)
			}
			for k, v := range map[string]string{
				"SQSONCE_PROVIDER":         "bedrock",
				"SQSONCE_MODEL":            tc.model,
				"SQSONCE_DOCUMENTS_PREFIX": tc.prefix,
				"SQSONCE_CONCURRENCY":      tc.concurrency,
			} {
				if env[k] != v {
					t.Errorf("%s %s, want %q", k, js(env[k]), v)
				}
			}

			retention, visibility, maxReceive := queueFigures(t, tpl)
			window := batch.QueueWindow(retention, maxReceive, visibility)
			parse := func(k string) time.Duration {
				s, _ := env[k].(string)
				d, err := time.ParseDuration(s)
				if err != nil || !strings.HasSuffix(s, "s") || strings.ContainsAny(s, "hm.") {
					t.Fatalf("%s %q is not a Go duration in whole seconds (%v)", k, s, err)
				}
				return d
			}
			if got := parse("SQSONCE_QUEUE_WINDOW"); got != window {
				t.Errorf("SQSONCE_QUEUE_WINDOW %v, want the queue's %v = %v + %d × %v", got, window, retention, maxReceive, visibility)
			}
			// A message redriven from the (standard) dead-letter queue waits
			// there until its retention, counted from its first enqueue,
			// ends, then is a new message with a window of its own.
			_, dlq := tpl.only(t, "AWS::SQS::Queue", "/Consumer/DeadLetterQueue/")
			deadLetterWindow := secs(t, get(t, dlq.Properties, "MessageRetentionPeriod")) + window
			expires := parse("SQSONCE_EXPIRES_AFTER")
			if expires < deadLetterWindow {
				t.Errorf("SQSONCE_EXPIRES_AFTER %v is below the dead-letter window %v", expires, deadLetterWindow)
			}
			if expires != deadLetterWindow+tc.margin {
				t.Errorf("SQSONCE_EXPIRES_AFTER %v, want dead-letter window %v + margin %v", expires, deadLetterWindow, tc.margin)
			}
			// A record starts only with SQSONCE_MIN_REMAINING left, and an
			// invocation starts with the function's timeout left: the
			// margin must be below the timeout in the same template.
			timeout := secs(t, get(t, functionOf(t, tpl).Properties, "Timeout"))
			minRemaining := parse("SQSONCE_MIN_REMAINING")
			if minRemaining >= timeout {
				t.Errorf("SQSONCE_MIN_REMAINING %v is not below the function timeout %v: no record would start", minRemaining, timeout)
			}
			if minRemaining != tc.minRemaining {
				t.Errorf("SQSONCE_MIN_REMAINING %v, want %v", minRemaining, tc.minRemaining)
			}
			if got := tpl.Outputs["ExpiresAfter"].Value; got != env["SQSONCE_EXPIRES_AFTER"] {
				t.Errorf("output ExpiresAfter %v, want %v", got, env["SQSONCE_EXPIRES_AFTER"])
			}
		})
	}
}

// policyOf returns the statements of the function role's policies, failing
// on managed policies or inline policies elsewhere.
func policyOf(t *testing.T, tpl template) []any {
	t.Helper()
	roleID := strings.TrimSuffix(strings.TrimPrefix(js(get(t, functionOf(t, tpl).Properties, "Role")), `{"Fn::GetAtt":["`), `","Arn"]}`)
	role, ok := tpl.Resources[roleID]
	if !ok || role.Type != "AWS::IAM::Role" {
		t.Fatalf("function role %q is not a role in the template", roleID)
	}
	if got := js(get(t, role.Properties, "AssumeRolePolicyDocument", "Statement", 0, "Principal")); got != `{"Service":"lambda.amazonaws.com"}` {
		t.Errorf("role trusts %s, want lambda.amazonaws.com", got)
	}
	for _, k := range []string{"ManagedPolicyArns", "Policies", "PermissionsBoundary"} {
		if v, ok := role.Properties[k]; ok {
			t.Errorf("role has %s %s: every permission must be an explicit statement", k, js(v))
		}
	}
	var statements []any
	for _, id := range tpl.ofType("AWS::IAM::Policy") {
		p := tpl.Resources[id].Properties
		statements = append(statements, list(get(t, p, "PolicyDocument", "Statement"))...)
		if got := js(p["Roles"]); got != js([]any{map[string]any{"Ref": roleID}}) {
			t.Errorf("policy %s attached to %s, want the function role only", id, got)
		}
	}
	if ids := tpl.ofType("AWS::IAM::ManagedPolicy"); len(ids) != 0 {
		t.Errorf("managed policies %v", ids)
	}
	return statements
}

// grants maps each resource (canonical JSON) to the sorted actions of the
// statement that names it, checking the rules every statement must keep.
// The statements with a Sid are returned apart, by Sid: they repeat a
// resource on purpose.
func grants(t *testing.T, statements []any) (map[string][]string, map[string]map[string]any) {
	t.Helper()
	forbidden := map[string]bool{"dynamodb:Scan": true, "dynamodb:Query": true, "dynamodb:BatchWriteItem": true, "dynamodb:BatchGetItem": true}
	xray := sorted("xray:PutTraceSegments", "xray:PutTelemetryRecords")
	out := map[string][]string{}
	bySid := map[string]map[string]any{}
	for _, s := range statements {
		st := s.(map[string]any)
		if st["Effect"] != "Allow" {
			t.Errorf("statement %s: Effect %v", js(st), st["Effect"])
		}
		for _, k := range []string{"NotAction", "NotResource", "Principal"} {
			if _, ok := st[k]; ok {
				t.Errorf("statement %s has %s", js(st), k)
			}
		}
		actions := strs(t, st["Action"])
		for _, a := range actions {
			if strings.Contains(a, "*") || forbidden[a] {
				t.Errorf("statement allows %s", a)
			}
		}
		if sid, ok := st["Sid"].(string); ok {
			bySid[sid] = st
			continue
		}
		for _, r := range list(st["Resource"]) {
			// X-Ray has no resource-level permissions: its two actions are
			// the only ones allowed on "*".
			if r == "*" && !reflect.DeepEqual(actions, xray) {
				t.Errorf("statement %s is on resource \"*\"", js(st))
			}
			key := js(r)
			if _, dup := out[key]; dup {
				t.Errorf("resource %s in two statements", key)
			}
			out[key] = actions
		}
	}
	return out, bySid
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func join(parts ...any) string { return js(map[string]any{"Fn::Join": []any{"", parts}}) }

// pseudo is a reference to a pseudo parameter, such as AWS::Region.
func pseudo(name string) map[string]any { return map[string]any{"Ref": "AWS::" + name} }

func sorted(s ...string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestIAMLeastPrivilege(t *testing.T) {
	partition, region, account := pseudo("Partition"), pseudo("Region"), pseudo("AccountId")
	items := sorted(idempotentconsumer.ItemActions()...)
	records := sorted(idempotentconsumer.RecordActions()...)
	// Lambda's poller: receive, delete, read the attributes. Neither
	// sqs:GetQueueUrl (nothing calls it) nor ChangeMessageVisibility, which
	// PaceRedelivery below holds once.
	consume := sorted("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
	if got := sorted(idempotentconsumer.EventSourceActions()...); !reflect.DeepEqual(got, consume) {
		t.Errorf("EventSourceActions %v, want %v", got, consume)
	}
	xray := sorted("xray:PutTraceSegments", "xray:PutTelemetryRecords")
	logs := sorted("logs:CreateLogStream", "logs:PutLogEvents")
	read := sorted("s3:GetObject", "s3:GetObjectVersion")
	invoke := []string{"bedrock:InvokeModel"}

	if want := sorted("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"); !reflect.DeepEqual(items, want) {
		t.Errorf("ItemActions %v, want %v", items, want)
	}
	// dynamostore claims with PutItem, reads a refusal's record with
	// GetItem, and completes and releases with UpdateItem (a release is an
	// update in place): it never deletes an item of the idempotency table.
	if want := sorted("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"); !reflect.DeepEqual(records, want) {
		t.Errorf("RecordActions %v, want %v", records, want)
	}

	for _, tc := range []struct {
		stack string
		// extra builds the stack-specific grants from the template.
		extra func(t *testing.T, tpl template) map[string][]string
	}{
		{defaultStack, func(t *testing.T, tpl template) map[string][]string {
			bucketID, _ := tpl.only(t, "AWS::S3::Bucket", "/Documents/")
			return map[string][]string{
				join(map[string]any{"Fn::GetAtt": []any{bucketID, "Arn"}}, "/"+defaultPrefix+"*"): read,
				join("arn:", partition, ":bedrock:", region, "::foundation-model/"+defaultModel):  invoke,
			}
		}},
		{customStack, func(t *testing.T, tpl template) map[string][]string {
			if ids := tpl.ofType("AWS::S3::Bucket"); len(ids) != 0 {
				t.Errorf("buckets %v: a named documents bucket is imported, not created", ids)
			}
			model := "us.anthropic.claude-3-5-haiku-20241022-v1:0"
			return map[string][]string{
				js("*"): xray, // tracing=active
				join("arn:", partition, ":s3:::my-documents/in/*"):                                               read,
				join("arn:", partition, ":bedrock:", region, ":", account, ":inference-profile/"+model):          invoke,
				join("arn:", partition, ":bedrock:*::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"): invoke,
			}
		}},
		{stubStack, func(t *testing.T, tpl template) map[string][]string {
			bucketID, _ := tpl.only(t, "AWS::S3::Bucket", "/Documents/")
			return map[string][]string{
				join(map[string]any{"Fn::GetAtt": []any{bucketID, "Arn"}}, "/"+defaultPrefix+"*"): read,
			}
		}},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			tpl := synth(t).templates[tc.stack]
			got, bySid := grants(t, policyOf(t, tpl))
			idemID, _ := tableWithTTL(t, tpl)
			sumID, _ := tpl.only(t, "AWS::DynamoDB::Table", "/Summaries/")
			queueID, _ := tpl.only(t, "AWS::SQS::Queue", "/Consumer/Queue/")
			dlqID, _ := tpl.only(t, "AWS::SQS::Queue", "/Consumer/DeadLetterQueue/")
			logsID, _ := tpl.only(t, "AWS::Logs::LogGroup", "/Consumer/Logs/")
			want := map[string][]string{
				getAtt(idemID, "Arn"):  records,
				getAtt(sumID, "Arn"):   {"dynamodb:PutItem"}, // the sink only puts
				getAtt(queueID, "Arn"): consume,
				getAtt(logsID, "Arn"):  logs,
			}
			for k, v := range tc.extra(t, tpl) {
				want[k] = v
			}
			for r, actions := range want {
				if !reflect.DeepEqual(got[r], actions) {
					t.Errorf("on %s: actions %v, want exactly %v", r, got[r], actions)
				}
			}
			for r, actions := range got {
				if _, ok := want[r]; !ok {
					t.Errorf("unexpected grant of %v on %s", actions, r)
				}
			}
			// The runtime paces redelivery with ChangeMessageVisibilityBatch,
			// which needs exactly this action on its queue, in a statement
			// of the function's own (the event source's grant leaves it out).
			// Permanent failures go to the dead-letter queue at once:
			// SendMessage there, in a statement of its own.
			wantSids := map[string]string{"PaceRedelivery": js(map[string]any{
				"Action": idempotentconsumer.VisibilityAction, "Effect": "Allow", "Resource": jsonValue(getAtt(queueID, "Arn")), "Sid": "PaceRedelivery",
			}), "DeadLetterPermanentFailures": js(map[string]any{
				"Action": idempotentconsumer.DeadLetterAction, "Effect": "Allow", "Resource": jsonValue(getAtt(dlqID, "Arn")), "Sid": "DeadLetterPermanentFailures",
			})}
			if len(bySid) != len(wantSids) {
				t.Errorf("statements with a Sid %v, want %v", sortedKeys(bySid), sortedKeys(wantSids))
			}
			for sid, want := range wantSids {
				if got := js(bySid[sid]); got != want {
					t.Errorf("statement %s: %s, want %s", sid, got, want)
				}
			}
		})
	}

	t.Run("inference profile condition", func(t *testing.T) {
		tpl := synth(t).templates[customStack]
		model := "us.anthropic.claude-3-5-haiku-20241022-v1:0"
		partition, region, account := pseudo("Partition"), pseudo("Region"), pseudo("AccountId")
		profile := join("arn:", partition, ":bedrock:", region, ":", account, ":inference-profile/"+model)
		found := false
		for _, s := range policyOf(t, tpl) {
			st := s.(map[string]any)
			if !strings.Contains(js(st["Resource"]), "foundation-model") {
				continue
			}
			found = true
			if got := js(get(t, st, "Condition", "StringEquals", "bedrock:InferenceProfileArn")); got != profile {
				t.Errorf("foundation model grant is conditioned on %s, want the profile %s", got, profile)
			}
		}
		if !found {
			t.Error("no foundation model grant for the inference profile")
		}
	})
}

func TestAlarms(t *testing.T) {
	for _, tc := range []struct {
		stack   string
		oldest  time.Duration
		actions string // JSON of AlarmActions, "null" when absent
	}{
		{defaultStack, idempotentconsumer.DefaultOldestMessageAlarm, "null"},
		{customStack, 15 * time.Minute, `["arn:aws:sns:eu-west-1:123456789012:alarms"]`},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			tpl := synth(t).templates[tc.stack]
			if ids := tpl.ofType("AWS::CloudWatch::Alarm"); len(ids) != 10 {
				t.Errorf("alarms %v, want 10", ids)
			}
			queueID, _ := tpl.only(t, "AWS::SQS::Queue", "/Consumer/Queue/")
			dlqID, _ := tpl.only(t, "AWS::SQS::Queue", "/Consumer/DeadLetterQueue/")
			for _, a := range []struct {
				path, namespace, metric, dimension, target string
				threshold                                  float64
			}{
				{"/Consumer/DeadLetterAlarm/", "AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", getAtt(dlqID, "QueueName"), 0},
				{"/Consumer/OldestMessageAlarm/", "AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", getAtt(queueID, "QueueName"), tc.oldest.Seconds()},
			} {
				_, r := tpl.only(t, "AWS::CloudWatch::Alarm", a.path)
				p := r.Properties
				if p["Namespace"] != a.namespace || p["MetricName"] != a.metric {
					t.Errorf("%s: metric %v/%v, want %s/%s", a.path, p["Namespace"], p["MetricName"], a.namespace, a.metric)
				}
				if got := js(p["Dimensions"]); got != js([]any{map[string]any{"Name": a.dimension, "Value": jsonValue(a.target)}}) {
					t.Errorf("%s: dimensions %s, want %s=%s", a.path, got, a.dimension, a.target)
				}
				if p["ComparisonOperator"] != "GreaterThanThreshold" || p["Threshold"] != a.threshold {
					t.Errorf("%s: %v %v, want GreaterThanThreshold %v", a.path, p["ComparisonOperator"], p["Threshold"], a.threshold)
				}
				if got := js(p["AlarmActions"]); got != tc.actions {
					t.Errorf("%s: AlarmActions %s, want %s", a.path, got, tc.actions)
				}
			}

			// Invocation errors as a rate: errors per 100 invocations of
			// the function, over two periods in a row.
			{
				_, r := tpl.only(t, "AWS::CloudWatch::Alarm", "/Consumer/ErrorsAlarm/")
				p := r.Properties
				byID, expr := map[string]string{}, ""
				for _, m := range list(p["Metrics"]) {
					if e, ok := m.(map[string]any)["Expression"].(string); ok {
						expr = e
						continue
					}
					stat := get(t, m, "MetricStat")
					if get(t, stat, "Metric", "Namespace") != "AWS/Lambda" || get(t, stat, "Stat") != "Sum" || get(t, stat, "Period") != float64(300) ||
						js(get(t, stat, "Metric", "Dimensions")) != js([]any{map[string]any{"Name": "FunctionName", "Value": jsonValue(ref(functionLogicalID))}}) {
						t.Errorf("ErrorsAlarm: metric %s, want AWS/Lambda of the function, Sum over 300", js(stat))
					}
					byID[get(t, m, "Id").(string)] = get(t, stat, "Metric", "MetricName").(string)
				}
				if expr != "100 * FILL(errors, 0) / invocations" || byID["errors"] != "Errors" || byID["invocations"] != "Invocations" {
					t.Errorf("ErrorsAlarm: %q over %v, want 100 * Errors / Invocations", expr, byID)
				}
				if p["ComparisonOperator"] != "GreaterThanThreshold" || p["Threshold"] != float64(idempotentconsumer.ErrorRatePercent) ||
					p["EvaluationPeriods"] != float64(idempotentconsumer.ErrorPeriods) || p["TreatMissingData"] != "notBreaching" {
					t.Errorf("ErrorsAlarm: %v %v for %v periods, missing data %v", p["ComparisonOperator"], p["Threshold"], p["EvaluationPeriods"], p["TreatMissingData"])
				}
			}

			// The idempotency outcomes, from the EMF lines of handler/metrics.
			service := envOf(t, tpl)["SQSONCE_NAMESPACE"]
			for _, a := range []struct {
				path, metric string
				periods      float64
			}{
				{"/Consumer/FailedAlarm/", metrics.Failed, 2},
				{"/Consumer/InProgressAlarm/", metrics.InProgressRetried, 3},
				{"/Consumer/TakenOverAlarm/", metrics.TakenOver, 1},
				{"/Consumer/DoubleRunAlarm/", metrics.DoubleRuns, 1},
				{"/Consumer/QuarantinedAlarm/", metrics.Quarantined, 1},
			} {
				_, r := tpl.only(t, "AWS::CloudWatch::Alarm", a.path)
				p := r.Properties
				if p["Namespace"] != idempotentconsumer.DefaultMetricsNamespace || p["MetricName"] != a.metric || p["Statistic"] != "Sum" || p["Period"] != float64(300) {
					t.Errorf("%s: metric %v/%v %v over %v, want %s/%s Sum over 300", a.path, p["Namespace"], p["MetricName"], p["Statistic"], p["Period"],
						idempotentconsumer.DefaultMetricsNamespace, a.metric)
				}
				if got, want := js(p["Dimensions"]), js([]any{map[string]any{"Name": "Service", "Value": service}}); got != want {
					t.Errorf("%s: dimensions %s, want %s (the app's metrics Service is its namespace)", a.path, got, want)
				}
				if p["ComparisonOperator"] != "GreaterThanThreshold" || p["Threshold"] != float64(0) || p["EvaluationPeriods"] != a.periods ||
					p["TreatMissingData"] != "notBreaching" {
					t.Errorf("%s: %v %v for %v periods, missing data %v; want GreaterThanThreshold 0 for %v, notBreaching",
						a.path, p["ComparisonOperator"], p["Threshold"], p["EvaluationPeriods"], p["TreatMissingData"], a.periods)
				}
				if got := js(p["AlarmActions"]); got != tc.actions {
					t.Errorf("%s: AlarmActions %s, want %s", a.path, got, tc.actions)
				}
			}

			// DynamoDB throttling and system errors on the idempotency table,
			// summed over the operations the function makes.
			idemID, _ := tableWithTTL(t, tpl)
			for _, a := range []struct{ path, metric string }{
				{"/Consumer/TableThrottleAlarm/", "ThrottledRequests"},
				{"/Consumer/TableErrorsAlarm/", "SystemErrors"},
			} {
				_, r := tpl.only(t, "AWS::CloudWatch::Alarm", a.path)
				p := r.Properties
				ops := map[string]bool{}
				var expr string
				for _, m := range list(p["Metrics"]) {
					if e, ok := m.(map[string]any)["Expression"].(string); ok {
						expr = e
						continue
					}
					stat := get(t, m, "MetricStat")
					if get(t, stat, "Metric", "Namespace") != "AWS/DynamoDB" || get(t, stat, "Metric", "MetricName") != a.metric ||
						get(t, stat, "Stat") != "Sum" || get(t, stat, "Period") != float64(300) {
						t.Errorf("%s: metric %s, want AWS/DynamoDB %s Sum over 300", a.path, js(stat), a.metric)
					}
					dims := map[string]string{}
					for _, d := range list(get(t, stat, "Metric", "Dimensions")) {
						dims[get(t, d, "Name").(string)] = js(get(t, d, "Value"))
					}
					if dims["TableName"] != ref(idemID) {
						t.Errorf("%s: TableName %s, want the idempotency table %s", a.path, dims["TableName"], ref(idemID))
					}
					id := get(t, m, "Id").(string)
					ops[strings.Trim(dims["Operation"], `"`)] = true
					if !strings.Contains(js(p["Metrics"]), "FILL("+id+", 0)") {
						t.Errorf("%s: the expression does not sum FILL(%s, 0)", a.path, id)
					}
				}
				if got, want := sortedKeys(ops), sorted(idempotentconsumer.TableOperations()...); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: operations %v, want %v", a.path, got, want)
				}
				if strings.Count(expr, "FILL(") != len(idempotentconsumer.TableOperations()) {
					t.Errorf("%s: expression %q, want one FILL term per operation", a.path, expr)
				}
				if p["ComparisonOperator"] != "GreaterThanThreshold" || p["Threshold"] != float64(0) || p["TreatMissingData"] != "notBreaching" {
					t.Errorf("%s: %v %v, missing data %v; want GreaterThanThreshold 0, notBreaching", a.path, p["ComparisonOperator"], p["Threshold"], p["TreatMissingData"])
				}
				if got := js(p["AlarmActions"]); got != tc.actions {
					t.Errorf("%s: AlarmActions %s, want %s", a.path, got, tc.actions)
				}
			}
		})
	}
}

func TestOutputs(t *testing.T) {
	tpl := synth(t).templates[defaultStack]
	idemID, _ := tableWithTTL(t, tpl)
	sumID, _ := tpl.only(t, "AWS::DynamoDB::Table", "/Summaries/")
	queueID, _ := tpl.only(t, "AWS::SQS::Queue", "/Consumer/Queue/")
	dlqID, _ := tpl.only(t, "AWS::SQS::Queue", "/Consumer/DeadLetterQueue/")
	bucketID, _ := tpl.only(t, "AWS::S3::Bucket", "/Documents/")
	for name, want := range map[string]string{
		"QueueUrl":            ref(queueID),
		"DeadLetterQueueUrl":  ref(dlqID),
		"TableName":           ref(idemID),
		"SummariesTableName":  ref(sumID),
		"FunctionName":        ref(functionLogicalID),
		"DocumentsBucketName": ref(bucketID),
	} {
		if got := js(tpl.Outputs[name].Value); got != want {
			t.Errorf("output %s %s, want %s", name, got, want)
		}
	}
}

func TestCustomSettings(t *testing.T) {
	tpl := synth(t).templates[customStack]
	for _, id := range tpl.ofType("AWS::DynamoDB::Table") {
		if r := tpl.Resources[id]; r.DeletionPolicy != "Delete" {
			t.Errorf("%s: DeletionPolicy %q, want Delete with tableRemovalPolicy=destroy", id, r.DeletionPolicy)
		}
		if got := tpl.Resources[id].Properties["DeletionProtectionEnabled"]; got != false {
			t.Errorf("%s: DeletionProtectionEnabled %v, want false with deletionProtection=false", id, got)
		}
	}
	_, visibility, _ := queueFigures(t, tpl)
	if want := idempotentconsumer.VisibilityFactor * time.Minute; visibility != want {
		t.Errorf("visibility %v, want %d × timeout 1m", visibility, idempotentconsumer.VisibilityFactor)
	}
	if got := functionOf(t, tpl).Properties["MemorySize"]; got != float64(512) {
		t.Errorf("MemorySize %v, want 512", got)
	}
	if got := js(functionOf(t, tpl).Properties["TracingConfig"]); got != `{"Mode":"Active"}` {
		t.Errorf("TracingConfig %s, want Active with tracing=active", got)
	}
	if got := envOf(t, tpl)["SQSONCE_DOCUMENTS_BUCKET"]; got != "my-documents" {
		t.Errorf("SQSONCE_DOCUMENTS_BUCKET %v, want my-documents", got)
	}
}

func TestStubProvider(t *testing.T) {
	tpl := synth(t).templates[stubStack]
	if got := envOf(t, tpl)["SQSONCE_PROVIDER"]; got != "stub" {
		t.Errorf("SQSONCE_PROVIDER %v, want stub", got)
	}
	for _, s := range policyOf(t, tpl) {
		for _, a := range strs(t, s.(map[string]any)["Action"]) {
			if strings.HasPrefix(a, "bedrock:") {
				t.Errorf("stub provider is granted %s", a)
			}
		}
	}
}

// TestInvalidSettings checks that bad settings fail at synth time with a
// clear error, before anything is added to the app.
func TestInvalidSettings(t *testing.T) {
	zipPath := synth(t).bootstrapZip
	for _, tc := range []struct {
		name string
		ctx  map[string]any
		want string
	}{
		{"visibility below 6x timeout", map[string]any{"timeout": "3m", "visibilityTimeout": "10m"}, "VisibilityTimeout 10m0s is below 6 × Timeout 3m0s"},
		{"expiry below window", map[string]any{"expiresAfter": "96h"}, "ExpiresAfter 96h0m0s is below the queue's window 97h30m0s"},
		{"expiry below the dead-letter window", map[string]any{"expiresAfter": "200h"},
			"ExpiresAfter 200h0m0s is below the dead-letter window 433h30m0s (DeadLetterRetention 336h0m0s + the queue's window 97h30m0s)"},
		{"destroy with deletion protection", map[string]any{"tableRemovalPolicy": "destroy"}, "set DisableDeletionProtection as well"},
		{"DLQ keeps less than the queue", map[string]any{"retention": "72h", "deadLetterRetention": "24h"}, "DeadLetterRetention 24h0m0s is below Retention 72h0m0s"},
		{"retention above SQS maximum", map[string]any{"retention": "400h"}, "Retention 400h0m0s is outside SQS's"},
		{"big batch without window", map[string]any{"batchSize": "100", "maxBatchingWindow": "0s"}, "needs a MaxBatchingWindow"},
		{"timeout above Lambda maximum", map[string]any{"timeout": "20m"}, "Timeout 20m0s is outside"},
		{"deadline margin equal to the timeout", map[string]any{"timeout": "1m", "minRemaining": "60s"},
			"minRemaining 1m0s is not below the function timeout 1m0s"},
		{"deadline margin above the default timeout", map[string]any{"minRemaining": "5m"},
			"minRemaining 5m0s is not below the function timeout 3m0s"},
		{"missing zip", map[string]any{"bootstrapZip": filepath.Join(testTmp, "nope.zip")}, "make build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.ctx["bootstrapZip"]; !ok {
				tc.ctx["bootstrapZip"] = zipPath
			}
			cfg, err := readConfig(func(k string) any { return tc.ctx[k] })
			if err != nil {
				t.Fatalf("readConfig: %v", err)
			}
			app := awscdk.NewApp(nil)
			_, err = newSummariseStack(app, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if n := len(*app.Node().Children()); n != 0 {
				t.Errorf("the app has %d children after a refused configuration", n)
			}
		})
	}
}

func TestDeadlineMargin(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		minRemaining, timeout time.Duration
		want                  string // the variable's value; empty: refused
	}{
		{"default: half the default timeout", 0, idempotentconsumer.DefaultTimeout, "90s"},
		{"default: half an odd timeout, exactly", 0, 3 * time.Second, "1.5s"},
		{"set", 45 * time.Second, time.Minute, "45s"},
		{"just below the timeout", 59 * time.Second, time.Minute, "59s"},
		{"equal to the timeout", time.Minute, time.Minute, ""},
		{"above the timeout", 2 * time.Minute, time.Minute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := deadlineMargin(tc.minRemaining, tc.timeout)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "not below the function timeout") {
					t.Fatalf("deadlineMargin = %v, %v; want a refusal", d, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := goDuration(d); got != tc.want {
				t.Errorf("SQSONCE_MIN_REMAINING %q, want %q", got, tc.want)
			}
			if parsed, err := time.ParseDuration(goDuration(d)); err != nil || parsed != d || parsed >= tc.timeout {
				t.Errorf("%q parses to %v, %v; want %v below %v", goDuration(d), parsed, err, d, tc.timeout)
			}
		})
	}
}

// TestREADMEFigures keeps the worked figures in README.md equal to the
// synthesised defaults.
func TestREADMEFigures(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(t, synth(t).templates[defaultStack])
	for _, k := range []string{"SQSONCE_QUEUE_WINDOW", "SQSONCE_EXPIRES_AFTER"} {
		v, _ := env[k].(string)
		if !strings.Contains(string(readme), v) {
			t.Errorf("README.md does not mention the default %s=%s", k, v)
		}
	}
}

// jsonValue parses the canonical JSON made by ref and getAtt back into a
// value, to embed it in a larger expected value.
func jsonValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}
