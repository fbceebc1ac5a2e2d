package idempotentconsumer

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// RecordActions returns the DynamoDB actions the function gets on the
// idempotency table: GetItem, PutItem (the claim) and UpdateItem (the
// completion, also inside a TransactWriteItems, and the release). The store
// never deletes an item, scans or queries.
func RecordActions() []string {
	return []string{
		"dynamodb:GetItem",
		"dynamodb:PutItem",
		"dynamodb:UpdateItem",
	}
}

// ItemActions returns the DynamoDB actions [Consumer.GrantItems] gives on
// another table, for writes attached to a completion: single-item reads and
// writes, and ConditionCheckItem, which with them is all TransactWriteItems
// needs. Never Scan, Query or the batch operations.
func ItemActions() []string {
	return []string{
		"dynamodb:GetItem",
		"dynamodb:PutItem",
		"dynamodb:UpdateItem",
		"dynamodb:DeleteItem",
		"dynamodb:ConditionCheckItem",
	}
}

// VisibilityAction is the one action the function gets on its queue for
// itself, beyond the event source's: the runtime paces redelivery by
// changing the visibility of the messages it hands back
// (ChangeMessageVisibilityBatch is authorised by this action).
const VisibilityAction = "sqs:ChangeMessageVisibility"

// EventSourceActions returns the actions Lambda's poller needs on the
// queue, through the function's role: receive, delete and read the
// queue's attributes. The CDK's consume grant adds sqs:GetQueueUrl, which
// nothing calls, and sqs:ChangeMessageVisibility, which the function's own
// statement holds ([VisibilityAction]); the construct grants neither.
func EventSourceActions() []string {
	return []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}
}

// KeyActions returns the KMS actions the function gets on a
// customer-managed key ([Props.EncryptionKey], or the key of a table it
// reads and writes), and nothing else: kms:Decrypt to receive from an
// encrypted queue and to read its own environment, and kms:Decrypt with
// kms:GenerateDataKey to send to an encrypted dead-letter queue and to read
// and write an encrypted table. Never Encrypt, ReEncrypt, CreateGrant or
// key administration; CloudWatch Logs encrypts the log group itself, under
// the key policy's statement for its service principal.
func KeyActions() []string {
	return []string{"kms:Decrypt", "kms:GenerateDataKey"}
}

// DeadLetterAction is the one action the function gets on its dead-letter
// queue: the runtime sends a message whose record failed permanently
// there at once (package sqsdlq), and then deletes it from the queue with
// the event source's sqs:DeleteMessage.
const DeadLetterAction = "sqs:SendMessage"

// TableOperations are the DynamoDB operations the function makes on the
// idempotency table, as CloudWatch names them in the Operation dimension:
// the table alarms sum ThrottledRequests and SystemErrors over them.
func TableOperations() []string {
	return []string{"GetItem", "PutItem", "UpdateItem", "TransactWriteItems"}
}

// Alarm shapes. Every alarm fires above its threshold and treats missing
// data (an idle queue, function or table) as not breaching. They page on
// what needs a person, not on what SQS retries by itself: a duplicate in
// progress elsewhere is a partial batch response, not an invocation error
// (batch.IsRetry), and waiting for a live holder is normal.
const (
	alarmPeriod = 5 * time.Minute
	// ErrorRatePercent is the share of the function's invocations, in
	// percent, that must fail in each of [ErrorPeriods] periods in a row
	// for ErrorsAlarm to fire: a lone poison message or a brief outage
	// downstream is retried (and a poison message reaches the dead-letter
	// queue and its alarm); errors sustained for 10 minutes need a person.
	ErrorRatePercent = 10
	// ErrorPeriods: see [ErrorRatePercent].
	ErrorPeriods = 2
	// failedPeriods is how many periods in a row Failed must move before
	// its alarm fires: a failure that a retry cures needs no one.
	failedPeriods = 2
	// inProgressPeriods is how many periods in a row InProgressRetried
	// must move before its alarm fires: 15 minutes, as long as a Lambda
	// invocation can last. A duplicate that waits for a live holder is
	// normal; keys refused for 15 minutes in a row are stuck or contended,
	// or their operations run longer than an invocation (a lease kept alive
	// on Lambda Managed Instances can), which is worth knowing too.
	inProgressPeriods = 3
)

