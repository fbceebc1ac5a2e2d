// driver.mjs runs SQS events through Powertools for AWS Lambda (TypeScript):
// makeIdempotent around a record handler, inside a BatchProcessor, as its
// documentation shows for SQS. It reads one JSON request on stdin and
// writes one JSON report on stdout.
//
// Request:
//   endpoint, table        the DynamoDB endpoint (moto) and table
//   keyAttr, sortKeyAttr, staticPkValue (optional) the persistence layer's
//                          key settings, for a table with a sort key
//   keyPrefix              Powertools' keyPrefix
//   eventKeyJmesPath       e.g. "powertools_json(body).idempotency_key"
//   payloadValidationJmesPath (optional)
//   expiresAfterSeconds    (optional, default Powertools' 3600)
//   remainingMs            what the Lambda context reports as time left
//   crash                  the handler exits the process once it runs, as a
//                          worker that dies mid-call (its record stays INPROGRESS)
//   modelMs                (optional) the handler sleeps this long, a model call
//   events                 SQS events ({Records: [...]}), run one after another
//
// The handler returns JSON.parse(record.body).result. Report:
//   events: [{batchItemFailures, records: [{messageId, status, value?, error?}], ms}]
//   ran: messageIds whose handler ran
import { BatchProcessor, EventType } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { dynamoDBClient, lambdaContext, readRequest, sleep, writeReport } from './common.mjs';

const req = await readRequest();

const persistenceStore = new DynamoDBPersistenceLayer({
  tableName: req.table,
  awsSdkV3Client: dynamoDBClient(req.endpoint),
  keyAttr: req.keyAttr,
  sortKeyAttr: req.sortKeyAttr,
  staticPkValue: req.staticPkValue,
});
const config = new IdempotencyConfig({
  eventKeyJmesPath: req.eventKeyJmesPath,
  payloadValidationJmesPath: req.payloadValidationJmesPath,
  expiresAfterSeconds: req.expiresAfterSeconds,
});

const ran = [];
const processIdempotently = makeIdempotent(
  async (record) => {
    ran.push(record.messageId);
    if (req.crash) {
      writeReport({ crashed: record.messageId, ran });
      process.exit(0);
    }
    if (req.modelMs) await sleep(req.modelMs);
    return JSON.parse(record.body).result;
  },
  { persistenceStore, config, keyPrefix: req.keyPrefix },
);

const context = lambdaContext('pt-interop', req.remainingMs);

const report = { events: [], ran };
for (const event of req.events) {
  const errors = new Map();
  const processor = new BatchProcessor(EventType.SQS);
  const start = performance.now();
  processor.register(
    event.Records,
    async (record, ctx) => {
      try {
        return await processIdempotently(record, ctx);
      } catch (err) {
        errors.set(record.messageId, err?.name ?? String(err));
        throw err;
      }
    },
    // A batch whose every record failed is reported record by record,
    // not thrown as FullBatchFailureError, so the test sees each outcome.
    { context, throwOnFullBatchFailure: false },
  );
  const processed = await processor.process();
  const response = processor.response();
  report.events.push({
    batchItemFailures: response.batchItemFailures,
    ms: performance.now() - start,
    records: processed.map(([status, value, record]) =>
      status === 'success'
        ? { messageId: record.messageId, status, value }
        : { messageId: record.messageId, status, error: errors.get(record.messageId) }),
  });
}
writeReport(report);
