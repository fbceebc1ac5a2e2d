// Package dynamostore is a [driver.Store] on Amazon DynamoDB: one
// round trip per claim of a new key or a duplicate (two to take a record
// over), completions fenced by a lease owner token, and
// completion atomic with the application's own DynamoDB writes.
//
//	db := dynamodb.NewFromConfig(cfg) // built once, by main
//	store, err := dynamostore.New(db, "idempotency")
//	guard, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise"})
//
// The store calls only the methods of [API]; it never loads AWS
// configuration or builds a client. What the guard promises on top of a
// store is stated once, in package idempotency ("The promise"); this page
// says how this store keeps its part.
//
// # Table
//
// Partition key "id" (S), no sort key (or one: see Tables with a sort
// key), on-demand billing recommended, TTL enabled on "expiration". The
// items use Powertools for AWS Lambda's attribute names and types, so the
// two can share a table:
//
//	id                      S     "{namespace}#{digest}"
//	status                  S     INPROGRESS or COMPLETED
//	expiration              N     epoch seconds (TTL)
//	in_progress_expiration  N     epoch milliseconds: the lease's end
//	data                    S     the result, JSON text (B when compressed);
//	                              native types with DataPowertoolsTypeScript
//	validation              S     payload digest, when validation is on
//	lease_owner             S     the lease owner token (sqsonce only)
//	data_encoding           S     "gzip" when data is compressed (sqsonce only)
//	data_omitted            BOOL  the result was too large to store (sqsonce only)
//	data_format             S     the data format of a stored result (sqsonce only)
//	release_call            S     marks a released claim (sqsonce only)
//	quarantined             N     epoch milliseconds: strict mode quarantined the claim (sqsonce only)
//	strict_lease_expiration N     epoch milliseconds: a strict claim's lease end (sqsonce only)
//
// [WithAttributes] renames any of them.
//
// # Tables with a sort key
//
// A table whose primary key is a partition key and a sort key (both S), as
// in a single-table design, takes [WithSortKey], Powertools'
// sort_key_attr / sortKeyAttr: the partition key holds one static value
// for every record of the store, by default "idempotency#" and the
// function's name (Powertools' default; pass the name, the store reads no
// environment variable), and the sort key holds the record id:
//
//	store, err := dynamostore.New(db, "app-table",
//		dynamostore.WithAttributes(dynamostore.Attributes{ID: "pk"}),
//		dynamostore.WithSortKey(dynamostore.SortKey{Attr: "sk", FunctionName: os.Getenv("AWS_LAMBDA_FUNCTION_NAME")}))
//
// Every step is the same request as on a table without a sort key, with
// the two-attribute key: the claim's condition, ALL_OLD on failure, the
// fenced completion, its transaction and the release. New refuses a sort
// key attribute equal to the partition key attribute, as Powertools does.
//
// # Round trips
//
// Measured against moto_server by counting HTTP requests (see the tests):
//
//   - Acquire: one PutItem, conditional on attribute_not_exists(id), with
//     ReturnValuesOnConditionCheckFailure ALL_OLD (a refused claim returns
//     the existing record in the same call). Only when that record is one
//     the claim may take (expired, a lapsed lease, a released claim) or does
//     not read, a second PutItem decides, conditional on
//     attribute_not_exists(id) OR expiration < :now OR (status = INPROGRESS AND in_progress_expiration < :now_ms),
//     with ReturnValues ALL_OLD (a takeover returns the record it replaced).
//     The first condition alone costs the server less (moto: a fifth less
//     CPU per PutItem), and new keys and replays are nearly every claim. A
//     server that leaves the record out of the failure costs one consistent
//     GetItem more.
//   - Complete: one UpdateItem conditional on status = INPROGRESS AND
//     lease_owner = :me; with attached writes, one TransactWriteItems
//     instead. With ReturnValuesOnConditionCheckFailure ALL_OLD, a failed
//     condition returns the record: found COMPLETED under :me, it is this
//     completion, applied by an attempt whose response was lost, and
//     Complete succeeds with no further call.
//   - Release: one UpdateItem with the same condition (or this call's own
//     token in release_call) that releases the claim in place: its lease
//     ends (in_progress_expiration 0), its owner is removed and the call's
//     token set. Any claim takes it at once and reports no record
//     replaced; the SDK's retry of a release whose response was lost finds
//     the token and succeeds. The item expires with the claim (TTL).
//   - Strict mode: Acquire with [driver.NoTakeover] is the same, its
//     second PutItem conditional on attribute_not_exists(id) OR expiration
//     < :now OR (attribute_exists(release_call) AND status = INPROGRESS),
//     never a lapsed lease; Quarantine is one UpdateItem conditional on the lapsed claim found (status, owner,
//     expiration, its lease before :now_ms, not quarantined, not released)
//     that sets quarantined and extends the lease to the expiry, with
//     ALL_NEW, and ALL_OLD on a failed condition. Complete and Release
//     remove quarantined. A strict claim is an ordinary claim whose
//     in_progress_expiration is the record's expiry, so that no claim
//     condition takes it over; its lease end is strict_lease_expiration,
//     which Quarantine's condition reads instead.
//
// Through the guard: a first delivery is 2 calls (put, update), a replay 1,
// a takeover 3 (put, put, update), a replay from the guard's cache 0, and a
// duplicate of a key running in the same process 0 more.
//
// # Transactions
//
// Inside an operation, [Attach] adds DynamoDB writes (types.TransactWriteItem:
// a Put, Update, Delete or ConditionCheck on any table) to the operation's
// completion. Complete then commits the record's fenced update and those
// writes in one TransactWriteItems: both or neither. Up to
// [MaxTransactItems]-1 writes; they must not touch the record's own item.
//
// If the lease was lost, Complete returns an error wrapping
// [driver.ErrLeaseLost] and nothing is written. If an attached write's
// condition fails, it returns a [*TransactionError] whose FailedConditions
// name the writes; nothing is written and the record stays in progress.
// Attachments of another type, or one too many for a transaction, fail with
// [driver.ErrAttachUnsupported] when they are attached (the Store is an
// [driver.AttachValidator]): a write is never dropped.
//
// # Large results
//
// DynamoDB caps an item at 400 KB. Results above [WithCompressAbove] (default
// 64 KiB) are stored gzip-compressed as binary, flagged by data_encoding. A
// result that does not fit even compressed (with 8 KiB of margin) is left
// out: the record is completed with data_omitted set, an error is logged
// ([WithLogger]), and every delivery, the one that ran the operation
// included, gets the zero value of the result ([Store.Complete] returns
// what it kept). A
// completed operation is never run again for lack of space.
//
// A sealed result (idempotency.Config.Sealer) is ciphertext in base64,
// which gzip shrinks by a quarter at most: when its seal does not fit ([Store.FitsData]), the guard
// gzips the result before sealing it (driver.SealedGzipPrefix), a form
// releases before it fail with driver.ErrUnsealed; one that does not fit
// even so is left out as above.
//
// # Powertools compatibility
//
// [WithDataFormat] sets how the data attribute holds a result, for the
// table's other writer: [DataJSON] (the default: S holding JSON text,
// compressed above [WithCompressAbove]), [DataPowertoolsPython] (S holding
// JSON text, never compressed) or [DataPowertoolsTypeScript] (native
// DynamoDB types, as Powertools TypeScript's marshall writes them, never
// compressed). The format is configured, never guessed. Every result this
// store writes is marked with its format in data_format; a record marked
// with a format of the other encoding (native types against the two JSON
// text formats, which read each other's records) is refused with a
// [*FormatError]. Unmarked records (Powertools') are read as configured,
// and data the format cannot have written is a [*FormatError] too; an S
// holding JSON text cannot be told apart, so configure every writer of a
// key alike.
//
// Records Powertools wrote have no lease owner, and this store never writes
// one without: a Powertools record can be taken over once its lease or
// expiry has passed, but never completed or released by a worker that did
// not claim it. Powertools' claim of a lapsed record replaces the item,
// after which this store's completion of the old claim fails with
// [driver.ErrLeaseLost]; it takes over a claim this store released as
// it takes over a crashed worker's.
//
// # Errors
//
// Every error returned by Acquire, Complete and Release is an
// [*idempotency.StoreError] with Op and ID set. A lost lease wraps
// [driver.ErrLeaseLost]; a cancelled transaction wraps a
// [*TransactionError]; a failed call wraps the SDK's error, reachable with
// errors.As (for example *types.ProvisionedThroughputExceededException,
// *types.RequestLimitExceeded, smithy.APIError for ThrottlingException, a
// context deadline). An Acquire that fails reports no claim: the guard does
// not run the operation, and the message is retried. The SDK client's own
// retryer applies to every call.
package dynamostore
