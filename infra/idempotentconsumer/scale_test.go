package idempotentconsumer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
)

// eventSource is the properties of the one event source mapping of tpl.
func eventSource(t *testing.T, tpl assertions.Template) map[string]any {
	t.Helper()
	_, esm := resourceOf(t, tpl, "AWS::Lambda::EventSourceMapping", "")
	return props(t, esm)
}

// TestConstructMaxConcurrency: standard mode caps the event source at
// MaxConcurrency (5 by default, 2 and 1000 at SQS's bounds), or not at all
// with a negative MaxConcurrency; it never has provisioned pollers.
func TestConstructMaxConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   int
		want  any // the ScalingConfig; nil: none
		limit float64
	}{
		{"ConcurrencyDefault", 0, map[string]any{"MaximumConcurrency": float64(idempotentconsumer.DefaultMaxConcurrency)}, 0},
		{"ConcurrencyLowest", 2, map[string]any{"MaximumConcurrency": float64(2)}, 0},
		{"ConcurrencyHighest", 1000, map[string]any{"MaximumConcurrency": float64(1000)}, 0},
		{"ConcurrencyUncapped", -1, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tpl := build(t, tc.name, idempotentconsumer.Props{MaxConcurrency: tc.max}, nil)
			esm := eventSource(t, tpl)
			if got := esm["ScalingConfig"]; js(got) != js(tc.want) {
				t.Errorf("ScalingConfig %s, want %s", js(got), js(tc.want))
			}
			if got, ok := esm["ProvisionedPollerConfig"]; ok {
				t.Errorf("ProvisionedPollerConfig %s in standard mode", js(got))
			}
		})
	}
}

// TestConstructProvisionedPollers: provisioned mode gives the event source
// its pollers, each bound left zero at Lambda's default, and no
// maximum concurrency (AWS takes one or the other).
func TestConstructProvisionedPollers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pollers  idempotentconsumer.ProvisionedPollers
		min, max float64
	}{
		{"Pollers", idempotentconsumer.ProvisionedPollers{Minimum: 10, Maximum: 100}, 10, 100},
		{"PollersMinimumOnly", idempotentconsumer.ProvisionedPollers{Minimum: 200}, 200, idempotentconsumer.DefaultMaximumPollers},
		{"PollersMaximumOnly", idempotentconsumer.ProvisionedPollers{Maximum: 2000}, idempotentconsumer.DefaultMinimumPollers, 2000},
		{"PollersFewest", idempotentconsumer.ProvisionedPollers{Minimum: 2, Maximum: 2}, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tpl := build(t, tc.name, idempotentconsumer.Props{ProvisionedPollers: tc.pollers}, nil)
			if c.Plan.MaxConcurrency != 0 {
				t.Errorf("Plan.MaxConcurrency %d in provisioned mode, want 0", c.Plan.MaxConcurrency)
			}
			esm := eventSource(t, tpl)
			want := map[string]any{"MinimumPollers": tc.min, "MaximumPollers": tc.max}
			if got := esm["ProvisionedPollerConfig"]; js(got) != js(want) {
				t.Errorf("ProvisionedPollerConfig %s, want %s", js(got), js(want))
			}
			if got, ok := esm["ScalingConfig"]; ok {
				t.Errorf("ScalingConfig %s with provisioned pollers", js(got))
			}
			// The rest of the mapping is as in standard mode.
			if got := js(esm["FunctionResponseTypes"]); got != `["ReportBatchItemFailures"]` {
				t.Errorf("FunctionResponseTypes %s", got)
			}
		})
	}
}

