// Package jmespath takes idempotency keys and validated payloads from an SQS
// record with JMESPath expressions, as Powertools for AWS Lambda users write
// them:
//
//	key := jmespath.MustCompile(`powertools_json(body).idempotency_key`)
//	payload := jmespath.MustCompile(`powertools_json(body).[user_id, amount]`)
//	h := idempotency.Wrap(g, key.Selector(), fn, idempotency.WithPayload(payload.Selector()))
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
// runs a message whose selection is null without idempotency instead. A
// payload ([idempotency.WithPayload]) is never missing: such a selection
// is hashed as any other, as both runtimes hash it.
//
// # The runtime's id, or a refusal
//
// The package evaluates JMESPath as jmespath.py 1.1 (Powertools Python's)
// and Powertools TypeScript 2.35 do, on the message as sent: numbers keep
// their spelling (Python tells 10.0 from 10), object members their order,
// and one message always gives one selection. Where the two runtimes would
// select differently, Select fails with a [*idempotency.KeyError] before
// anything is claimed, rather than give an id one of them does not give:
//
//   - JSON that powertools_json (and a JSON literal) reads is refused when it
//     holds invalid UTF-8, a lone surrogate escape, a member name twice in
//     one object, a number longer than 100 characters, or nesting deeper
//     than 10,000;
//   - numbers: integers beyond ±2^53 compared, summed or ordered (Python
//     is exact, TypeScript uses doubles); a sum or avg whose additions
//     round; ceil and floor of ±Infinity; avg of an empty array (null in
//     Python, NaN in TypeScript); to_number of a string that is not a JSON
//     number but that one runtime reads (" 12", "1_000", "0x10", "");
//   - strings: length and reverse of strings with characters beyond U+FFFF
//     (code points against UTF-16 units); ordering strings where code point
//     and UTF-16 order differ; sort of strings other than ASCII digits with
//     lower-case letters, or digits with upper-case letters (TypeScript
//     sorts with localeCompare); ordering comparisons (<, >=, …) of strings
//     that Python answers true (TypeScript answers undefined), of a number
//     and a string, or the value of an ordering comparison of non-numbers
//     used as anything but a test;
//   - ==, != and contains where Python's == and TypeScript's strict
//     equality differ (true against 1 inside an array, numbers beyond
//     2^53), and contains of an array or object among arrays or objects
//     (TypeScript compares them by reference);
//   - to_string of values the two spell differently (non-ASCII characters,
//     1.0, 1e16, integers beyond 2^53, member names such as "7" that
//     JavaScript lists first); keys, values and * of such objects;
//   - map and not_null results of 0, "" or false (TypeScript's || null);
//   - an array read again after sort or reverse reordered it (TypeScript
//     reorders in place);
//   - a member name every JavaScript object inherits (constructor,
//     toString, …) where the object lacks it;
//   - the record or a message attribute as a whole (only their members can
//     be selected: the record is rebuilt from the Go event), and keys,
//     values, * or to_string of attributes or messageAttributes (Lambda
//     does not fix their order);
//   - powertools_base64 and powertools_base64_gzip input that is not
//     padded standard base64 without line breaks (TypeScript's fromBase64
//     refuses it, Python's b64decode accepts it), gzip data that is not one
//     member with nothing after it, decoded bytes that are not UTF-8 (Python
//     raises, TypeScript writes U+FFFD), and powertools_base64 text
//     beginning with a byte order mark (TypeScript drops it);
//   - expressions the two parse differently (a filter or * right after a
//     filter's projection) or that call an unknown function: these fail at
//     [Compile].
//
// # Whole events
//
// On an input other than an SQS message, [Expression.Selector] evaluates
// an expression on the whole Lambda event, as Powertools evaluates
// eventKeyJmesPath for a handler made idempotent with makeIdempotent or
// @idempotent ([Expression.SelectJSON]):
//
//	key := jmespath.MustCompile(`powertools_json(body).order_id`)
//	h := idempotency.Wrap(g, key.Selector(), createOrder) // createOrder takes an events.APIGatewayV2HTTPRequest
//
// The event is read as powertools_json reads JSON (the rules and refusals
// above), in place, with the same selector, functions and cost as Select:
// one expression on one value gives one record id whichever reads it.
//
// # Cost
//
// An evaluation reads the message in place and allocates at most 16 times
// the bytes of the record's strings plus what powertools_base64 and
// powertools_base64_gzip decoded (together at most 1 MiB, SQS's largest
// message), plus 1 MiB; an expression that would need more (one that
// multiplies the message, such as [@, @][] repeated) is refused, as is one
// that would take more than a proportional number of steps.
package jmespath
