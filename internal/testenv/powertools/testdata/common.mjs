// common.mjs is what driver.mjs, handler.mjs and streams.mjs share: the
// JSON request they read on stdin, the JSON report they write on stdout,
// the DynamoDB client of moto and the Lambda context they pass.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

// readRequest reads standard input to its end and parses it as JSON.
export const readRequest = async () => {
  const input = await new Promise((resolve, reject) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => { text += chunk; });
    process.stdin.on('end', () => resolve(text));
    process.stdin.on('error', reject);
  });
  return JSON.parse(input);
};

// writeReport writes report as one line of JSON on standard output.
export const writeReport = (report) => process.stdout.write(JSON.stringify(report) + '\n');

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// dynamoDBClient is a DynamoDB client of the endpoint (moto), with test
// credentials.
export const dynamoDBClient = (endpoint) => new DynamoDBClient({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
});

// lambdaContext is the Lambda context of the function functionName, which
// reports remainingMs (default 60 s) as the time left.
export const lambdaContext = (functionName, remainingMs) => ({
  functionName,
  awsRequestId: 'req',
  getRemainingTimeInMillis: () => remainingMs ?? 60_000,
});
