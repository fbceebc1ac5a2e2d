// stream.mjs is benchpeer's Powertools side for the acknowledgement row:
// one warm process that runs SQS events as they come, as a Lambda container
// does between invocations, configured as internal/testenv/powertools' driver.mjs configures
// Powertools for AWS Lambda (TypeScript): makeIdempotent around a record
// handler, inside a BatchProcessor. benchpeer writes it next to a
// node_modules link to the pinned packages.
//
// stdin, one JSON document a line: first the request (driver.mjs's, without
// events: endpoint, table, keyPrefix, eventKeyJmesPath, remainingMs,
// modelMs), then one SQS event ({Records: [...]}) a line. For each event,
// one line on stdout: {batchItemFailures, ms}. It exits at the end of stdin.
import { createInterface } from 'node:readline';
import { BatchProcessor, EventType } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let req;
let processIdempotently;
const context = {
  functionName: 'pt-bench',
  awsRequestId: 'req',
  getRemainingTimeInMillis: () => req.remainingMs ?? 60_000,
};

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === '') continue;
  if (req === undefined) {
    req = JSON.parse(line);
    const client = new DynamoDBClient({
      endpoint: req.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const persistenceStore = new DynamoDBPersistenceLayer({ tableName: req.table, awsSdkV3Client: client });
    const config = new IdempotencyConfig({ eventKeyJmesPath: req.eventKeyJmesPath });
    processIdempotently = makeIdempotent(
      async (record) => {
        if (req.modelMs) await sleep(req.modelMs);
        return JSON.parse(record.body).result;
      },
      { persistenceStore, config, keyPrefix: req.keyPrefix },
    );
    continue;
  }
  const event = JSON.parse(line);
  const processor = new BatchProcessor(EventType.SQS);
  const start = performance.now();
  processor.register(event.Records, (record, ctx) => processIdempotently(record, ctx), {
    context,
    throwOnFullBatchFailure: false,
  });
  await processor.process();
  const { batchItemFailures } = processor.response();
  process.stdout.write(JSON.stringify({ batchItemFailures, ms: performance.now() - start }) + '\n');
}
