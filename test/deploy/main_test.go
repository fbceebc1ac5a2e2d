//go:build deploylocal

package deploy_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/rie"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// infraDir is the CDK app's module, whose Makefile does the CDK work.
const infraDir = "../../infra"

// stackName is the app's default stack name.
const stackName = "Sqsonce"

// account is moto's account.
const account = "123456789012"

// localContext is the context of the deployed stack: the app's defaults
// but for a stub model and figures that fit the test's time (a 20 s
// timeout, so a 25 s lease; 2 receives before the dead-letter queue).
var localContext = []string{"provider=stub", "timeout=20s", "maxReceiveCount=2"}

// stubDelay is how long each stub model call takes in the scenarios:
// longer than the mapping's 5 s batching window, so that a duplicate sent
// while a call runs is invoked before the call ends.
const stubDelay = 10 * time.Second

// clients are the AWS clients of the moto endpoint.
type clients struct {
	endpoint string
	cfn      *cloudformation.Client
	lambda   *lambda.Client
	sqs      *sqs.Client
	ddb      *dynamodb.Client
	s3       *s3.Client
	iam      *iam.Client
	logs     *cloudwatchlogs.Client
}

func newClients(cfg aws.Config) clients {
	return clients{
		endpoint: aws.ToString(cfg.BaseEndpoint),
		cfn:      cloudformation.NewFromConfig(cfg),
		lambda:   lambda.NewFromConfig(cfg),
		sqs:      sqs.NewFromConfig(cfg),
		ddb:      dynamodb.NewFromConfig(cfg),
		s3:       s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		iam:      iam.NewFromConfig(cfg),
		logs:     cloudwatchlogs.NewFromConfig(cfg),
	}
}

// prerequisites returns the emulator's path after checking that Node and
// the pinned CDK CLI are there (installing the CLI with npm when missing).
// A missing one fails the test under CI=true and skips it otherwise.
func prerequisites(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		testproc.Unavailable(t, "deploy", err, "install Node.js 20 or later (the CDK CLI and jsii run on it)")
	}
	cmd := exec.Command("make", "-s", "-C", infraDir, "cli")
	cmd.Env = makeEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		testproc.Unavailable(t, "deploy", fmt.Errorf("make -C infra cli: %v\n%s", err, out),
			"install npm: make -C infra cli installs the pinned CDK CLI with it")
	}
	path, err := rie.Find()
	if err != nil {
		testproc.Unavailable(t, "deploy", err, rie.Install)
	}
	return path
}

