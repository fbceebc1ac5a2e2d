// Package jmespath takes idempotency keys and validated payloads from an SQS
// record with JMESPath expressions, as Powertools for AWS Lambda users write
// them:
//
//	key := jmespath.MustCompile(`powertools_json(body).idempotency_key`)
//	payload := jmespath.MustCompile(`powertools_json(body).[user_id, amount]`)
//	h := idempotency.WrapPayload(g, key.Select, payload.Select, fn)
//
// The expression is evaluated on the record as Lambda delivers it (body,
// messageId, attributes, messageAttributes, …), with Powertools' functions
// powertools_json, powertools_base64 and powertools_base64_gzip, so a
// Powertools eventKeyJmesPath or payloadValidationJmesPath carries over
// unchanged; with [idempotency.FormatPowertoolsPython] or
// [idempotency.FormatPowertoolsTypeScript] it gives the same record ids and
// validation hashes as that runtime.
//
// # Missing keys fail closed
//
// A selection that is null, "", an empty array or object, or an array or
// object whose values are all null is no key: [Expression.Select] returns a
// [*idempotency.KeyError] wrapping [idempotency.ErrNoKey] and the message
// fails. Powertools TypeScript's default (throwOnNoIdempotencyKey false)
// runs a message whose selection is null without idempotency instead.
//
// # Numbers and object keys
//
// powertools_json refuses JSON text holding a number longer than 100
// characters anywhere, as soon as it reads one, so that a huge number costs
// no parsing: Select fails with a [*idempotency.KeyError].
//
// The record is decoded twice: once keeping each number's spelling, once as
// doubles for the expression's comparisons and functions. When the two
// selections agree, the key keeps the spelling the message used (Python
// tells 10.0 from 10); when the expression computed numbers (length(…),
// a filter on a number) the doubles are used. Objects are Go maps in this
// package's JMESPath implementation, so two keys of one selected object that
// differ only in case are ordered by code point, where Powertools TypeScript
// keeps the order sent; strings holding a lone surrogate escape are read as
// U+FFFD. Select such values with [idempotency.BodyField] to keep them exact.
//
// # Whole events
//
// [Expression.SelectJSON] evaluates an expression on a whole Lambda event,
// as Powertools evaluates eventKeyJmesPath for a handler made idempotent
// with makeIdempotent or @idempotent, and [EventKey] makes it the key
// function of idempotency.WrapEvent for an event type:
//
//	key := jmespath.EventKey[events.APIGatewayV2HTTPRequest](jmespath.MustCompile(`powertools_json(body).order_id`))
//	h := idempotency.WrapEvent(g, idempotency.EventKeys[events.APIGatewayV2HTTPRequest]{KeyFunc: key}, createOrder)
//
// Only what the expression reads of the event is decoded, so a key costs
// what the key costs, not what the event does: at most 16 times the event
// plus 4 MiB of allocation, whatever it holds. An expression that reads
// more than 32,768 values of the event whole (keys(…) of a huge object, a
// huge array selected as the key) is refused, as are events nested deeper
// than 512 levels, events that are not valid UTF-8 and events holding a
// lone surrogate escape, which encoding/json would read as U+FFFD.
package jmespath
