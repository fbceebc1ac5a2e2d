// worker.mjs is a long-lived Powertools for AWS Lambda (TypeScript) worker
// of the chaos test's mixed fleet (test/chaos): BatchProcessor around a
// record handler made idempotent by makeIdempotent, as Powertools documents
// it for SQS. A Go worker process (the event source mapping's part:
// receive, deadline, delete) starts it and hands it one batch a line on
// stdin; it answers {ready: true} once its modules are loaded, then one
// line on stdout per batch. It records what it does
// in its own history file (test/history's format, JSON lines, fsync'd): the
// operation's start and end in the handler, every DynamoDB call of
// Powertools' persistence layer with its answer (a middleware on the AWS
// SDK client: PutItem is a claim, UpdateItem a completion, DeleteItem a
// release; Powertools writes no owner), and the outcome of each record.
//
// The configuration is the environment's CHAOS_WORKER (JSON):
//   endpoint, table, keyPrefix  the DynamoDB endpoint, table and Powertools' keyPrefix
//   history                     the history file, its header already written by the Go side
//   proc, target                this process's name in the history, and the Go worker's
//
// A batch: {inv, deadline (unix ms), records: [SQS records], meta: {messageId: {d, payload, opMs, killAfter}}}.
// The answer: {failures: [messageId], results: {messageId: run}}.
//
// The handler returns {run, key}: run is the run id, proc-pN. With
// killAfter the process group (the Go worker's, this one's) is SIGKILLed
// after the operation and before Powertools stores its result.
import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import readline from 'node:readline';
import { BatchProcessor, EventType } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { dynamoDBClient, sleep } from './common.mjs';

const cfg = JSON.parse(process.env.CHAOS_WORKER);
const fd = fs.openSync(cfg.history, 'a');
let seq = 0;
const nowNs = () => Math.round((performance.timeOrigin + performance.now()) * 1e6);

// record appends one event to the history and fsyncs it.
const record = (e) => {
  seq++;
  const line = JSON.stringify({ seq, t: nowNs(), proc: cfg.proc, ...e }) + '\n';
  fs.writeSync(fd, line);
  fs.fsyncSync(fd);
};

const als = new AsyncLocalStorage();
const runOf = (data) => data?.M?.run?.S ?? '';
const errName = (err) => err?.name ?? String(err);

const client = dynamoDBClient(cfg.endpoint);
client.middlewareStack.add(
  (next, context) => async (args) => {
    const call = als.getStore();
    const base = { d: call?.d ?? '' };
    const clock = nowNs();
    switch (context.commandName) {
      case 'PutItemCommand': {
        // The old item, to tell a takeover from a claim of a free key;
        // Powertools ignores what PutItem returns.
        args.input.ReturnValues = 'ALL_OLD';
        const item = args.input.Item;
        const e = {
          ...base, ev: 'claim', reader: 'powertools-ts', payload: call?.payload ?? '', clock,
          lease: Number(item.in_progress_expiration?.N ?? 0), exp: Number(item.expiration?.N ?? 0) * 1000,
        };
        try {
          const out = await next(args);
          const old = out.output?.Attributes;
          if (old && Object.keys(old).length > 0) {
            e.resp = 'taken_over';
            e.prev = old.lease_owner?.S ?? '';
            if (old.expiration?.N && Number(old.expiration.N) * 1000 < clock / 1e6) e.expired = true;
          } else {
            e.resp = 'claimed';
          }
          record(e);
          return out;
        } catch (err) {
          const found = err?.Item;
          if (err?.name === 'ConditionalCheckFailedException' && found) {
            e.prev = found.lease_owner?.S ?? '';
            if (found.status?.S === 'COMPLETED') {
              e.resp = 'replayed';
              e.result = runOf(found.data);
            } else if (found.quarantined) {
              e.resp = 'quarantined';
            } else {
              e.resp = 'in_progress';
            }
          } else {
            e.resp = 'error';
            e.err = errName(err);
          }
          record(e);
          throw err;
        }
      }
      case 'UpdateItemCommand': {
        const data = args.input.ExpressionAttributeValues?.[':response_data'];
        const e = { ...base, ev: 'complete', clock, result: runOf(data) };
        try {
          const out = await next(args);
          record({ ...e, resp: 'ok' });
          return out;
        } catch (err) {
          record({ ...e, resp: 'error', err: errName(err) });
          throw err;
        }
      }
      case 'DeleteItemCommand': {
        try {
          const out = await next(args);
          record({ ...base, ev: 'release', clock, resp: 'ok' });
          return out;
        } catch (err) {
          record({ ...base, ev: 'release', clock, resp: 'error', err: errName(err) });
          throw err;
        }
      }
      default:
        return next(args);
    }
  },
  { step: 'initialize', name: 'chaosHistory' },
);

const persistenceStore = new DynamoDBPersistenceLayer({ tableName: cfg.table, awsSdkV3Client: client });
const config = new IdempotencyConfig({ eventKeyJmesPath: 'powertools_json(body).idempotency_key' });
let runs = 0;
const processIdempotently = makeIdempotent(
  async (rec) => {
    const call = als.getStore();
    call.ran = true;
    runs++;
    const run = `${cfg.proc}-p${runs}`;
    record({ ev: 'op_start', d: call.d });
    await sleep(call.opMs);
    record({ ev: 'op_end', d: call.d, resp: 'ok', result: run });
    if (call.killAfter) {
      record({ ev: 'fault', fault: 'proc_kill', target: cfg.target, class: 'after_op' });
      process.kill(-process.ppid, 'SIGKILL');
      await sleep(60_000);
    }
    return { run, key: JSON.parse(rec.body).idempotency_key };
  },
  { persistenceStore, config, keyPrefix: cfg.keyPrefix },
);

// handle runs one batch and returns the answer.
const handle = async (batch) => {
  const context = {
    functionName: 'chaos',
    awsRequestId: batch.inv,
    // At least 1: Powertools writes no lease at all for 0.
    getRemainingTimeInMillis: () => Math.max(batch.deadline - Date.now(), 1),
  };
  const results = {};
  const processor = new BatchProcessor(EventType.SQS);
  processor.register(
    batch.records,
    async (rec) => {
      const call = { ...batch.meta[rec.messageId], ran: false };
      return als.run(call, async () => {
        const o = { ev: 'outcome', d: call.d };
        try {
          const value = await processIdempotently(rec, context); // registers the context: its remaining time is the lease
          results[rec.messageId] = value?.run ?? '';
          record({ ...o, outcome: call.ran ? 'claimed' : 'replayed', ran: call.ran });
          return value;
        } catch (err) {
          const name = errName(err);
          let outcome = 'failed';
          if (name === 'IdempotencyAlreadyInProgressError') outcome = 'in_progress';
          else if (call.ran) outcome = 'released';
          record({ ...o, outcome, ran: call.ran, class: name, err: name });
          throw err;
        }
      });
    },
    { context, throwOnFullBatchFailure: false },
  );
  await processor.process();
  const failures = processor.response().batchItemFailures.map((f) => f.itemIdentifier);
  return { failures, results };
};

// Ready: the modules are loaded (Lambda's init phase, outside any
// invocation's deadline).
process.stdout.write(JSON.stringify({ ready: true }) + '\n');
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const answer = await handle(JSON.parse(line));
  process.stdout.write(JSON.stringify(answer) + '\n');
}
record({ ev: 'exit' });
