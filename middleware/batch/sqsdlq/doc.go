// Package sqsdlq moves the messages whose record failed permanently to their
// queue's dead-letter queue, for package batch ([batch.DeadLetter]): it
// implements [batch.DeadLetterMover] on the SQS API, so that the batch
// package itself needs no AWS SDK.
//
//	client := sqs.NewFromConfig(cfg) // built once, in main
//	mover, err := sqsdlq.New(client)
//	if err != nil { ... }
//	h := batch.SQS(fn, batch.Options{DeadLetter: batch.DeadLetter{Mover: mover}})
//
// The function's role needs sqs:SendMessage on the dead-letter queue (and
// kms:GenerateDataKey and kms:Decrypt on its key if it uses a customer
// managed key), besides sqs:GetQueueAttributes and sqs:DeleteMessage on the
// source queue, which Lambda's event source mapping needs already.
//
// # Which queue
//
// A message goes to its source queue's dead-letter queue: the
// deadLetterTargetArn of the queue's RedrivePolicy, read with one
// GetQueueAttributes call the first time a message of that queue is moved,
// and kept for the Mover's life (a failed read is tried again on the next
// move). [WithDeadLetterQueue] names it instead. A queue without a
// RedrivePolicy gets no moves: its messages stay failed, as without
// moving. Queue URLs are derived from ARNs with [sqsvisibility.QueueURL],
// in every partition; [WithQueueURL] replaces the derivation for
// emulators.
//
// # Both or neither
//
// Each message is sent with SendMessage, and deleted from its queue with
// DeleteMessage only once it was sent. A failed send leaves the message
// failed in its queue, to SQS's own redrive. A failed delete is reported
// wrapping [batch.ErrNotDeleted], and the batch handler leaves the message
// to Lambda to delete; if that fails too, the message comes back after
// its visibility timeout and is sent again. A FIFO dead-letter queue drops
// a copy sent within SQS's five-minute deduplication interval (its
// MessageDeduplicationId is the messageId); past it (a visibility timeout
// above five minutes, as in the shipped stack), and in a standard one,
// both are kept, with the same [AttrMessageID].
//
// # What is sent
//
// The body and the message attributes as received, and, as many as fit
// beside them (SQS allows ten attributes per message; see [MaxSize]), in
// this order: [AttrReason] (the record's error message, cut to [MaxReason] bytes),
// [AttrErrorType], [AttrMessageID], [AttrSourceQueue] and
// [AttrReceiveCount]. A record function's errors must not quote message
// content: the reason is sent and logged. The message goes in its own
// MessageGroupId, to a standard dead-letter queue too (a fair queue's
// tenant, which scopes its record id under message-group tenancy). A moved message has no
// DeadLetterQueueSourceArn: to redrive it (StartMessageMoveTask), name the
// source queue as the DestinationArn.
package sqsdlq
