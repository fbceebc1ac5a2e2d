// handler.mjs runs Lambda events of any type (API Gateway, EventBridge, a
// direct invocation) through a handler made idempotent with Powertools for
// AWS Lambda (TypeScript)'s makeIdempotent, as its documentation shows for
// a Lambda handler. It reads one JSON request on stdin and writes one JSON
// report on stdout. AWS_LAMBDA_FUNCTION_NAME is the function's name, the
// key prefix when keyPrefix is absent.
//
// Request:
//   endpoint, table        the DynamoDB endpoint (moto) and table
//   keyPrefix              (optional) Powertools' keyPrefix
//   eventKeyJmesPath       e.g. "powertools_json(body).order_id"
//   payloadValidationJmesPath (optional)
//   remainingMs            what the Lambda context reports as time left
//   replayHeader           (optional) a responseHook that sets this header
//                          to "true" on every replayed response
//   crash                  the handler exits the process once it runs
//   events                 the events, run one after another
//
// The handler returns {statusCode: 201, headers: {}, body:
// JSON.stringify({by: "powertools", event: <its index>})}. Report:
//   results: [{status: "success", value} | {status: "fail", error}]
//   ran: indices of the events whose handler ran; crashed: the index it exited in
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { dynamoDBClient, lambdaContext, readRequest, writeReport } from './common.mjs';

const req = await readRequest();

const persistenceStore = new DynamoDBPersistenceLayer({
  tableName: req.table,
  awsSdkV3Client: dynamoDBClient(req.endpoint),
});
const config = new IdempotencyConfig({
  eventKeyJmesPath: req.eventKeyJmesPath,
  payloadValidationJmesPath: req.payloadValidationJmesPath,
  throwOnNoIdempotencyKey: true,
  responseHook: req.replayHeader
    ? (response, _record) => ({ ...response, headers: { ...(response?.headers ?? {}), [req.replayHeader]: 'true' } })
    : undefined,
});

const ran = [];
let current = -1;
const handler = makeIdempotent(
  async (_event, _context) => {
    ran.push(current);
    if (req.crash) {
      writeReport({ crashed: current, ran, results: [] });
      process.exit(0);
    }
    return { statusCode: 201, headers: {}, body: JSON.stringify({ by: 'powertools', event: current }) };
  },
  { persistenceStore, config, keyPrefix: req.keyPrefix },
);

const context = lambdaContext(process.env.AWS_LAMBDA_FUNCTION_NAME, req.remainingMs);

const results = [];
for (const [i, event] of req.events.entries()) {
  current = i;
  try {
    results.push({ status: 'success', value: await handler(event, context) });
  } catch (err) {
    results.push({ status: 'fail', error: err?.name ?? String(err) });
  }
}
writeReport({ results, ran });