// Consumer is an SQS queue with a dead-letter queue, consumed by a Lambda
// function with partial batch responses, and the DynamoDB table that keeps
// the function's idempotency records. Build it with [New].
type Consumer struct {
	constructs.Construct

	// Plan is the figures the consumer was built from.
	Plan Plan
	// Table is the idempotency table, [Props.Table] or the new table:
	// partition key driver.AttrID, TTL on driver.AttrExpiration.
	Table awsdynamodb.ITable
	// Queue is the queue the function consumes.
	Queue awssqs.Queue
	// DeadLetterQueue receives the messages that failed MaxReceiveCount
	// times. With [Props.QueueName] its redrive-allow policy names Queue
	// only; without, it has none.
	DeadLetterQueue awssqs.Queue
	// Function is the consumer.
	Function awslambda.Function
	// EncryptionKey is the customer-managed key of the table, the queues,
	// the log group and the function's environment: [Props.EncryptionKey]
	// (its target key, when it is an alias), the key the construct created
	// ([Props.CreateEncryptionKey]), or nil.
	EncryptionKey awskms.IKey
	// SealKey is the key the function seals its results with:
	// [Props.SealKey], EncryptionKey with [Props.SealWithEncryptionKey],
	// or nil.
	SealKey awskms.IKey
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
	// ErrorsAlarm fires when more than [ErrorRatePercent] percent of the
	// function's invocations fail in each of [ErrorPeriods] five-minute
	// periods in a row.
	ErrorsAlarm awscloudwatch.Alarm
	// TableThrottleAlarm fires when DynamoDB throttled any of the
	// function's [TableOperations] on the table (ThrottledRequests).
	TableThrottleAlarm awscloudwatch.Alarm
	// TableErrorsAlarm fires when DynamoDB reported a system error (HTTP
	// 500) for any of the function's [TableOperations] on the table.
	TableErrorsAlarm awscloudwatch.Alarm
	// FailedAlarm fires when the function's Failed metric moves in each
	// of 2 five-minute periods in a row: deliveries failed on a key or
	// store error, a payload mismatch, or a failed operation.
	FailedAlarm awscloudwatch.Alarm
	// InProgressAlarm fires when InProgressRetried moves in each of 3
	// five-minute periods in a row: keys have been refused as in progress
	// for as long as an invocation can last.
	InProgressAlarm awscloudwatch.Alarm
	// TakenOverAlarm fires when TakenOver moves: a run took over a lapsed
	// lease, so a holder died or timed out after its claim, and the
	// operation may have run twice.
	TakenOverAlarm awscloudwatch.Alarm
	// DoubleRunAlarm fires when DoubleRuns moves: a run outlived its lease
	// and found that another worker had taken its key over and run it too,
	// so the operation did run twice for one key.
	DoubleRunAlarm awscloudwatch.Alarm
	// QuarantinedAlarm fires when Quarantined moves: in strict mode, a
	// key's claim lapsed with its operation's outcome unknown and was
	// quarantined, or a delivery found its key quarantined. An operator
	// must release or resolve the record.
	QuarantinedAlarm awscloudwatch.Alarm
}