// TestConstructWarmThroughput: a new table gets the warm throughput asked
// for, a figure left zero omitted; without one the table has none.
func TestConstructWarmThroughput(t *testing.T) {
	for _, tc := range []struct {
		name string
		warm idempotentconsumer.WarmThroughput
		want any
	}{
		{"WarmThroughput", idempotentconsumer.WarmThroughput{ReadUnitsPerSecond: 15000, WriteUnitsPerSecond: 10000},
			map[string]any{"ReadUnitsPerSecond": float64(15000), "WriteUnitsPerSecond": float64(10000)}},
		{"WarmWrites", idempotentconsumer.WarmThroughput{WriteUnitsPerSecond: 4000}, map[string]any{"WriteUnitsPerSecond": float64(4000)}},
		{"WarmReads", idempotentconsumer.WarmThroughput{ReadUnitsPerSecond: 12000}, map[string]any{"ReadUnitsPerSecond": float64(12000)}},
		{"WarmNone", idempotentconsumer.WarmThroughput{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tpl := build(t, tc.name, idempotentconsumer.Props{WarmThroughput: tc.warm}, nil)
			_, table := resourceOf(t, tpl, "AWS::DynamoDB::Table", "ConsumerTable")
			p := props(t, table)
			if got := p["WarmThroughput"]; js(got) != js(tc.want) {
				t.Errorf("WarmThroughput %s, want %s", js(got), js(tc.want))
			}
			if got := p["BillingMode"]; got != "PAY_PER_REQUEST" {
				t.Errorf("BillingMode %v: warm throughput must not change the billing mode", got)
			}
		})
	}
}

// TestConstructScaleRefusals: New refuses, before it adds anything to the
// scope, what AWS (or the CDK) would refuse at deploy (or synth) time, each
// with an error naming the props.
func TestConstructScaleRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props idempotentconsumer.Props
		table bool // with an existing table
		wants []string
	}{
		{"pollers and concurrency", idempotentconsumer.Props{MaxConcurrency: 10, ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Minimum: 5}}, false,
			[]string{"MaxConcurrency 10 is set with ProvisionedPollers"}},
		{"minimum pollers", idempotentconsumer.Props{ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Minimum: 1}}, false,
			[]string{"ProvisionedPollers.Minimum 1 is outside SQS's 2–200"}},
		{"maximum pollers", idempotentconsumer.Props{ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Maximum: 2001}}, false,
			[]string{"ProvisionedPollers.Maximum 2001 is outside SQS's 2–2000"}},
		{"minimum above maximum", idempotentconsumer.Props{ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Minimum: 20, Maximum: 10}}, false,
			[]string{"ProvisionedPollers.Minimum 20 is above ProvisionedPollers.Maximum 10"}},
		{"concurrency", idempotentconsumer.Props{MaxConcurrency: 1}, false, []string{"MaxConcurrency 1 is outside 2–1000"}},
		{"warm throughput below a new table's", idempotentconsumer.Props{WarmThroughput: idempotentconsumer.WarmThroughput{WriteUnitsPerSecond: 100}}, false,
			[]string{"WarmThroughput.WriteUnitsPerSecond 100 is below the 4000"}},
		{"warm throughput with an existing table", idempotentconsumer.Props{WarmThroughput: idempotentconsumer.WarmThroughput{WriteUnitsPerSecond: 8000}}, true,
			[]string{"WarmThroughput is set with Props.Table"}},
		{"namespace with a #", idempotentconsumer.Props{Namespace: "orders#eu"}, false,
			[]string{`Props.Namespace "orders#eu" holds a "#"`}},
		{"visibility below the timeout", idempotentconsumer.Props{Timeout: time.Minute, VisibilityTimeout: 30 * time.Second}, false,
			[]string{"VisibilityTimeout 30s is below Timeout 1m0s: Lambda refuses an event source mapping"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			stack := awscdk.NewStack(app, jsii.String("Refused"), nil)
			p := tc.props
			p.Code = awslambda.Code_FromAsset(jsii.String(zipPath), nil)
			if p.Namespace == "" {
				p.Namespace = "orders"
			}
			children := 0
			if tc.table {
				p.Table = awsdynamodb.Table_FromTableName(stack, jsii.String("Shared"), jsii.String("shared"))
				children = 1
			}
			_, err := idempotentconsumer.New(stack, "Consumer", p)
			if err == nil {
				t.Fatal("New accepted the props")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if n := len(*stack.Node().Children()); n != children {
				t.Errorf("the stack has %d children after a refusal, want %d", n, children)
			}
		})
	}
}

