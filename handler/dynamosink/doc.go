// Package dynamosink is a [handler.Sink] that puts each summary into a
// DynamoDB table in the same transaction that completes its idempotency
// record, so that the answer and the record cannot disagree.
//
//	sink, err := dynamosink.New(os.Getenv("SQSONCE_SUMMARIES_TABLE"))
//	if err != nil { return err }
//	h, err := handler.New(handler.Config{..., Sink: sink, RecordID: recordID})
//
// # The table
//
// Partition key "id" (S): the idempotency record id of the work, so one
// item per unit of work, overwritten only if the work re-runs after its
// record expired. The other attributes are those of [Item]. IAM: the
// function needs dynamodb:PutItem on this table (the transaction that
// carries the Put is TransactWriteItems).
//
// # Atomic with the completion
//
// [Sink.Save] does not write: it attaches a Put with dynamostore.Attach, and
// the store commits it with the record's completion in one
// TransactWriteItems. If the transaction fails neither is written, the
// delivery fails, and the record stays in progress until its lease ends.
// Use it only with dynamostore: other stores refuse attached writes.
package dynamosink
