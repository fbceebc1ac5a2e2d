// Package esm does, for tests and for the command cmd/sqsonce-esm, what
// Lambda's event source mapping does with an SQS queue: it receives
// batches from the queue, hands each to the function as the SQS event
// Lambda delivers, and deletes the records the function's partial batch
// response acknowledges.
//
//	p := &esm.Poller{Mapping: m, SQS: sqsClient, Invokers: fns} // one Invoker per concurrent invocation
//	err := p.Run(ctx)                                           // until ctx ends
//
// # What it does as Lambda does
//
//   - Up to [Mapping.MaxConcurrency] invocations at once, each on an
//     [Invoker] of its own (an execution environment: one invocation at a
//     time).
//   - A batch is gathered until it holds [Mapping.BatchSize] records or
//     [Mapping.MaxBatchingWindow] has passed since its first record; with
//     no window, a batch is whatever one receive returns.
//   - The event ([Event]) carries each message's id, receipt handle, body,
//     MD5s, the system attributes Lambda passes (ApproximateReceiveCount,
//     SentTimestamp, SenderId, ApproximateFirstReceiveTimestamp, and
//     SequenceNumber, MessageGroupId, MessageDeduplicationId, AWSTraceHeader
//     when SQS returns them), the message attributes (list values as empty
//     lists, not null), eventSource "aws:sqs", the queue's ARN and region.
//   - With ReportBatchItemFailures ([Acknowledged]): the records the
//     response does not name are deleted; a response naming an empty or
//     unknown itemIdentifier fails the whole batch; an invocation error
//     (a function error, a timeout) deletes nothing. What is not deleted
//     comes back after the queue's visibility timeout, or when the function
//     changed its visibility, and moves to the dead-letter queue after the
//     queue's maxReceiveCount receives, all done by SQS itself.
//
// # What it does not
//
// It does not scale pollers with the queue's depth, retry a throttled
// invocation, or bound a batch's payload at 6 MB; it uses the queue's own
// visibility timeout. [Poller.LoseAck] injects one fault Lambda can show:
// an acknowledgement that never reaches SQS, so the record is delivered
// again (as after a lost DeleteMessage and an expired visibility timeout,
// at once instead of after the timeout).
package esm
