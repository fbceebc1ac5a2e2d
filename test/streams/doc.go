// Package streams tests the stream handlers of package batch (Kinesis,
// DynamoDBStream) the way Lambda runs them: the function in streamfn,
// built for this machine, under the Lambda Runtime Interface Emulator, on
// the event fixtures in events/streams (the shape Lambda delivers), and
// compares them with Powertools for AWS Lambda (TypeScript)'s
// BatchProcessor on the same events.
//
//	go test ./test/streams                                           # part of make test
//	go test ./test/streams -run TestStreamsVersusPowertools -v       # prints the comparison
//
// Each scenario is two invocations, as Lambda makes them: the fixture's
// event, then the records from the lowest sequence number the first
// response reported (where Lambda resumes the shard). The comparison
// counts, per side: the calls of the record function, the batch item
// failures of each invocation, the runs that completed while an earlier
// record of their key had not yet succeeded (its effect lands out of
// order), and the runs that overlapped an earlier record of their key.
//
// The tests need the emulator (aws-lambda-rie: make tools installs it into
// .tools/, make test passes it in SQSONCE_RIE) and, for the comparison,
// node with the pinned Powertools packages (internal/testenv/powertools);
// without them they skip, and fail under CI=true.
//
// TestDocumentedDynamoDBKey needs neither: it takes the DynamoDB Streams
// key that docs/events.md gives and runs it, in this process, on INSERT,
// MODIFY and REMOVE records (a TTL expiry among them) through an
// idempotent batch.DynamoDBStream, in each record id format.
package streams