// Alarms returns every alarm of c, for example to add another action.
func (c *Consumer) Alarms() []awscloudwatch.Alarm {
	return []awscloudwatch.Alarm{
		c.DeadLetterAlarm, c.OldestMessageAlarm, c.ErrorsAlarm,
		c.TableThrottleAlarm, c.TableErrorsAlarm,
		c.FailedAlarm, c.InProgressAlarm, c.TakenOverAlarm, c.DoubleRunAlarm, c.QuarantinedAlarm,
	}
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

	// An alias is its target key here: the log group and the function's
	// environment take a key ARN, and IAM grants name keys. Plan refused an
	// alias whose target the app does not know.
	if props.EncryptionKey != nil {
		c.EncryptionKey = keyOf(props.EncryptionKey).key
	}
	if props.CreateEncryptionKey {
		c.EncryptionKey = awskms.NewKey(this, jsii.String("Key"), &awskms.KeyProps{
			Description:       jsii.String("sqsonce: the consumer's table, queues, log group and function environment"),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		})
	}
	if key := c.EncryptionKey; key != nil {
		// CloudWatch Logs encrypts with the key under its own principal, for
		// log groups of this account and region only. The log group's ARN
		// itself would be a cycle (the log group names the key). A no-op on
		// an imported key, whose policy its owner keeps.
		stack := awscdk.Stack_Of(this)
		key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("CloudWatchLogs"),
			Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("logs."+*stack.Region()+"."+*stack.UrlSuffix()), nil)},
			Actions:    jsii.Strings("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"),
			Resources:  jsii.Strings("*"),
			Conditions: &map[string]any{"ArnLike": map[string]any{
				"kms:EncryptionContext:aws:logs:arn": stack.FormatArn(&awscdk.ArnComponents{
					Service:      jsii.String("logs"),
					Resource:     jsii.String("log-group"),
					ResourceName: jsii.String("*"),
					ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
				}),
			}},
		}), jsii.Bool(true))
	}
	c.SealKey = props.SealKey
	if props.SealWithEncryptionKey {
		c.SealKey = c.EncryptionKey
	}
	tableEncryption := awsdynamodb.TableEncryption_AWS_MANAGED
	queueEncryption := awssqs.QueueEncryption_SQS_MANAGED
	if c.EncryptionKey != nil {
		tableEncryption = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
		queueEncryption = awssqs.QueueEncryption_KMS
	}

	if plan.NewTable {
		partitionKey := driver.AttrID
		var sortKey *awsdynamodb.Attribute
		if plan.SortKey.Attribute != "" {
			partitionKey = plan.SortKey.PartitionKey
			sortKey = &awsdynamodb.Attribute{Name: jsii.String(plan.SortKey.Attribute), Type: awsdynamodb.AttributeType_STRING}
		}
		c.Table = awsdynamodb.NewTable(this, jsii.String("Table"), &awsdynamodb.TableProps{
			PartitionKey: &awsdynamodb.Attribute{
				Name: jsii.String(partitionKey),
				Type: awsdynamodb.AttributeType_STRING,
			},
			SortKey:             sortKey,
			BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
			TimeToLiveAttribute: jsii.String(driver.AttrExpiration),
			PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
				PointInTimeRecoveryEnabled: jsii.Bool(true),
			},
			Encryption:         tableEncryption,
			EncryptionKey:      c.EncryptionKey,
			RemovalPolicy:      plan.TableRemovalPolicy,
			DeletionProtection: jsii.Bool(plan.DeletionProtection),
			WarmThroughput:     warmThroughput(plan.WarmThroughput),
		})
	} else {
		c.Table = props.Table
	}

	var fifo *bool
	if plan.FIFO {
		fifo = jsii.Bool(true)
	}
	var contentDedup *bool
	if props.ContentBasedDeduplication {
		contentDedup = jsii.Bool(true)
	}
	// A redrive-allow policy naming the queue needs the queue's ARN, and
	// the queue's redrive policy needs the dead-letter queue's: with a
	// reference each way the template has a cycle. Only a known name
	// spells the queue's ARN without a reference.
	var allow *awssqs.RedriveAllowPolicy
	var queueName *string
	if plan.QueueName != "" {
		queueName = jsii.String(plan.QueueName)
		queueArn := awscdk.Stack_Of(this).FormatArn(&awscdk.ArnComponents{
			Service:  jsii.String("sqs"),
			Resource: queueName,
		})
		allow = &awssqs.RedriveAllowPolicy{
			RedrivePermission: awssqs.RedrivePermission_BY_QUEUE,
			SourceQueues:      &[]awssqs.IQueue{awssqs.Queue_FromQueueArn(this, jsii.String("QueueByName"), queueArn)},
		}
	}
	c.DeadLetterQueue = awssqs.NewQueue(this, jsii.String("DeadLetterQueue"), &awssqs.QueueProps{
		Fifo:                fifo,
		RetentionPeriod:     seconds(plan.DeadLetterRetention),
		Encryption:          queueEncryption,
		EncryptionMasterKey: c.EncryptionKey,
		EnforceSSL:          jsii.Bool(true),
		RedriveAllowPolicy:  allow,
	})
	queue := newConsumerQueue(this, "Queue", &awssqs.QueueProps{
		QueueName:                 queueName,
		Fifo:                      fifo,
		ContentBasedDeduplication: contentDedup,
		RetentionPeriod:           seconds(plan.Retention),
		VisibilityTimeout:         seconds(plan.VisibilityTimeout),
		Encryption:                queueEncryption,
		EncryptionMasterKey:       c.EncryptionKey,
		EnforceSSL:                jsii.Bool(true),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           c.DeadLetterQueue,
			MaxReceiveCount: jsii.Number(plan.MaxReceiveCount),
		},
	})
	c.Queue = queue

	c.LogGroup = awslogs.NewLogGroup(this, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention:     plan.LogRetention,
		EncryptionKey: c.EncryptionKey,
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

	// The variables Plan checked as lambdaenv.Load reads them, with the
	// table's name and the seal key's ARN, known at deploy time only.
	env := map[string]*string{}
	for k, v := range environment(props, plan) {
		env[k] = jsii.String(v)
	}
	env[EnvTable] = c.Table.TableName()
	if c.SealKey != nil {
		env[EnvSealKey] = c.SealKey.KeyArn()
	}

	runtime := props.Runtime
	if runtime == nil {
		runtime = awslambda.Runtime_PROVIDED_AL2023()
	}
	arch := props.Architecture
	if arch == nil {
		arch = awslambda.Architecture_ARM_64()
	}
	c.Function = awslambda.NewFunction(this, jsii.String("Function"), &awslambda.FunctionProps{
		Runtime:       runtime,
		Architecture:  arch,
		Handler:       jsii.String(plan.Handler),
		Code:          props.Code,
		MemorySize:    jsii.Number(plan.MemorySize),
		Timeout:       seconds(plan.Timeout),
		Tracing:       plan.Tracing,
		Role:          c.Role,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		LogGroup:      c.LogGroup,
		Environment:   &env,
		// nil: Lambda's own key.
		EnvironmentEncryption: c.EncryptionKey,
	})
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(RecordActions()...),
		Resources: jsii.Strings(*c.Table.TableArn()),
	}))
	var encryption keyRef
	if key := c.EncryptionKey; key != nil {
		encryption = keyOf(key)
		c.Role.AddToPolicy(encryption.statement("EncryptionKey"))
	}
	if key := c.SealKey; key != nil {
		// The sealer asks KMS for data keys and decrypts them: the
		// encryption key's grant holds both already.
		if seal := keyOf(key); seal.id() != encryption.id() {
			c.Role.AddToPolicy(seal.statement("SealResults"))
		}
	}
	c.grantTableKey(c.Table)

	sourceProps := &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(plan.BatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	if plan.MaxBatchingWindow > 0 {
		sourceProps.MaxBatchingWindow = seconds(plan.MaxBatchingWindow)
	}
	if plan.MaxConcurrency > 0 {
		sourceProps.MaxConcurrency = jsii.Number(plan.MaxConcurrency)
	}
	if pp := plan.ProvisionedPollers; pp != (ProvisionedPollers{}) {
		sourceProps.ProvisionedPollerConfig = &awslambda.ProvisionedPollerConfig{
			MinimumPollers: jsii.Number(pp.Minimum),
			MaximumPollers: jsii.Number(pp.Maximum),
		}
	}
	c.EventSource = awslambdaeventsources.NewSqsEventSource(c.Queue, sourceProps)
	// The event source grants its consumer what Lambda's poller calls
	// ([EventSourceActions]), not the CDK's wider set.
	queue.eventSource = true
	c.Function.AddEventSource(c.EventSource)
	queue.eventSource = false
	// The runtime paces redelivery with this action, in a statement of the
	// function's own that says why it is there.
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("PaceRedelivery"),
		Actions:   jsii.Strings(VisibilityAction),
		Resources: jsii.Strings(*c.Queue.QueueArn()),
	}))
	// Permanent failures go to the dead-letter queue after one receive:
	// sending there is all the function may do to it. With SQS-managed
	// keys no KMS action is needed; with EncryptionKey, KeyActions above.
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("DeadLetterPermanentFailures"),
		Actions:   jsii.Strings(DeadLetterAction),
		Resources: jsii.Strings(*c.DeadLetterQueue.QueueArn()),
	}))

	c.addAlarms(plan)
	if props.AlarmTopic != nil {
		action := awscloudwatchactions.NewSnsAction(props.AlarmTopic)
		for _, a := range c.Alarms() {
			a.AddAlarmAction(action)
		}
	}
	return c, nil
}

