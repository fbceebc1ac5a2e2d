//go:build deploylocal

package deploy_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
)

// statefulTypes are the resource types whose replacement loses data.
var statefulTypes = []string{"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket", "AWS::Logs::LogGroup"}

func TestDeployLocal(t *testing.T) {
	began := time.Now()
	var phases []string
	defer func() {
		t.Logf("phases:\n%s\n%-26s %6.1fs", strings.Join(phases, "\n"), "total", time.Since(began).Seconds())
	}()

	// moto starts while the function is built, and the environment is
	// bootstrapped while the app is synthesised: the bootstrap names its
	// environment and no app (--app=), so it needs no synth of its own.
	step := time.Now()
	started := make(chan error, 1)
	go func() {
		_, err := moto.Start()
		started <- err
	}()
	riePath := prerequisites(t)
	fn := buildFunction(t)
	startErr := <-started
	endpoint := moto.Endpoint(t) // fails or skips the test if moto did not start
	if startErr != nil {
		t.Fatal(startErr)
	}
	c := newClients(moto.Config(t))
	x := cdk{endpoint: endpoint}
	phase(t, "tools, moto, build", step, &phases)

	step = time.Now()
	bootstrapped := make(chan error, 1)
	go func() {
		_, err := x.make("bootstrap", "--app=", "aws://"+account+"/"+motoserver.Region)
		bootstrapped <- err
	}()
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	if err := x.synth(v1, fn.zip); err != nil {
		t.Fatal(err)
	}
	if err := <-bootstrapped; err != nil {
		t.Fatal(err)
	}
	phase(t, "synth + cdk bootstrap", step, &phases)
	step = time.Now()
	x.run(t, "deploy", "--app", v1)
	phase(t, "cdk deploy (create)", step, &phases)
	// The update's assembly is synthesised while the deployed stack is read
	// back and fed: maxConcurrency 5 → 4.
	v2err := make(chan error, 1)
	go func() { v2err <- x.synth(v2, fn.zip, "maxConcurrency=4") }()

	ctx := context.Background()
	d, err := readStack(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	tpl := readTemplate(t, v1)

	step = time.Now()
	t.Run("read back", func(t *testing.T) { readBack(t, c, tpl, d, fn) })
	phase(t, "read back", step, &phases)

	step = time.Now()
	t.Run("fed from its own queue", func(t *testing.T) { feedFromQueue(t, c, tpl, d, fn, riePath, endpoint) })
	phase(t, "fed from its own queue", step, &phases)

	step = time.Now()
	if err := <-v2err; err != nil {
		t.Fatal(err)
	}
	phase(t, "(wait for the 2nd synth)", step, &phases)
	before := statefulIDs(t, c, tpl, d)

	step = time.Now()
	var updated deployed
	t.Run("update", func(t *testing.T) {
		x.run(t, "deploy", "--app", v2)
		var err error
		updated, err = readStack(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		fnName := updated.physical[tpl.only(t, "AWS::Lambda::Function")]
		if got := aws.ToInt32(mappingOf(t, c, fnName).ScalingConfig.MaximumConcurrency); got != 4 {
			t.Errorf("MaximumConcurrency %d after the update, want 4", got)
		}
		after := statefulIDs(t, c, tpl, updated)
		for id, was := range before {
			if after[id] != was {
				t.Errorf("%s replaced by the update: %s, was %s", id, after[id], was)
			}
		}
		t.Logf("unchanged by the update: %d stateful resources (tables, queues, bucket, log group: physical ids and ARNs) and their data", len(before))
	})
	phase(t, "cdk deploy (update)", step, &phases)

	// On AWS, CloudFormation answers an update without changes with "No
	// updates are to be performed", and the CLI reports no changes. moto
	// performs the empty update, so the test checks that nothing changed.
	step = time.Now()
	t.Run("no-change redeploy", func(t *testing.T) {
		before := statefulIDs(t, c, tpl, updated)
		fnID := tpl.only(t, "AWS::Lambda::Function")
		was, err := c.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(updated.physical[fnID])})
		if err != nil {
			t.Fatal(err)
		}
		x.run(t, "deploy", "--app", v2)
		again, err := readStack(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		for id, p := range updated.physical {
			if again.physical[id] != p {
				t.Errorf("%s: physical id %s, was %s", id, again.physical[id], p)
			}
		}
		after := statefulIDs(t, c, tpl, again)
		for id, v := range before {
			if after[id] != v {
				t.Errorf("%s: %s, was %s", id, after[id], v)
			}
		}
		now, err := c.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(again.physical[fnID])})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(now.CodeSha256) != aws.ToString(was.CodeSha256) || js(now.Environment) != js(was.Environment) || aws.ToInt32(now.Timeout) != aws.ToInt32(was.Timeout) {
			t.Errorf("the function changed: %s, was %s", js(now), js(was))
		}
		if got := aws.ToInt32(mappingOf(t, c, again.physical[fnID]).ScalingConfig.MaximumConcurrency); got != 4 {
			t.Errorf("MaximumConcurrency %d, want 4 still", got)
		}
		t.Logf("unchanged by the redeploy: every physical id (%d), the stateful resources' ARNs and data, the function's code, environment and timeout, the mapping", len(updated.physical))
	})
	phase(t, "cdk deploy (no change)", step, &phases)

	step = time.Now()
	t.Run("destroy", func(t *testing.T) { destroy(t, x, c, tpl, updated, v2) })
	phase(t, "make destroy", step, &phases)
}

