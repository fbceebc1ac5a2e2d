//go:build deploylocal

package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// row is one property: its template value (references resolved) and what
// moto holds.
type row struct {
	resource, property string
	template, moto     string
	dropped            bool // moto does not apply it: the synth tests prove it
}

// readback collects the rows.
type readback struct {
	rows []row
}

// applied adds a property moto applies: the two must be equal.
func (r *readback) applied(resource, property string, template, moto any) {
	r.rows = append(r.rows, row{resource: resource, property: property, template: js(norm(template)), moto: js(norm(moto))})
}

// dropped adds a property moto is known to drop: the two must differ.
func (r *readback) dropped(resource, property string, template, moto any) {
	r.rows = append(r.rows, row{resource: resource, property: property, template: js(norm(template)), moto: js(norm(moto)), dropped: true})
}

// norm makes JSON numbers and Go integers compare equal, recursively.
func norm(v any) any {
	switch v := v.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	case int32:
		return int64(v)
	case *int32:
		if v == nil {
			return nil
		}
		return int64(*v)
	case int:
		return int64(v)
	case *string:
		if v == nil {
			return nil
		}
		return *v
	case *bool:
		if v == nil {
			return nil
		}
		return *v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = norm(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = norm(x)
		}
		return out
	}
	return v
}