// addAlarms adds the queue, function, table and outcome alarms.
func (c *Consumer) addAlarms(plan Plan) {
	c.DeadLetterAlarm = alarm(c, "DeadLetterAlarm",
		c.DeadLetterQueue.MetricApproximateNumberOfMessagesVisible(maxOver(1)), 0, 1,
		"Messages in the dead-letter queue: they failed MaxReceiveCount times.")
	c.OldestMessageAlarm = alarm(c, "OldestMessageAlarm",
		c.Queue.MetricApproximateAgeOfOldestMessage(maxOver(5)), plan.OldestMessageAlarm.Seconds(), 1,
		"The oldest queued message is older than expected: the consumer is failing or falling behind.")
	errorRate := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("100 * FILL(errors, 0) / invocations"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"errors":      c.Function.MetricErrors(sumOver()),
			"invocations": c.Function.MetricInvocations(sumOver()),
		},
		Label:  jsii.String("Errors per 100 invocations"),
		Period: awscdk.Duration_Seconds(jsii.Number(alarmPeriod.Seconds())),
	})
	c.ErrorsAlarm = alarm(c, "ErrorsAlarm", errorRate, ErrorRatePercent, ErrorPeriods,
		"More than 10% of the consumer function's invocations failed as a whole for 10 minutes: every record of their batches failed (not only keys in progress elsewhere, which are retried without an error), or the function crashed or timed out.")

	c.TableThrottleAlarm = alarm(c, "TableThrottleAlarm", c.tableSum("ThrottledRequests"), 0, 1,
		"DynamoDB throttled requests of the consumer on its idempotency table: the records failed and will be retried.")
	c.TableErrorsAlarm = alarm(c, "TableErrorsAlarm", c.tableSum("SystemErrors"), 0, 1,
		"DynamoDB returned system errors (HTTP 500) to the consumer on its idempotency table: the records failed and will be retried.")

	outcome := func(name string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:     jsii.String(plan.MetricsNamespace),
			MetricName:    jsii.String(name),
			DimensionsMap: &map[string]*string{metrics.Dimension: jsii.String(plan.MetricsService)},
			Period:        awscdk.Duration_Seconds(jsii.Number(alarmPeriod.Seconds())),
			Statistic:     jsii.String("Sum"),
		})
	}
	c.FailedAlarm = alarm(c, "FailedAlarm", outcome(metrics.Failed), 0, failedPeriods,
		"Deliveries failed for 10 minutes in a row: a key or store error, a key reused with another payload, or a failed operation. They are retried, then go to the dead-letter queue.")
	c.InProgressAlarm = alarm(c, "InProgressAlarm", outcome(metrics.InProgressRetried), 0, inProgressPeriods,
		"Deliveries refused as in progress for 15 minutes in a row, as long as a Lambda invocation can last: a claim is stuck, keys are contended, or operations outlast an invocation (a lease kept alive on Managed Instances can).")
	c.TakenOverAlarm = alarm(c, "TakenOverAlarm", outcome(metrics.TakenOver), 0, 1,
		"A run took over a lapsed lease: a holder died or timed out after its claim, and its operation may have run twice.")
	c.DoubleRunAlarm = alarm(c, "DoubleRunAlarm", outcome(metrics.DoubleRuns), 0, 1,
		"An operation ran twice for one key: a run outlived its lease (an invocation past its deadline, or clocks apart by more than the skew margin) while another worker took the key over and ran it too. The other run's result stands.")
	c.QuarantinedAlarm = alarm(c, "QuarantinedAlarm", outcome(metrics.Quarantined), 0, 1,
		"Strict mode stopped a key: a worker died or outlived its lease with the operation's outcome unknown, and the operation was not run again; the key's messages go to the dead-letter queue. Release the record to run it, or resolve it with a result.")
}