// TestScaleRefusalsAgreeWithCDK: each event source the construct refuses,
// the CDK's own SqsEventSource refuses too, so the construct's message
// replaces the CDK's, not a deploy that would have worked; and the bounds
// the construct accepts the CDK synthesises.
func TestScaleRefusalsAgreeWithCDK(t *testing.T) {
	num := func(n int) *float64 { return jsii.Number(n) }
	for _, tc := range []struct {
		name   string
		source awslambdaeventsources.SqsEventSourceProps
		props  idempotentconsumer.Props
		refuse bool
	}{
		{"both", awslambdaeventsources.SqsEventSourceProps{MaxConcurrency: num(5), ProvisionedPollerConfig: &awslambda.ProvisionedPollerConfig{MinimumPollers: num(2)}},
			idempotentconsumer.Props{MaxConcurrency: 5, ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Minimum: 2}}, true},
		{"minimum 1", awslambdaeventsources.SqsEventSourceProps{ProvisionedPollerConfig: &awslambda.ProvisionedPollerConfig{MinimumPollers: num(1)}},
			idempotentconsumer.Props{ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Minimum: 1}}, true},
		{"minimum 201", awslambdaeventsources.SqsEventSourceProps{ProvisionedPollerConfig: &awslambda.ProvisionedPollerConfig{MinimumPollers: num(201), MaximumPollers: num(300)}},
			idempotentconsumer.Props{ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Minimum: 201, Maximum: 300}}, true},
		{"maximum 2001", awslambdaeventsources.SqsEventSourceProps{ProvisionedPollerConfig: &awslambda.ProvisionedPollerConfig{MaximumPollers: num(2001)}},
			idempotentconsumer.Props{ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Maximum: 2001}}, true},
		{"minimum above maximum", awslambdaeventsources.SqsEventSourceProps{ProvisionedPollerConfig: &awslambda.ProvisionedPollerConfig{MinimumPollers: num(20), MaximumPollers: num(10)}},
			idempotentconsumer.Props{ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Minimum: 20, Maximum: 10}}, true},
		{"concurrency 1", awslambdaeventsources.SqsEventSourceProps{MaxConcurrency: num(1)}, idempotentconsumer.Props{MaxConcurrency: 1}, true},
		{"concurrency 1001", awslambdaeventsources.SqsEventSourceProps{MaxConcurrency: num(1001)}, idempotentconsumer.Props{MaxConcurrency: 1001}, true},
		{"pollers at their bounds", awslambdaeventsources.SqsEventSourceProps{ProvisionedPollerConfig: &awslambda.ProvisionedPollerConfig{MinimumPollers: num(200), MaximumPollers: num(2000)}},
			idempotentconsumer.Props{ProvisionedPollers: idempotentconsumer.ProvisionedPollers{Minimum: 200, Maximum: 2000}}, false},
		{"concurrency at its bounds", awslambdaeventsources.SqsEventSourceProps{MaxConcurrency: num(1000)}, idempotentconsumer.Props{MaxConcurrency: 1000}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.props
			p.Namespace = "orders"
			_, planErr := p.Plan()
			cdkErr := cdkEventSource(tc.source)
			if (planErr != nil) != tc.refuse || (cdkErr != nil) != tc.refuse {
				t.Errorf("Plan: %v\nCDK: %v\nwant both to refuse: %v", planErr, cdkErr, tc.refuse)
			}
		})
	}
}

// cdkEventSource adds an SQS event source with props to a function of a
// stack of its own and synthesises it, returning the CDK's refusal.
func cdkEventSource(source awslambdaeventsources.SqsEventSourceProps) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("CDK"), nil)
	queue := awssqs.NewQueue(stack, jsii.String("Queue"), nil)
	fn := awslambda.NewFunction(stack, jsii.String("Function"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PROVIDED_AL2023(),
		Handler: jsii.String("bootstrap"),
		Code:    awslambda.Code_FromAsset(jsii.String(zipPath), nil),
	})
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queue, &source))
	assertions.Template_FromStack(stack, nil)
	return nil
}
