// Command sqsonce-ops is the operator's tool for sqsonce's idempotency
// records: it shows a record, lists the stuck and the quarantined ones,
// releases or resolves one, and moves a dead-letter queue back to its
// queue after checking each message's key.
//
//	go install ./cmd/sqsonce-ops   # from a checkout (the module is not published)
//
// Usage:
//
//	sqsonce-ops inspect (--key JSON [--key-field a.b] | --body FILE|- | --message FILE|- | --id ID) [--key-source SRC] [--tenant T] [--group G]
//	sqsonce-ops list [--all]
//	sqsonce-ops release (--id ID | --key … | --body … | --message …) --owner OWNER|- [--dry-run] [--force]
//	sqsonce-ops resolve (--id ID | --key … | --body … | --message …) --owner OWNER|- (--result JSON | --result-file FILE|-) [--dry-run]
//	sqsonce-ops redrive --dlq URL --queue URL [--rate N/s] [--max N] [--dry-run] [--force REASON]
//
// Every command takes the store's flags (--store dynamodb|redis|postgres,
// --table, --endpoint, --redis-url, --postgres-url, --namespace, --format,
// --data-format, --key-source, the sort key's) and --json; each defaults
// to the environment variable the function reads (SQSONCE_STORE,
// SQSONCE_TABLE, SQSONCE_NAMESPACE, SQSONCE_KEY, SQSONCE_STATIC_PARTITION,
// …). The namespace is required. A --redis-url or --postgres-url that
// carries a password is refused: give it in the environment, or in a file
// named by --redis-url-file or --postgres-url-file. A record id is computed as
// [idempotency.Guard.ID] computes it (Guard.ScopedID with --tenant), with
// the function's key source (--key-source, $SQSONCE_KEY: see
// envvars.KeySource), or the body field --key-field names, or else, in the
// reference app's environment ($SQSONCE_PROVIDER or $SQSONCE_SUMMARIES_TABLE
// set), its key function ([handler.Key]); with none of them a command that
// computes ids from keys or messages is refused. --message takes the whole
// message, one SQS record as Lambda delivers it (or an event of one), for
// a key source that reads its attributes and for message-group tenancy
// (its attributes.MessageGroupId scopes the id); it is bounded as SQS
// bounds a message, and its errors never quote it. list exits 2 when the
// namespace holds no record and the table holds others'. Records are
// read through the store's [driver.Inspector]; release and resolve
// write with its ReleaseInspected and CompleteInspected, fenced on
// the record as read (its owner or none, expiry, lease and quarantine
// mark). redrive refuses queues that --queue's RedrivePolicy does not
// pair, stops a FIFO group at its first message not sent, and sends at
// most --rate. A message another queue moved there (its
// DeadLetterQueueSourceArn, or sqsdlq's source-queue attribute, names
// another queue than --queue: a shared dead-letter queue) stays in it,
// unless --force. It classes each message by what its redelivery will do,
// with the key computed on the message as Lambda will deliver it from
// --queue (its message attributes less sqsdlq's, the queue's ARN and
// region, the MD5s; a key that reads what each delivery gets anew, such as
// the message id, is classed run: its redelivery has a record id of its
// own): a claim whose lease lapsed
// runs again, unless the claim is strict or the function is (--strict,
// $SQSONCE_STRICT=true), which quarantines it.
//
// Exit codes: 0 done (or, with --dry-run, would be done); 1 a call failed
// or a write was refused because the record is not as shown; 2 bad usage,
// or records the configuration cannot read (nothing is written).
//
// The README's section "Operating" has the runbooks.
package main
