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
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

const input = await new Promise((resolve, reject) => {
  let text = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => { text += chunk; });
  process.stdin.on('end', () => resolve(text));
  process.stdin.on('error', reject);
});
const req = JSON.parse(input);

const client = new DynamoDBClient({
  endpoint: req.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
});
const persistenceStore = new DynamoDBPersistenceLayer({ tableName: req.table, awsSdkV3Client: client });
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
      process.stdout.write(JSON.stringify({ crashed: current, ran, results: [] }) + '\n');
      process.exit(0);
    }
    return { statusCode: 201, headers: {}, body: JSON.stringify({ by: 'powertools', event: current }) };
  },
  { persistenceStore, config, keyPrefix: req.keyPrefix },
);

const context = {
  functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
  awsRequestId: 'req',
  getRemainingTimeInMillis: () => req.remainingMs ?? 60_000,
};

const results = [];
for (const [i, event] of req.events.entries()) {
  current = i;
  try {
    results.push({ status: 'success', value: await handler(event, context) });
  } catch (err) {
    results.push({ status: 'fail', error: err?.name ?? String(err) });
  }
}
process.stdout.write(JSON.stringify({ results, ran }) + '\n');
