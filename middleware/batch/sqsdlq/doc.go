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
// DeleteMessage only once it was sent: a message is never deleted without
// being in the dead-letter queue. A failed send leaves the message in its
// queue, failed, and SQS's own redrive moves it after maxReceiveCount
// receives. A failed delete is reported wrapping [batch.ErrNotDeleted]: the
// batch handler then leaves the message out of its failures, so that
// Lambda deletes it. If that delete fails too (or the response is lost),
// the message comes back, fails the same way and is sent again: a FIFO
// dead-letter queue drops the second copy (its MessageDeduplicationId is
// the messageId, within SQS's five-minute deduplication interval); a
// standard one keeps both, each carrying the same [AttrMessageID], and
// redriving both into an idempotent consumer runs the request once.
//
// # What is sent
//
// The body and the message attributes as received, and, as many as fit
// beside them (SQS allows ten attributes per message), in this order:
// [AttrReason] (the record's error message, cut to [MaxReason] bytes),
// [AttrErrorType], [AttrMessageID], [AttrSourceQueue] and
// [AttrReceiveCount]. The errors of this module never quote message
// content, and a record function's own errors must not either: the reason
// is also in the batch handler's log. To a FIFO dead-letter queue the
// message goes in its own MessageGroupId. A message SQS moves itself
// carries its source in the DeadLetterQueueSourceArn system attribute; one
// moved here was sent, and carries AttrSourceQueue instead: to redrive the
// dead-letter queue (StartMessageMoveTask), name the source queue as the
// DestinationArn rather than relying on SQS to know where it came from.
package sqsdlq