// check fails t for every applied row that differs and every dropped row
// that moto now holds, and logs both tables.
func (r *readback) check(t *testing.T) {
	t.Helper()
	var applied, dropped strings.Builder
	wa := tabwriter.NewWriter(&applied, 0, 0, 2, ' ', 0)
	wd := tabwriter.NewWriter(&dropped, 0, 0, 2, ' ', 0)
	fmt.Fprintln(wa, "resource\tproperty\ttemplate\tmoto holds")
	fmt.Fprintln(wd, "resource\tproperty\ttemplate\tmoto holds")
	na, nd := 0, 0
	for _, x := range r.rows {
		w := wa
		if x.dropped {
			w, nd = wd, nd+1
			if x.template == x.moto {
				t.Errorf("%s %s: moto now applies %s: compare it (readback.applied) and take it off docs/deploy.md's list of what moto drops", x.resource, x.property, x.template)
			}
		} else {
			na++
			if x.template != x.moto {
				t.Errorf("%s %s: moto holds %s, the template says %s", x.resource, x.property, x.moto, x.template)
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", x.resource, x.property, short(x.template), short(x.moto))
	}
	wa.Flush()
	wd.Flush()
	t.Logf("deployed and read back, %d properties equal to the template:\n%s", na, applied.String())
	t.Logf("dropped by moto, %d properties (the synth tests prove them):\n%s", nd, dropped.String())
}

// short abbreviates a long value for the table.
func short(s string) string {
	if len(s) <= 110 {
		return s
	}
	return s[:70] + "…" + s[len(s)-30:] + fmt.Sprintf(" (%d chars)", len(s))
}

// readBack compares what moto holds with the template, resource by
// resource.
func readBack(t *testing.T, c clients, tpl template, d deployed, fn function) {
	ctx := context.Background()
	r := &readback{}
	prop := func(id string, path ...string) any {
		var v any = tpl.Resources[id].Properties
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return d.resolve(t, v)
	}
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Tables.
	for _, id := range tpl.ofType("AWS::DynamoDB::Table") {
		out, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(d.physical[id])})
		must(err, "DescribeTable "+id)
		tb := out.Table
		var keys, attrs []any
		for _, k := range tb.KeySchema {
			keys = append(keys, map[string]any{"AttributeName": aws.ToString(k.AttributeName), "KeyType": string(k.KeyType)})
		}
		for _, a := range tb.AttributeDefinitions {
			attrs = append(attrs, map[string]any{"AttributeName": aws.ToString(a.AttributeName), "AttributeType": string(a.AttributeType)})
		}
		r.applied(id, "KeySchema", prop(id, "KeySchema"), keys)
		r.applied(id, "AttributeDefinitions", prop(id, "AttributeDefinitions"), attrs)
		var billing any
		if tb.BillingModeSummary != nil {
			billing = string(tb.BillingModeSummary.BillingMode)
		}
		r.applied(id, "BillingMode", prop(id, "BillingMode"), billing)
		r.applied(id, "DeletionProtectionEnabled", prop(id, "DeletionProtectionEnabled"), tb.DeletionProtectionEnabled)
		if ttl := prop(id, "TimeToLiveSpecification"); ttl != nil {
			out, err := c.ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(d.physical[id])})
			must(err, "DescribeTimeToLive")
			got := map[string]any{"Enabled": false}
			if ttd := out.TimeToLiveDescription; ttd != nil {
				got["Enabled"] = ttd.TimeToLiveStatus == "ENABLED"
				if ttd.AttributeName != nil {
					got["AttributeName"] = *ttd.AttributeName
				}
			}
			r.dropped(id, "TimeToLiveSpecification", ttl, got)
		}
		pitr, err := c.ddb.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(d.physical[id])})
		must(err, "DescribeContinuousBackups")
		enabled := false
		if cb := pitr.ContinuousBackupsDescription; cb != nil && cb.PointInTimeRecoveryDescription != nil {
			enabled = cb.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus == "ENABLED"
		}
		r.dropped(id, "PointInTimeRecoverySpecification", prop(id, "PointInTimeRecoverySpecification"), map[string]any{"PointInTimeRecoveryEnabled": enabled})
		r.dropped(id, "SSESpecification", prop(id, "SSESpecification"), map[string]any{"SSEEnabled": tb.SSEDescription != nil && tb.SSEDescription.Status == "ENABLED"})
	}

	// Queues.
	policies := map[string]bool{} // queues with a queue policy
	for _, id := range tpl.ofType("AWS::SQS::QueuePolicy") {
		for _, q := range tpl.Resources[id].Properties["Queues"].([]any) {
			policies[fmt.Sprint(d.resolve(t, q))] = true
		}
	}
	for _, id := range tpl.ofType("AWS::SQS::Queue") {
		out, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(d.physical[id]), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
		})
		must(err, "GetQueueAttributes "+id)
		a := out.Attributes
		num := func(k string) any {
			n, err := strconv.Atoi(a[k])
			if err != nil {
				return a[k]
			}
			return n
		}
		for _, p := range []string{"MessageRetentionPeriod", "VisibilityTimeout"} {
			if v := prop(id, p); v != nil {
				r.applied(id, p, v, num(p))
			}
		}
		if v := prop(id, "RedrivePolicy"); v != nil {
			var got map[string]any
			_ = json.Unmarshal([]byte(a["RedrivePolicy"]), &got)
			r.applied(id, "RedrivePolicy", v, got)
		}
		if v := prop(id, "RedriveAllowPolicy"); v != nil {
			var got any
			_ = json.Unmarshal([]byte(a["RedriveAllowPolicy"]), &got)
			r.dropped(id, "RedriveAllowPolicy", v, got)
		}
		sse, _ := strconv.ParseBool(a["SqsManagedSseEnabled"])
		r.applied(id, "SqsManagedSseEnabled", prop(id, "SqsManagedSseEnabled"), sse)
		if policies[d.physical[id]] {
			var got any
			if p := a["Policy"]; p != "" {
				got = "a policy"
			}
			r.dropped(id, "queue policy (AWS::SQS::QueuePolicy: deny without TLS)", "a policy", got)
		}
	}

	// The function and its event source mapping.
	fnID := tpl.only(t, "AWS::Lambda::Function")
	fo, err := c.lambda.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(d.physical[fnID])})
	must(err, "GetFunction")
	cfg := fo.Configuration
	r.applied(fnID, "Runtime", prop(fnID, "Runtime"), string(cfg.Runtime))
	r.applied(fnID, "Handler", prop(fnID, "Handler"), cfg.Handler)
	r.applied(fnID, "Timeout", prop(fnID, "Timeout"), cfg.Timeout)
	r.applied(fnID, "MemorySize", prop(fnID, "MemorySize"), cfg.MemorySize)
	r.applied(fnID, "Role", prop(fnID, "Role"), cfg.Role)
	var env map[string]string
	if cfg.Environment != nil {
		env = cfg.Environment.Variables
	}
	r.applied(fnID, "Environment", prop(fnID, "Environment", "Variables"), env)
	r.applied(fnID, "Code (CodeSha256 of the zip)", fn.sha256, cfg.CodeSha256)
	var arch []any
	for _, a := range cfg.Architectures {
		arch = append(arch, string(a))
	}
	r.dropped(fnID, "Architectures", prop(fnID, "Architectures"), arch)
	var logging any
	if cfg.LoggingConfig != nil {
		logging = map[string]any{"LogFormat": string(cfg.LoggingConfig.LogFormat), "LogGroup": aws.ToString(cfg.LoggingConfig.LogGroup)}
	}
	r.dropped(fnID, "LoggingConfig", prop(fnID, "LoggingConfig"), logging)

	esmID := tpl.only(t, "AWS::Lambda::EventSourceMapping")
	m := mappingOf(t, c, d.physical[fnID])
	r.applied(esmID, "EventSourceArn", prop(esmID, "EventSourceArn"), m.EventSourceArn)
	fnArn := aws.ToString(m.FunctionArn)
	r.applied(esmID, "FunctionName", prop(esmID, "FunctionName"), fnArn[strings.LastIndexByte(fnArn, ':')+1:])
	r.applied(esmID, "BatchSize", prop(esmID, "BatchSize"), m.BatchSize)
	r.applied(esmID, "MaximumBatchingWindowInSeconds", prop(esmID, "MaximumBatchingWindowInSeconds"), m.MaximumBatchingWindowInSeconds)
	var types []any
	for _, ft := range m.FunctionResponseTypes {
		types = append(types, string(ft))
	}
	r.applied(esmID, "FunctionResponseTypes", prop(esmID, "FunctionResponseTypes"), types)
	var maxConc any
	if m.ScalingConfig != nil {
		maxConc = m.ScalingConfig.MaximumConcurrency
	}
	r.applied(esmID, "ScalingConfig.MaximumConcurrency", prop(esmID, "ScalingConfig", "MaximumConcurrency"), maxConc)

	// The role and its one inline policy.
	roleID := tpl.only(t, "AWS::IAM::Role")
	role, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(d.physical[roleID])})
	must(err, "GetRole")
	r.applied(roleID, "AssumeRolePolicyDocument", prop(roleID, "AssumeRolePolicyDocument"), policyDoc(t, aws.ToString(role.Role.AssumeRolePolicyDocument)))
	attached, err := c.iam.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String(d.physical[roleID])})
	must(err, "ListAttachedRolePolicies")
	var managed []any
	for _, p := range attached.AttachedPolicies {
		managed = append(managed, aws.ToString(p.PolicyArn))
	}
	wantManaged := prop(roleID, "ManagedPolicyArns")
	if wantManaged == nil {
		wantManaged = []any{} // none
	}
	if managed == nil {
		managed = []any{}
	}
	r.applied(roleID, "ManagedPolicyArns", wantManaged, managed)
	polID := tpl.only(t, "AWS::IAM::Policy")
	name, _ := prop(polID, "PolicyName").(string)
	inline, err := c.iam.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(d.physical[roleID]), PolicyName: aws.String(name)})
	must(err, "GetRolePolicy "+name)
	r.applied(polID, "PolicyDocument statements", statements(prop(polID, "PolicyDocument")), statements(policyDoc(t, aws.ToString(inline.PolicyDocument))))

	// The log group.
	logID := tpl.only(t, "AWS::Logs::LogGroup")
	lg, err := c.logs.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(d.physical[logID])})
	must(err, "DescribeLogGroups")
	var retention any
	for _, g := range lg.LogGroups {
		if aws.ToString(g.LogGroupName) == d.physical[logID] {
			retention = g.RetentionInDays
		}
	}
	r.applied(logID, "RetentionInDays", prop(logID, "RetentionInDays"), retention)

	// The documents bucket.
	bucketID := tpl.only(t, "AWS::S3::Bucket")
	bucket := aws.String(d.physical[bucketID])
	enc, err := c.s3.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: bucket})
	must(err, "GetBucketEncryption")
	var rules []any
	if enc.ServerSideEncryptionConfiguration != nil {
		for _, rl := range enc.ServerSideEncryptionConfiguration.Rules {
			if rl.ApplyServerSideEncryptionByDefault != nil {
				rules = append(rules, map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": string(rl.ApplyServerSideEncryptionByDefault.SSEAlgorithm)}})
			}
		}
	}
	r.applied(bucketID, "BucketEncryption", prop(bucketID, "BucketEncryption", "ServerSideEncryptionConfiguration"), rules)
	ver, err := c.s3.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: bucket})
	must(err, "GetBucketVersioning")
	var status any
	if ver.Status != "" {
		status = string(ver.Status)
	}
	r.dropped(bucketID, "VersioningConfiguration", prop(bucketID, "VersioningConfiguration"), map[string]any{"Status": status})
	var pab any
	if out, err := c.s3.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: bucket}); err == nil && out.PublicAccessBlockConfiguration != nil {
		p := out.PublicAccessBlockConfiguration
		pab = map[string]any{"BlockPublicAcls": p.BlockPublicAcls, "BlockPublicPolicy": p.BlockPublicPolicy, "IgnorePublicAcls": p.IgnorePublicAcls, "RestrictPublicBuckets": p.RestrictPublicBuckets}
	}
	r.dropped(bucketID, "PublicAccessBlockConfiguration", prop(bucketID, "PublicAccessBlockConfiguration"), pab)
	if len(tpl.ofType("AWS::S3::BucketPolicy")) > 0 {
		var pol any
		if out, err := c.s3.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: bucket}); err == nil && aws.ToString(out.Policy) != "" {
			pol = "a policy"
		}
		r.dropped(bucketID, "bucket policy (AWS::S3::BucketPolicy: deny without TLS)", "a policy", pol)
	}

	// Alarms.
	alarms, err := describeAlarms(ctx, c.endpoint)
	must(err, "DescribeAlarms")
	r.dropped("alarms", "AWS::CloudWatch::Alarm", fmt.Sprintf("%d alarms", len(tpl.ofType("AWS::CloudWatch::Alarm"))), fmt.Sprintf("%d alarms", alarms))

	// Outputs.
	for _, k := range sortedKeys(tpl.Outputs) {
		r.applied("outputs", k, d.resolve(t, tpl.Outputs[k].Value), d.outputs[k])
	}
	r.check(t)
}