// tableSum is the sum of a per-operation DynamoDB metric of the table over
// [TableOperations]. A missing data point counts as zero, so that one
// operation's data is not dropped for another's absence.
func (c *Consumer) tableSum(metricName string) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	var terms []string
	for i, op := range TableOperations() {
		id := "m" + strconv.Itoa(i)
		using[id] = c.Table.Metric(jsii.String(metricName), &awscloudwatch.MetricOptions{
			DimensionsMap: &map[string]*string{"TableName": c.Table.TableName(), "Operation": jsii.String(op)},
			Period:        awscdk.Duration_Seconds(jsii.Number(alarmPeriod.Seconds())),
			Statistic:     jsii.String("Sum"),
		})
		terms = append(terms, "FILL("+id+", 0)")
	}
	expr := strings.Join(terms, " + ")
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(expr),
		UsingMetrics: &using,
		Label:        jsii.String(metricName + " of " + expr),
		Period:       awscdk.Duration_Seconds(jsii.Number(alarmPeriod.Seconds())),
	})
}

// GrantItems lets the function read and write single items of table, with
// exactly [ItemActions] on the table's ARN: what writes attached to a
// completion ([idempotency.Attach]) need, and nothing more.
//
// A table encrypted with a customer-managed key other than
// [Consumer.EncryptionKey] also gets [KeyActions] on that key.
func (c *Consumer) GrantItems(table awsdynamodb.ITable) {
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(ItemActions()...),
		Resources: jsii.Strings(*table.TableArn()),
	}))
	c.grantTableKey(table)
}

