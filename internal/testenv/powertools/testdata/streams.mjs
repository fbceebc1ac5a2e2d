// streams.mjs runs Kinesis or DynamoDB Streams events through Powertools for
// AWS Lambda (TypeScript)'s BatchProcessor, with its defaults (records in
// parallel, throwOnFullBatchFailure) or sequentially, around the record function of
// test/streams/streamfn: each record sleeps sleep_ms and fails its first
// fail_times calls. It reads one JSON request on stdin and writes one JSON
// report on stdout.
//
// Request: { kind: "kinesis" | "dynamodb", sequential?: bool, events: [{Records: [...]}, ...] }
//   sequential sets processInParallel: false (one record at a time, in order).
// Report:  { events: [{batchItemFailures, error?}], calls: [{seq, key, start, end, ok}] }
//   start and end are performance.now() in ms, in this process.
import { BatchProcessor, EventType } from '@aws-lambda-powertools/batch';
import { readRequest, sleep, writeReport } from './common.mjs';

const req = await readRequest();

// The DynamoDB item's key as Go's encoding/json writes map[string]AttributeValue:
// names sorted, each value {"S": ...} or {"N": ...}.
const itemKey = (keys) =>
  JSON.stringify(Object.fromEntries(Object.keys(keys).sort().map((k) => [k, keys[k]])));

const work = (record) => {
  if (req.kind === 'kinesis') {
    const data = JSON.parse(Buffer.from(record.kinesis.data, 'base64').toString('utf8'));
    return { seq: record.kinesis.sequenceNumber, key: record.kinesis.partitionKey, sleep: data.sleep_ms, failTimes: data.fail_times };
  }
  const image = record.dynamodb.NewImage ?? record.dynamodb.OldImage;
  return {
    seq: record.dynamodb.SequenceNumber,
    key: itemKey(record.dynamodb.Keys),
    sleep: Number(image.sleep_ms.N),
    failTimes: Number(image.fail_times.N),
  };
};

const attempts = new Map();
const calls = [];
const handler = async (record) => {
  const w = work(record);
  const start = performance.now();
  const n = (attempts.get(w.seq) ?? 0) + 1;
  attempts.set(w.seq, n);
  await sleep(w.sleep);
  const ok = n > w.failTimes;
  calls.push({ seq: w.seq, key: w.key, start, end: performance.now(), ok });
  if (!ok) throw new Error('failing, as the record asks');
};

const type = req.kind === 'kinesis' ? EventType.KinesisDataStreams : EventType.DynamoDBStreams;
const report = { events: [], calls };
for (const event of req.events) {
  const processor = new BatchProcessor(type);
  processor.register(event.Records, handler, req.sequential ? { processInParallel: false } : {});
  try {
    await processor.process();
    report.events.push({ batchItemFailures: processor.response().batchItemFailures });
  } catch (err) {
    report.events.push({ batchItemFailures: null, error: err?.name ?? String(err) });
  }
}
writeReport(report);
