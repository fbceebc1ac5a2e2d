// Package idempotentconsumer is a CDK construct for an SQS consumer that runs
// each message's work once: a queue with its dead-letter queue, a Lambda
// function with partial batch responses, and the DynamoDB table that keeps
// its idempotency records, with figures that agree with the runtime.
//
//	c, err := idempotentconsumer.New(stack, "Consumer", idempotentconsumer.Props{
//		Code: awslambda.Code_FromAsset(jsii.String("bootstrap.zip"), nil), Namespace: "orders",
//	})
//
// # What it creates
//
//   - A DynamoDB table (a plain AWS::DynamoDB::Table): partition key
//     [driver.AttrID] (string), TTL on [driver.AttrExpiration],
//     on-demand billing, point-in-time recovery, encryption with the AWS
//     managed key, deletion protection, retained when it leaves the stack.
//     With [Props.SortKey], a partition key and a sort key instead, as a
//     table shared with Powertools' sortKeyAttr. Or none: [Props.Table]
//     takes an existing table. [Props.WarmThroughput] pre-warms a new table.
//   - A queue and a dead-letter queue (both standard, or both FIFO with
//     [Props.FIFO]), SQS-managed encryption, a policy that denies requests
//     without TLS, a redrive after [Props.MaxReceiveCount] receives, and a
//     visibility timeout of at least [VisibilityFactor] × the function's
//     timeout. No resource gets a fixed name: CloudFormation generates
//     names unique to the stack, so stacks and nested stacks cannot
//     collide. With [Props.QueueName] the queue has that name and the
//     dead-letter queue's redrive-allow policy lets only the queue use it.
//   - A function (provided.al2023 on arm64 unless [Props.Runtime] and
//     [Props.Architecture] say otherwise) with JSON logs, its own log group
//     and role, and optional X-Ray tracing, fed by an event source mapping
//     with ReportBatchItemFailures on. The function keys on the message
//     body, so a FIFO queue's MessageDeduplicationId plays no part. The
//     event source runs in standard mode, capped at [Props.MaxConcurrency]
//     concurrent invocations, or in provisioned mode with
//     [Props.ProvisionedPollers]; AWS takes one or the other.
//   - Alarms ([Consumer.Alarms]) on the dead-letter queue's depth, the age
//     of the oldest message, the function's errors, DynamoDB throttling and
//     system errors on the table, and the idempotency outcomes the function
//     writes as Embedded Metric Format metrics (Failed, InProgressRetried,
//     TakenOver, DoubleRuns, Quarantined in [Props.MetricsNamespace]), each notifying
//     [Props.AlarmTopic] when set.
//
// # Expiry
//
// A record must outlive every delivery of its message, including a delivery
// after a redrive from the dead-letter queue: a redriven message is a new
// message, and its key may have been completed meanwhile by a producer's
// re-send. [Props.Plan] computes the queue's window with
// [batch.QueueWindow] (retention + MaxReceiveCount × visibility
// timeout) and the dead-letter window ([Plan.DeadLetterWindow]: the time a
// message can wait in the dead-letter queue, plus a window of its own),
// adds [Props.ExpiryMargin], and passes the expiry and the queue's window to
// the function as [EnvExpiresAfter] and [EnvQueueWindow]. The runtime
// refuses an expiry below the queue's window; [New] refuses one below the
// dead-letter window, at synth time, saying why.
//
// # Permissions
//
// The role starts empty: no managed policy. It gets logs:CreateLogStream and
// logs:PutLogEvents on its log group, [EventSourceActions] on its queue,
// [VisibilityAction] on its queue in a statement of its own (the runtime
// paces redelivery with ChangeMessageVisibilityBatch), [DeadLetterAction] on
// the dead-letter queue, and [RecordActions] on the table. With
// [Props.EncryptionKey] (or [Props.CreateEncryptionKey]) it also gets
// [KeyActions] on the key, and a table's own customer-managed key and
// [Props.SealKey] (the key that seals results) get the same. [Consumer.GrantItems] gives [ItemActions] on another table (for
// writes attached to a record's completion); add anything else with
// Consumer.Role.AddToPolicy.
//
// Every KMS grant names a key by its key ARN, which is all an IAM statement
// matches a key by: a key given as an alias is granted on the alias's
// target key, or, for an alias imported by name, on the keys of its
// account and Region that carry the alias (kms:ResourceAliases). An
// encryption key known only by such an alias is refused.
//
// # Errors
//
// [New] checks [Props] before it adds anything to the scope and returns
// every problem at once, as "idempotentconsumer: ..." errors. Among them are
// the settings a deploy would fail on, or that would break the function
// only when it starts: maximum concurrency with provisioned pollers, either
// outside SQS's bounds, a visibility timeout below the function's timeout
// (Lambda refuses the event source mapping; the construct wants
// [VisibilityFactor] × the timeout), a namespace holding a "#" (the
// function's guard refuses it at start-up).
package idempotentconsumer
