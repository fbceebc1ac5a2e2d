// Package powertools runs Powertools for AWS Lambda (TypeScript) from Go: the
// pinned npm packages in testdata (package.json and its package-lock.json,
// installed with npm ci by make test) driven by testdata/driver.mjs (SQS
// batches, [Run]) and testdata/handler.mjs (a handler of any event,
// [RunHandler]). The interop tests (test/ptinterop) and make bench-peer
// (tools/benchpeer) run it; test/streams runs testdata/streams.mjs,
// Powertools' BatchProcessor on Kinesis and DynamoDB Streams events.
package powertools
