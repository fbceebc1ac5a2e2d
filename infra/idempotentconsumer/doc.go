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
//     [idempotency.AttrID] (string), TTL on [idempotency.AttrExpiration],
//     on-demand billing, point-in-time recovery, encryption with the AWS
//     managed key, retained when it leaves the stack.
//   - A queue and a dead-letter queue, SQS-managed encryption, a policy that
//     denies requests without TLS, a redrive after [Props.MaxReceiveCount]
//     receives, and a visibility timeout of at least [VisibilityFactor] ×
//     the function's timeout.
//   - A provided.al2023 arm64 function with JSON logs, its own log group and
//     role, fed by an event source mapping with ReportBatchItemFailures on.
//   - Alarms on the dead-letter queue's depth, the age of the oldest
//     message, and the function's errors.
//
// # Expiry
//
// A record must outlive every delivery of its message. [Props.Plan] computes
// the queue's window with [idempotency.QueueWindow] (retention +
// MaxReceiveCount × visibility timeout) from the figures the queue is built
// with, adds [Props.ExpiryMargin], and passes both to the function as
// [EnvQueueWindow] and [EnvExpiresAfter]. The runtime refuses an expiry below
// the window; so does [New], at synth time.
//
// # Permissions
//
// The role starts empty: no managed policy. It gets logs:CreateLogStream and
// logs:PutLogEvents on its log group, the SQS event source's actions on its
// queue, and [ItemActions] on the table. [Consumer.GrantItems] gives the same
// single-item actions on another table (for writes attached to a record's
// completion); add anything else with Consumer.Role.AddToPolicy.
//
// # Errors
//
// [New] checks [Props] before it adds anything to the scope and returns
// every problem at once, as "idempotentconsumer: ..." errors.
package idempotentconsumer
