package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/infra/idempotentconsumer"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// functionLogicalID is the function's fixed logical id in the template, the
// name `sam local invoke` takes.
const functionLogicalID = "SummariseFunction"

// summariesAction is the one action the function gets on the summaries
// table: the sink only puts (handler/dynamosink).
const summariesAction = "dynamodb:PutItem"

// newApp builds the app and its summarise stack from the context in props
// (and, under the CDK CLI, from cdk.json and -c flags).
func newApp(props *awscdk.AppProps) (awscdk.App, error) {
	app := awscdk.NewApp(props)
	cfg, err := readConfig(func(key string) any {
		return app.Node().TryGetContext(jsii.String(key))
	})
	if err != nil {
		return nil, err
	}
	if _, err := newSummariseStack(app, cfg); err != nil {
		return nil, err
	}
	return app, nil
}

// newSummariseStack adds the summarise stack: the idempotent consumer, the
// summaries table, the documents bucket (unless one is named) and the
// permissions and environment the runtime needs. It checks the settings
// before it adds anything.
func newSummariseStack(scope constructs.Construct, cfg config) (awscdk.Stack, error) {
	plan, err := cfg.Consumer.Plan()
	if err != nil {
		return nil, err
	}
	// Every record of a batch at once by default, so that a batch takes
	// about one model call and the timeout is sized for one.
	concurrency := cfg.Concurrency
	if concurrency == 0 {
		concurrency = plan.BatchSize
	}
	if _, err := os.Stat(cfg.BootstrapZip); err != nil {
		return nil, fmt.Errorf("infra: the function's zip %s is missing (run make build at the repository root, or set -c bootstrapZip=...): %w",
			cfg.BootstrapZip, err)
	}
	if cfg.Provider == "bedrock" && cfg.Model == "" {
		return nil, fmt.Errorf("infra: provider bedrock needs a model")
	}
	minRemaining, err := deadlineMargin(cfg.MinRemaining, plan.Timeout)
	if err != nil {
		return nil, err
	}

	stack := awscdk.NewStack(scope, jsii.String(cfg.StackName), &awscdk.StackProps{
		Description: jsii.String("sqsonce summarise: an SQS queue consumed once per key by a Lambda function, with a DynamoDB idempotency table"),
	})

	summaries := awsdynamodb.NewTable(stack, jsii.String("Summaries"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{
			Name: jsii.String(driver.AttrID),
			Type: awsdynamodb.AttributeType_STRING,
		},
		BillingMode: awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption:         awsdynamodb.TableEncryption_AWS_MANAGED,
		RemovalPolicy:      cfg.Consumer.TableRemovalPolicy,
		DeletionProtection: jsii.Bool(!cfg.Consumer.DisableDeletionProtection),
	})

	var documents awss3.IBucket
	if cfg.DocumentsBucket != "" {
		documents = awss3.Bucket_FromBucketName(stack, jsii.String("Documents"), jsii.String(cfg.DocumentsBucket))
	} else {
		documents = awss3.NewBucket(stack, jsii.String("Documents"), &awss3.BucketProps{
			BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
			Encryption:        awss3.BucketEncryption_S3_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			Versioned:         jsii.Bool(true),
			RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		})
	}

	props := cfg.Consumer
	props.Code = awslambda.Code_FromAsset(jsii.String(cfg.BootstrapZip), nil)
	props.Environment = map[string]string{
		envSummariesTable:  *summaries.TableName(),
		envProvider:        cfg.Provider,
		envModel:           cfg.Model,
		envDocumentsBucket: *documents.BucketName(),
		envDocumentsPrefix: cfg.DocumentsPrefix,
		envConcurrency:     strconv.Itoa(concurrency),
	}
	props.MinRemaining = minRemaining // the construct sets SQSONCE_MIN_REMAINING
	if cfg.AlarmTopicArn != "" {
		props.AlarmTopic = awssns.Topic_FromTopicArn(stack, jsii.String("AlarmTopic"), jsii.String(cfg.AlarmTopicArn))
	}
	consumer, err := idempotentconsumer.New(stack, "Consumer", props)
	if err != nil {
		return nil, err
	}
	consumer.Function.Node().DefaultChild().(awslambda.CfnFunction).OverrideLogicalId(jsii.String(functionLogicalID))

	// The summary's Put rides on the record's completion, in one
	// TransactWriteItems (handler/dynamosink): PutItem is all it needs.
	consumer.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(summariesAction),
		Resources: jsii.Strings(*summaries.TableArn()),
	}))
	consumer.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject", "s3:GetObjectVersion"),
		Resources: jsii.Strings(*documents.ArnForObjects(jsii.String(cfg.DocumentsPrefix + "*"))),
	}))
	if cfg.Provider == "bedrock" {
		for _, s := range bedrockStatements(stack, cfg.Model) {
			consumer.Role.AddToPolicy(s)
		}
	}

	outputs := []struct{ id, value, description string }{
		{"QueueUrl", *consumer.Queue.QueueUrl(), "Send summarise requests here"},
		{"DeadLetterQueueUrl", *consumer.DeadLetterQueue.QueueUrl(), "Messages that failed every receive"},
		{"TableName", *consumer.Table.TableName(), "Idempotency records (SQSONCE_TABLE)"},
		{"SummariesTableName", *summaries.TableName(), "Summaries (SQSONCE_SUMMARIES_TABLE)"},
		{"FunctionName", *consumer.Function.FunctionName(), "The consumer function"},
		{"DocumentsBucketName", *documents.BucketName(), "Documents are read from here"},
		{"ExpiresAfter", idempotentconsumer.GoSeconds(consumer.Plan.ExpiresAfter), "Idempotency record expiry (SQSONCE_EXPIRES_AFTER)"},
	}
	for _, o := range outputs {
		awscdk.NewCfnOutput(stack, jsii.String(o.id), &awscdk.CfnOutputProps{
			Value:       jsii.String(o.value),
			Description: jsii.String(o.description),
		})
	}
	return stack, nil
}

