// Package sqsvisibility changes the visibility of SQS messages for the
// pacing of package batch ([batch.Pacing]), and keeps the messages of the
// records that run invisible ([batch.KeepVisible], on with the same
// Changer): it implements [batch.VisibilityChanger] on the SQS API, so
// that the batch package itself needs no AWS SDK.
//
//	client := sqs.NewFromConfig(cfg) // built once, in main
//	changer, err := sqsvisibility.New(client)
//	if err != nil { ... }
//	h := batch.SQS(fn, batch.Options{Pacing: batch.Pacing{Changer: changer}})
//
// The function's role needs sqs:ChangeMessageVisibility on the queue (the
// permission ChangeMessageVisibilityBatch checks).
//
// # Calls
//
// The changes of one invocation are grouped by queue and sent with
// ChangeMessageVisibilityBatch, ten entries per call (the API's limit), at
// most [DefaultConcurrency] calls at a time unless [WithConcurrency] says
// otherwise. Timeouts are rounded up to whole seconds, so that a message
// never comes back before the moment it was paced for. No call is sent once
// the context is done; its changes fail with the context's cause.
// Each entry's outcome is reported on its own: an entry SQS refused
// (listed in the call's Failed entries, such as an expired receipt handle),
// the entries of a call that failed as a whole, and a change whose queue
// URL cannot be made each get an error; the others are applied.
//
// # Queue URL
//
// A record carries its queue's ARN, and the API takes the queue's URL:
// [QueueURL] derives https://sqs.{region}.{domain}/{account}/{name}, with
// the domain of the ARN's partition (amazonaws.com, amazonaws.com.cn,
// amazonaws.eu, and those of the ISO partitions: see [QueueURL]). Emulators
// use URLs of their own; [WithQueueURL] replaces the derivation.
package sqsvisibility