// mappingOf returns the function's one event source mapping.
func mappingOf(t *testing.T, c clients, function string) lambdatypes.EventSourceMappingConfiguration {
	t.Helper()
	out, err := c.lambda.ListEventSourceMappings(context.Background(), &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(function)})
	if err != nil {
		t.Fatalf("ListEventSourceMappings: %v", err)
	}
	if len(out.EventSourceMappings) != 1 {
		t.Fatalf("%d event source mappings, want 1", len(out.EventSourceMappings))
	}
	return out.EventSourceMappings[0]
}

// policyDoc parses an IAM policy document as IAM returns it (URL-encoded
// JSON).
func policyDoc(t *testing.T, s string) any {
	t.Helper()
	if u, err := url.QueryUnescape(s); err == nil {
		s = u
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("policy document %q: %v", s, err)
	}
	return v
}

// statements returns a policy document's statements in a canonical form:
// Action and Resource as sorted lists, the statements sorted. A log
// group's ARN loses its trailing ":*": moto's Fn::GetAtt gives the ARN
// without it, AWS with it.
func statements(doc any) []any {
	m, _ := doc.(map[string]any)
	list, ok := m["Statement"].([]any)
	if !ok {
		list = []any{m["Statement"]}
	}
	var out []string
	for _, s := range list {
		st, _ := s.(map[string]any)
		c := map[string]any{}
		for k, v := range st {
			switch k {
			case "Action", "Resource":
				var vs []string
				switch v := v.(type) {
				case string:
					vs = []string{v}
				case []any:
					for _, x := range v {
						vs = append(vs, fmt.Sprint(x))
					}
				}
				for i, x := range vs {
					if strings.HasPrefix(x, "arn:aws:logs:") {
						vs[i] = strings.TrimSuffix(x, ":*")
					}
				}
				slices.Sort(vs)
				c[k] = vs
			default:
				c[k] = v
			}
		}
		out = append(out, js(c))
	}
	slices.Sort(out)
	var res []any
	for _, s := range out {
		var v any
		_ = json.Unmarshal([]byte(s), &v)
		res = append(res, v)
	}
	return res
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// describeAlarms returns how many metric alarms CloudWatch on moto holds.
// It asks in CloudWatch's JSON protocol: the SDK speaks CBOR
// (smithy-rpcv2-cbor), which moto 5.2 does not.
func describeAlarms(ctx context.Context, endpoint string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", strings.NewReader("{}"))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "GraniteServiceVersion20100801.DescribeAlarms")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/monitoring/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		MetricAlarms []json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("DescribeAlarms: status %s: %v", resp.Status, err)
	}
	return len(out.MetricAlarms), nil
}
