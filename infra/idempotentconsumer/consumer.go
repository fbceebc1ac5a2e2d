package idempotentconsumer

import (
	"errors"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// ItemActions returns the DynamoDB actions the function gets on a table:
// single-item reads and writes, and ConditionCheckItem, which with them is
// all TransactWriteItems needs. Never Scan, Query or the batch operations.
func ItemActions() []string {
	return []string{
		"dynamodb:GetItem",
		"dynamodb:PutItem",
		"dynamodb:UpdateItem",
		"dynamodb:DeleteItem",
		"dynamodb:ConditionCheckItem",
	}
}

// Consumer is an SQS queue with a dead-letter queue, consumed by a Lambda
// function with partial batch responses, and the DynamoDB table that keeps
// the function's idempotency records. Build it with [New].
type Consumer struct {
	constructs.Construct

	// Plan is the figures the consumer was built from.
	Plan Plan
	// Table is the idempotency table: partition key idempotency.AttrID,
	// TTL on idempotency.AttrExpiration.
	Table awsdynamodb.Table
	// Queue is the queue the function consumes.
	Queue awssqs.Queue
	// DeadLetterQueue receives the messages that failed MaxReceiveCount times.
	DeadLetterQueue awssqs.Queue
	// Function is the consumer.
	Function awslambda.Function
	// Role is the function's role. It starts with no managed policy.
	Role awsiam.Role
	// LogGroup is the function's log group.
	LogGroup awslogs.LogGroup
	// EventSource is the queue's event source mapping.
	EventSource awslambdaeventsources.SqsEventSource
	// DeadLetterAlarm fires when the dead-letter queue holds any message.
	DeadLetterAlarm awscloudwatch.Alarm
	// OldestMessageAlarm fires when the oldest queued message is older
	// than Plan.OldestMessageAlarm.
	OldestMessageAlarm awscloudwatch.Alarm
	// ErrorsAlarm fires when the function reports an invocation error.
	ErrorsAlarm awscloudwatch.Alarm
}

// New adds a [Consumer] under scope. Invalid props return an error before
// anything is added to scope.
func New(scope constructs.Construct, id string, props Props) (*Consumer, error) {
	var errs []error
	if props.Code == nil {
		errs = append(errs, errors.New("idempotentconsumer: Props.Code is required"))
	}
	plan, err := props.Plan()
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, err
	}
	if scope == nil {
		return nil, errors.New("idempotentconsumer: scope is nil")
	}

	this := constructs.NewConstruct(scope, jsii.String(id))
	c := &Consumer{Construct: this, Plan: plan}

	c.Table = awsdynamodb.NewTable(this, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{
			Name: jsii.String(idempotency.AttrID),
			Type: awsdynamodb.AttributeType_STRING,
		},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(idempotency.AttrExpiration),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption:    awsdynamodb.TableEncryption_AWS_MANAGED,
		RemovalPolicy: plan.TableRemovalPolicy,
	})

	c.DeadLetterQueue = awssqs.NewQueue(this, jsii.String("DeadLetterQueue"), &awssqs.QueueProps{
		RetentionPeriod: seconds(plan.DeadLetterRetention),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})
	c.Queue = awssqs.NewQueue(this, jsii.String("Queue"), &awssqs.QueueProps{
		RetentionPeriod:   seconds(plan.Retention),
		VisibilityTimeout: seconds(plan.VisibilityTimeout),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           c.DeadLetterQueue,
			MaxReceiveCount: jsii.Number(plan.MaxReceiveCount),
		},
	})

	c.LogGroup = awslogs.NewLogGroup(this, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention: plan.LogRetention,
	})
	// An explicit role: the default one carries the managed
	// AWSLambdaBasicExecutionRole policy, whose log actions are on "*".
	c.Role = awsiam.NewRole(this, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*c.LogGroup.LogGroupArn()),
	}))

	env := map[string]*string{}
	for k, v := range props.Environment {
		env[k] = jsii.String(v)
	}
	env[EnvTable] = c.Table.TableName()
	env[EnvNamespace] = jsii.String(props.Namespace)
	env[EnvExpiresAfter] = jsii.String(GoSeconds(plan.ExpiresAfter))
	env[EnvQueueWindow] = jsii.String(GoSeconds(plan.QueueWindow))

	c.Function = awslambda.NewFunction(this, jsii.String("Function"), &awslambda.FunctionProps{
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String(plan.Handler),
		Code:          props.Code,
		MemorySize:    jsii.Number(plan.MemorySize),
		Timeout:       seconds(plan.Timeout),
		Role:          c.Role,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		LogGroup:      c.LogGroup,
		Environment:   &env,
	})
	c.GrantItems(c.Table)

	sourceProps := &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(plan.BatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(plan.MaxConcurrency),
	}
	if plan.MaxBatchingWindow > 0 {
		sourceProps.MaxBatchingWindow = seconds(plan.MaxBatchingWindow)
	}
	c.EventSource = awslambdaeventsources.NewSqsEventSource(c.Queue, sourceProps)
	c.Function.AddEventSource(c.EventSource)

	c.DeadLetterAlarm = alarm(this, "DeadLetterAlarm",
		c.DeadLetterQueue.MetricApproximateNumberOfMessagesVisible(maxOver(1)), 0,
		"Messages in the dead-letter queue: they failed MaxReceiveCount times.")
	c.OldestMessageAlarm = alarm(this, "OldestMessageAlarm",
		c.Queue.MetricApproximateAgeOfOldestMessage(maxOver(5)), plan.OldestMessageAlarm.Seconds(),
		"The oldest queued message is older than expected: the consumer is failing or falling behind.")
	c.ErrorsAlarm = alarm(this, "ErrorsAlarm",
		c.Function.MetricErrors(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(5)),
			Statistic: jsii.String("Sum"),
		}), 0,
		"The consumer function failed whole invocations (not single records).")
	if props.AlarmAction != nil {
		for _, a := range []awscloudwatch.Alarm{c.DeadLetterAlarm, c.OldestMessageAlarm, c.ErrorsAlarm} {
			a.AddAlarmAction(props.AlarmAction)
		}
	}
	return c, nil
}

// GrantItems lets the function read and write single items of table, with
// exactly [ItemActions] on the table's ARN: what the idempotency store and
// writes attached to a completion need, and nothing more.
func (c *Consumer) GrantItems(table awsdynamodb.ITable) {
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(ItemActions()...),
		Resources: jsii.Strings(*table.TableArn()),
	}))
}

// seconds converts a duration of whole seconds (checked by Plan).
func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}

// maxOver is the Maximum statistic over periods of minutes.
func maxOver(minutes float64) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{
		Period:    awscdk.Duration_Minutes(jsii.Number(minutes)),
		Statistic: jsii.String("Maximum"),
	}
}

// alarm raises when metric exceeds threshold for one period; missing data
// (an idle queue or function) is not breaching.
func alarm(scope constructs.Construct, id string, metric awscloudwatch.Metric, threshold float64, description string) awscloudwatch.Alarm {
	return metric.CreateAlarm(scope, jsii.String(id), &awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String(description),
		Threshold:          jsii.Number(threshold),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(1),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}