// grantTableKey grants [KeyActions] on table's customer-managed key, when
// it has one and it is not c.EncryptionKey (granted already).
func (c *Consumer) grantTableKey(table awsdynamodb.ITable) {
	key := table.EncryptionKey()
	if key == nil {
		return
	}
	ref := keyOf(key)
	if c.EncryptionKey != nil && ref.id() == keyOf(c.EncryptionKey).id() {
		return
	}
	c.Role.AddToPolicy(ref.statement(""))
}

// keyRef is a KMS key as an IAM statement can name it. IAM names a key in
// a statement's Resource by its key ARN only: an alias name or alias ARN
// there matches no key, and the principal gets AccessDenied. So an alias
// ([awskms.IAlias]) is its target key when the app knows it (an
// awskms.Alias, or Alias_FromAliasAttributes), and otherwise (an alias
// imported by name, or a key "ARN" that names an alias) the keys of the
// alias's account and Region that carry it, by the kms:ResourceAliases
// condition: what the CDK's own grant on an imported alias gives (feature
// flag @aws-cdk/aws-kms:applyImportedAliasPermissionsToPrincipal), without
// depending on the flag. An alias is of one account and Region and names
// one key at a time, so that is the one key too, whatever id a request
// names it by.
type keyRef struct {
	// key is the key; nil for an alias whose target the app does not know.
	key awskms.IKey
	// alias is then the alias's name ("alias/..."), and keys the ARN
	// pattern of its account's and Region's keys.
	alias, keys string
}

// aliasARN is the ARN of a KMS alias, as a key ARN may (wrongly) be spelt.
var aliasARN = regexp.MustCompile(`^arn:([^:]+):kms:([^:]*):([^:]*):(alias/.+)$`)