// deadlineMargin returns the runtime's SQSONCE_MIN_REMAINING: the time that
// must be left before the invocation's deadline for a record to start, so
// that a model call is not cut off by the timeout half way (billed, then
// billed again on the redelivery). Zero means half the function's timeout.
// A margin not below the timeout is refused: every invocation starts with
// at most the timeout left, so no record would ever start, and every
// message would go to the dead-letter queue.
func deadlineMargin(minRemaining, timeout time.Duration) (time.Duration, error) {
	if minRemaining == 0 {
		return timeout / 2, nil
	}
	if minRemaining >= timeout {
		return 0, fmt.Errorf("infra: minRemaining %v is not below the function timeout %v: no record would ever start "+
			"(an invocation starts with at most the timeout left); lower minRemaining or raise timeout", minRemaining, timeout)
	}
	return minRemaining, nil
}

// goDuration formats d as a Go duration for the runtime: whole seconds as
// idempotentconsumer.GoSeconds does ("90s"), anything finer exactly.
func goDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return idempotentconsumer.GoSeconds(d)
	}
	return d.String()
}

// bedrockStatements allows bedrock:InvokeModel (which Converse also needs)
// on the configured model only. A foundation model id gets its ARN in the
// stack's region. An inference profile id gets the profile's ARN, and the
// foundation model in the regions the profile routes to, only when called
// through that profile.
func bedrockStatements(stack awscdk.Stack, model string) []awsiam.PolicyStatement {
	partition, region, account := *stack.Partition(), *stack.Region(), *stack.Account()
	geo, base, _ := strings.Cut(model, ".")
	switch geo {
	case "us", "us-gov", "eu", "apac", "jp", "au", "ca", "global":
		// The prefixes of cross-region inference profile ids.
	default:
		return []awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("bedrock:InvokeModel"),
			Resources: jsii.Strings("arn:" + partition + ":bedrock:" + region + "::foundation-model/" + model),
		})}
	}
	profile := "arn:" + partition + ":bedrock:" + region + ":" + account + ":inference-profile/" + model
	return []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("bedrock:InvokeModel"),
			Resources: jsii.Strings(profile),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("bedrock:InvokeModel"),
			Resources: jsii.Strings("arn:" + partition + ":bedrock:*::foundation-model/" + base),
			Conditions: &map[string]any{
				"StringEquals": map[string]any{"bedrock:InferenceProfileArn": profile},
			},
		}),
	}
}