// makeEnv is this process's environment without AWS_ and CDK_ settings: a
// developer's profile or endpoint must not leak into the deploy (infra's
// Makefile sets what the emulator needs).
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "CDK_") || strings.HasPrefix(kv, "ENDPOINT=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// cdk runs infra's Makefile targets against the moto endpoint.
type cdk struct {
	endpoint string
}

// run runs make -C infra target with ENDPOINT and CDK_FLAGS and returns its
// output, failing t if it fails.
func (c cdk) run(t *testing.T, target string, flags ...string) string {
	t.Helper()
	out, err := c.make(target, flags...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// make runs make -C infra target with ENDPOINT and CDK_FLAGS.
func (c cdk) make(target string, flags ...string) (string, error) {
	for _, f := range flags {
		if strings.ContainsAny(f, " '\"") {
			return "", fmt.Errorf("flag %q: CDK_FLAGS is split on spaces", f)
		}
	}
	cmd := exec.Command("make", "-s", "-C", infraDir, target, "ENDPOINT="+c.endpoint, "CDK_FLAGS="+strings.Join(flags, " "))
	cmd.Env = makeEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("make -C infra %s CDK_FLAGS='%s': %v\n%s", target, strings.Join(flags, " "), err, out)
	}
	return string(out), nil
}

// synth synthesises the app with the local context and extra context into
// the cloud assembly dir.
func (c cdk) synth(dir, zipPath string, extra ...string) error {
	flags := []string{"-o", dir, "-c", "bootstrapZip=" + zipPath}
	for _, kv := range append(slices.Clone(localContext), extra...) {
		flags = append(flags, "-c", kv)
	}
	_, err := c.make("synth", flags...)
	return err
}

// function is the build of cmd/summarise the stack deploys and the
// emulator runs.
type function struct {
	bootstrap string // the executable
	zip       string // bootstrap.zip holding it
	sha256    string // the zip's SHA-256, base64, as Lambda reports CodeSha256
}

// buildFunction builds cmd/summarise for this machine as Lambda runs it
// (-tags lambda.norpc, CGO off) and zips it.
func buildFunction(t *testing.T) function {
	t.Helper()
	dir := t.TempDir()
	f := function{bootstrap: filepath.Join(dir, "bootstrap"), zip: filepath.Join(dir, "bootstrap.zip")}
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", f.bootstrap, "../../cmd/summarise")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(f.bootstrap)
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
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.zip, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	f.sha256 = base64.StdEncoding.EncodeToString(sum[:])
	return f
}

// template is a synthesised CloudFormation template.
type template struct {
	Resources map[string]struct {
		Type           string         `json:"Type"`
		Properties     map[string]any `json:"Properties"`
		DeletionPolicy string         `json:"DeletionPolicy"`
	} `json:"Resources"`
	Outputs map[string]struct {
		Value any `json:"Value"`
	} `json:"Outputs"`
}

func readTemplate(t *testing.T, assembly string) template {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(assembly, stackName+".template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl template
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// ofType returns the logical ids of tpl's resources of type typ, sorted.
func (tpl template) ofType(typ string) []string {
	var ids []string
	for id, r := range tpl.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// only returns the logical id of the one resource of type typ.
func (tpl template) only(t *testing.T, typ string) string {
	t.Helper()
	ids := tpl.ofType(typ)
	if len(ids) != 1 {
		t.Fatalf("%s: %v, want one", typ, ids)
	}
	return ids[0]
}

// deployed is the stack as CloudFormation on moto reports it.
type deployed struct {
	id       string            // the stack's ARN
	physical map[string]string // logical id → physical id
	types    map[string]string // logical id → type
	outputs  map[string]string
	account  string
	region   string
}

// errNoStack is returned by readStack when the stack does not exist.
var errNoStack = errors.New("no such stack")

func readStack(ctx context.Context, c clients) (deployed, error) {
	out, err := c.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackName)})
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return deployed{}, errNoStack
		}
		return deployed{}, err
	}
	if len(out.Stacks) != 1 {
		return deployed{}, fmt.Errorf("DescribeStacks: %d stacks", len(out.Stacks))
	}
	s := out.Stacks[0]
	d := deployed{id: aws.ToString(s.StackId), physical: map[string]string{}, types: map[string]string{}, outputs: map[string]string{}}
	if parts := strings.Split(d.id, ":"); len(parts) > 4 {
		d.region, d.account = parts[3], parts[4]
	}
	for _, o := range s.Outputs {
		d.outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	p := cloudformation.NewListStackResourcesPaginator(c.cfn, &cloudformation.ListStackResourcesInput{StackName: aws.String(stackName)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return deployed{}, err
		}
		for _, r := range page.StackResourceSummaries {
			d.physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
			d.types[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.ResourceType)
		}
	}
	return d, nil
}

// queueName is the name in a queue's URL.
func queueName(url string) string { return url[strings.LastIndexByte(url, '/')+1:] }

// arn returns the ARN of a deployed resource, as Fn::GetAtt's Arn gives it
// on AWS.
func (d deployed) arn(t *testing.T, logicalID string) string {
	t.Helper()
	phys := d.physical[logicalID]
	if phys == "" {
		t.Fatalf("no physical id for %s", logicalID)
	}
	switch d.types[logicalID] {
	case "AWS::DynamoDB::Table":
		return "arn:aws:dynamodb:" + d.region + ":" + d.account + ":table/" + phys
	case "AWS::SQS::Queue":
		return "arn:aws:sqs:" + d.region + ":" + d.account + ":" + queueName(phys)
	case "AWS::IAM::Role":
		return "arn:aws:iam::" + d.account + ":role/" + phys
	case "AWS::Logs::LogGroup":
		return "arn:aws:logs:" + d.region + ":" + d.account + ":log-group:" + phys + ":*"
	case "AWS::S3::Bucket":
		return "arn:aws:s3:::" + phys
	case "AWS::Lambda::Function":
		return "arn:aws:lambda:" + d.region + ":" + d.account + ":function:" + phys
	}
	t.Fatalf("no ARN format for %s (%s)", logicalID, d.types[logicalID])
	return ""
}

// resolve replaces the references in a template value with what the stack
// created: Ref, Fn::GetAtt (Arn, QueueName) and Fn::Join.
func (d deployed) resolve(t *testing.T, v any) any {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for k, arg := range v {
				switch k {
				case "Ref":
					name, _ := arg.(string)
					switch name {
					case "AWS::AccountId":
						return d.account
					case "AWS::Region":
						return d.region
					case "AWS::Partition":
						return "aws"
					case "AWS::URLSuffix":
						return "amazonaws.com"
					}
					if p, ok := d.physical[name]; ok {
						return p
					}
					t.Fatalf("Ref %s: not in the stack", name)
				case "Fn::GetAtt":
					args, _ := arg.([]any)
					if len(args) != 2 {
						t.Fatalf("Fn::GetAtt %v", arg)
					}
					id, _ := args[0].(string)
					switch args[1] {
					case "Arn":
						return d.arn(t, id)
					case "QueueName":
						return queueName(d.physical[id])
					}
					t.Fatalf("Fn::GetAtt %v: attribute not resolved here", args)
				case "Fn::Join":
					args, _ := arg.([]any)
					sep, _ := args[0].(string)
					var parts []string
					for _, p := range args[1].([]any) {
						parts = append(parts, fmt.Sprint(d.resolve(t, p)))
					}
					return strings.Join(parts, sep)
				}
			}
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = d.resolve(t, x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = d.resolve(t, x)
		}
		return out
	}
	return v
}

// js is v as canonical JSON (map keys sorted).
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// phase logs how long a step of the test took.
func phase(t *testing.T, name string, start time.Time, phases *[]string) {
	t.Helper()
	*phases = append(*phases, fmt.Sprintf("%-26s %6.1fs", name, time.Since(start).Seconds()))
}