// statefulIDs returns, for every stateful resource, its physical id and
// ARN as the services report them, and the items of each table.
func statefulIDs(t *testing.T, c clients, tpl template, d deployed) map[string]string {
	t.Helper()
	ctx := context.Background()
	ids := map[string]string{}
	for _, typ := range statefulTypes {
		for _, id := range tpl.ofType(typ) {
			phys := d.physical[id]
			ids[id] = phys
			switch typ {
			case "AWS::DynamoDB::Table":
				out, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(phys)})
				if err != nil {
					t.Fatalf("DescribeTable %s: %v", id, err)
				}
				ids[id+" ARN"] = aws.ToString(out.Table.TableArn)
				ids[id+" items"] = itemCount(t, c, phys)
			case "AWS::SQS::Queue":
				out, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
					QueueUrl: aws.String(phys), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn, sqstypes.QueueAttributeNameCreatedTimestamp},
				})
				if err != nil {
					t.Fatalf("GetQueueAttributes %s: %v", id, err)
				}
				ids[id+" ARN"] = out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
				ids[id+" created"] = out.Attributes[string(sqstypes.QueueAttributeNameCreatedTimestamp)]
			}
		}
	}
	return ids
}

func itemCount(t *testing.T, c clients, table string) string {
	t.Helper()
	out, err := c.ddb.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Select: "COUNT"})
	if err != nil {
		t.Fatalf("Scan %s: %v", table, err)
	}
	return strconv.Itoa(int(out.Count))
}

// destroy runs make destroy, then checks that what the stack owns is gone
// and what it retains (tables, documents bucket, log group) is still there,
// with its data.
func destroy(t *testing.T, x cdk, c clients, tpl template, d deployed, assembly string) {
	ctx := context.Background()
	before := statefulIDs(t, c, tpl, d)
	x.run(t, "destroy", "--app", assembly)
	if _, err := readStack(ctx, c); !errors.Is(err, errNoStack) {
		t.Fatalf("DescribeStacks after destroy: %v, want no such stack", err)
	}
	var gone, kept []string
	for id, r := range tpl.Resources {
		phys := d.physical[id]
		if phys == "" {
			continue
		}
		var err error
		switch r.Type {
		case "AWS::DynamoDB::Table":
			_, err = c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(phys)})
			if err == nil && itemCount(t, c, phys) != before[id+" items"] {
				t.Errorf("%s kept without its items", id)
			}
		case "AWS::SQS::Queue":
			_, err = c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(phys)})
		case "AWS::S3::Bucket":
			_, err = c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(phys)})
		case "AWS::Logs::LogGroup":
			var out *cloudwatchlogs.DescribeLogGroupsOutput
			out, err = c.logs.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(phys)})
			if err == nil && len(out.LogGroups) == 0 {
				err = errors.New("no log group")
			}
		case "AWS::Lambda::Function":
			_, err = c.lambda.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(phys)})
		case "AWS::IAM::Role":
			_, err = c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(phys)})
		case "AWS::Lambda::EventSourceMapping":
			_, err = c.lambda.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(phys)})
		default:
			continue
		}
		exists := err == nil
		retained := r.DeletionPolicy == "Retain"
		switch {
		case retained && !exists:
			t.Errorf("%s (%s, DeletionPolicy Retain) is gone: %v", id, r.Type, err)
		case !retained && exists:
			t.Errorf("%s (%s) survived the destroy", id, r.Type)
		case exists:
			kept = append(kept, id+" ("+r.Type+")")
		default:
			gone = append(gone, id+" ("+r.Type+")")
		}
	}
	if len(kept) == 0 || len(gone) == 0 {
		t.Errorf("kept %v, removed %v: want both", kept, gone)
	}
	t.Logf("make destroy removed %d resources: %s\nand kept %d, with their data: %s", len(gone), strings.Join(sortedSlice(gone), ", "), len(kept), strings.Join(sortedSlice(kept), ", "))
}

func sortedSlice(s []string) []string {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return sortedKeys(m)
}
