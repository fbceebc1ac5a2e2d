// Package handler is the summarise job: one SQS message asks for a summary
// of document D at version V; the handler fetches the document, makes one
// model call and saves the answer. It has no AWS plumbing: documents, model
// provider and sink are small interfaces, and idempotency comes from
// wrapping [Handler.HandleRequest].
//
//	h, err := handler.New(handler.Config{Documents: handler.Dir("samples/documents"), Provider: handler.LogRequests(handler.Stub{}, log, nil), Model: "stub"})
//	if err != nil { return err }
//	fn := idempotency.WrapJSON(g, handler.RequestKey(), h.HandleRequest, handler.RequestOptions()...) // each body decoded once
//
// [RequestKey] and [RequestOptions] take the key, the check and the
// validated payload from each body decoded once into a [Request]. The
// untyped wiring, idempotency.Wrap(g, [Key](), h.Handle,
// idempotency.WithPayload(idempotency.SelectorFunc([WorkKey]))), makes the
// same keys and payloads, parsing the body once for each.
//
// # Message schema
//
// The message body is a JSON object, decoded into [Request]:
//
//	{
//	  "idempotency_key": "sum-4471-9-7f3c",          // optional: the producer's key
//	  "document": {"id": "4471", "version": "9",      // required: what to summarise
//	               "bucket": "...", "key": "...", "version_id": "..."},  // optional: where it is in S3
//	  "model": "anthropic.claude-3-haiku-20240307-v1:0",  // optional: default from the deployment
//	  "prompt_version": "v1",                         // required: see [Prompt]
//	  "parameters": {"temperature": 0.7, "max_tokens": 300, "top_p": 0.9, "stop_sequences": ["END"]},
//	  "request_id": "r-81", "sent_at": "2025-05-01T10:00:00Z", "trace_id": "1-abc"   // never part of the key
//	}
//
// Unknown top-level fields are ignored; unknown parameters are rejected
// (a setting the handler would ignore must not silently drop out of the key).
// document.id and document.version may be strings or integers.
//
// # Keys
//
// [Key] takes the key from the body, never from the broker's messageId
// (which is the same across redeliveries of one message and different for a
// producer's re-send):
//
//  1. the producer's "idempotency_key", when present and not empty: decided
//     where the work is decided, sent again unchanged with every re-send;
//  2. else the canonical subset of [WorkKey]: document id and version, model,
//     prompt version and parameters, the fields that decide what the model
//     is asked to do.
//
// A message with neither has no key and fails (wrapping
// idempotency.ErrNoKey) without running. [WorkKey] is also the validated
// payload (see [RequestOptions]), so that a producer key reused for different work
// fails with idempotency.ErrPayloadMismatch instead of returning the other
// work's summary.
//
// # Providers and the request log
//
// A [Provider] makes exactly one generation per call and never retries
// (a retry can be a second billed generation; the queue redelivers instead):
// [Stub] here, Amazon Bedrock in package bedrock, OpenAI-compatible endpoints
// in package openai. [LogRequests] wraps a provider so that every call first
// appends one [CallRecord] to a [RequestLog]: a JSON-lines [FileLog] (safe
// for several processes), or a [SlogLog] of structured log lines (inside
// Lambda, and locally unless a file is named). Counting its lines counts the
// provider calls.
//
// # Documents and sinks
//
// [Documents] fetches text: [Dir] from a local folder, package s3docs from
// S3. [Sink] persists the [Summary]: [MemorySink] locally, package dynamosink
// in the same DynamoDB transaction as the idempotency record's completion.
//
// # Failures
//
// A failure fails its own delivery only: SQS redelivers the message, and
// one that keeps failing reaches the dead-letter queue after the queue's
// maxReceiveCount receives. Where it fails decides what is left behind.
// With the shipped wiring (idempotency.WrapJSON with [RequestKey] and
// [RequestOptions], as cmd/summarise does):
//
//   - Before anything is claimed. Every body is decoded and checked when
//     the key is made, even a body that carries a producer key, so a body
//     that is not a valid request fails there: with an
//     idempotency.BodyError for JSON that does not decode into a
//     [Request] (an unknown parameter, say) or that [Request.Validate]
//     refuses (wrapping [ErrInvalidRequest]), and with an
//     idempotency.KeyError wrapping idempotency.ErrNoKey for a body
//     without any key. No record is written, the handler does not run: no
//     document is fetched and no provider called. A producer key reused
//     for other work fails with idempotency.ErrPayloadMismatch against the
//     stored record, also without running.
//   - Inside [Handler.HandleRequest], after the claim: a document that
//     cannot be fetched ([ErrDocumentNotFound]; an id or version [Dir]
//     refuses as a file name, wrapping [ErrInvalidRequest]; an S3 error),
//     no model in the request and no default model (wrapping
//     [ErrInvalidRequest]), a provider error, or a sink that refuses the
//     summary. The guard
//     releases the claim (deletes the record it holds), so the redelivery
//     runs the work again from the start, with a new provider call if the
//     failure came after one.
//   - After the handler returned, in the record's completion (with package
//     dynamosink, the same transaction writes the summary), or in a
//     release that fails: the record stays in progress until its lease
//     ends at the invocation's deadline plus the guard's skew margin
//     (idempotency.Config.SkewMargin). A redelivery before then is
//     handed back (idempotency.ErrInProgress); one after it runs the work
//     again.
//
// With idempotency.Wrap(g, [Key](), h.Handle) and no payload, a body with
// a producer key is not parsed until Handle: an invalid one is claimed,
// fails in Handle, and is released.
//
// Errors never quote a message body, since the guard logs them: a value
// refused by [ParseRequest] is shown by a short prefix, its length and a
// digest. A model id must be an identifier (it is logged with every
// provider call), and document locations are bounded to 1024 bytes.
package handler