// keyOf resolves key as [keyRef] says.
func keyOf(key awskms.IKey) keyRef {
	// The target of an alias imported with its attributes may itself be an
	// alias; an alias of an alias cannot be made, so the chain is short.
	for range 4 {
		alias, ok := key.(awskms.IAlias)
		if !ok {
			break
		}
		target := aliasTarget(alias)
		if target == nil {
			return keyRef{
				alias: *alias.AliasName(),
				keys: *awscdk.Stack_Of(alias).FormatArn(&awscdk.ArnComponents{
					Service: jsii.String("kms"), Resource: jsii.String("key"), ResourceName: jsii.String("*"),
				}),
			}
		}
		key = target
	}
	if arn := *key.KeyArn(); !*awscdk.Token_IsUnresolved(jsii.String(arn)) {
		if m := aliasARN.FindStringSubmatch(arn); m != nil {
			return keyRef{alias: m[4], keys: "arn:" + m[1] + ":kms:" + m[2] + ":" + m[3] + ":key/*"}
		}
	}
	return keyRef{key: key}
}

// aliasTarget is alias's target key, or nil when the app does not know it:
// an alias imported by name throws on AliasTargetKey.
func aliasTarget(alias awskms.IAlias) (target awskms.IKey) {
	defer func() {
		if recover() != nil {
			target = nil
		}
	}()
	return alias.AliasTargetKey()
}

// id tells keys apart: the key's ARN, or the alias's name.
func (r keyRef) id() string {
	switch {
	case r.key != nil:
		return *r.key.KeyArn()
	case r.alias != "":
		return r.alias
	}
	return ""
}

// statement grants [KeyActions] on r, under sid when it is not empty.
func (r keyRef) statement(sid string) awsiam.PolicyStatement {
	p := &awsiam.PolicyStatementProps{Actions: jsii.Strings(KeyActions()...)}
	if sid != "" {
		p.Sid = jsii.String(sid)
	}
	if r.key != nil {
		p.Resources = jsii.Strings(*r.key.KeyArn())
	} else {
		p.Resources = jsii.Strings(r.keys)
		p.Conditions = &map[string]any{"ForAnyValue:StringEquals": map[string]any{"kms:ResourceAliases": r.alias}}
	}
	return awsiam.NewPolicyStatement(p)
}

// consumerQueue is the consumer's queue. While the event source binds
// (eventSource set), its consume grant is [EventSourceActions] only (the
// construct grants the key's actions itself); any other
// GrantConsumeMessages is the CDK's own.
type consumerQueue struct {
	awssqs.Queue
	eventSource bool
}

func newConsumerQueue(scope constructs.Construct, id string, props *awssqs.QueueProps) *consumerQueue {
	q := &consumerQueue{}
	awssqs.NewQueue_Override(q, scope, jsii.String(id), props)
	return q
}

// GrantConsumeMessages: see [consumerQueue].
func (q *consumerQueue) GrantConsumeMessages(grantee awsiam.IGrantable) awsiam.Grant {
	if !q.eventSource {
		return q.Queue.GrantConsumeMessages(grantee)
	}
	return q.Grant(grantee, *jsii.Strings(EventSourceActions()...)...)
}

// warmThroughput is w as the table's prop: nil for none, and a zero
// figure left out (the table's own).
func warmThroughput(w WarmThroughput) *awsdynamodb.WarmThroughput {
	if w == (WarmThroughput{}) {
		return nil
	}
	units := func(n int) *float64 {
		if n == 0 {
			return nil
		}
		return jsii.Number(n)
	}
	return &awsdynamodb.WarmThroughput{
		ReadUnitsPerSecond:  units(w.ReadUnitsPerSecond),
		WriteUnitsPerSecond: units(w.WriteUnitsPerSecond),
	}
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

// sumOver is the Sum statistic over the alarm period.
func sumOver() *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{
		Period:    awscdk.Duration_Seconds(jsii.Number(alarmPeriod.Seconds())),
		Statistic: jsii.String("Sum"),
	}
}

// alarm raises when metric exceeds threshold for periods periods in a row;
// missing data (an idle queue, function or table) is not breaching.
func alarm(c *Consumer, id string, metric awscloudwatch.IMetric, threshold float64, periods int, description string) awscloudwatch.Alarm {
	return awscloudwatch.NewAlarm(c.Construct, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             metric,
		AlarmDescription:   jsii.String(description),
		Threshold:          jsii.Number(threshold),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(periods),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}
