// Package linearize is a sequential model of one idempotency record, for
// checking a store's record operations with porcupine
// (github.com/anishathalye/porcupine): a history of claims, completions,
// releases, quarantines, lease extensions and reads that concurrent
// clients made, under faults, is linearizable when some order of them,
// each placed between its call and its return, is one the model accepts.
//
//	ops := []linearize.Op{{Client: 0, Call: t0, Return: t1, Input: in, Output: out}, ...}
//	res, info := linearize.Check(ops, 1000, time.Minute) // porcupine.Ok, Illegal or Unknown
//	if res != porcupine.Ok { linearize.Visualize(f, 1000, info) }
//
// The model has its own small types ([Record], [Input], [Output]): a
// store's test adapts the store's records and errors to them. The
// operations are those of the idempotency package's store contract (see
// each [Kind]): one atomic, conditional step each, fenced on the owner
// token for a completion, a release and an extension, on the record as
// found for a quarantine.
//
// # Time
//
// Times in records and inputs are integers in a unit the adapter chooses:
// the finest its store compares (milliseconds for DynamoDB and Redis,
// microseconds for PostgreSQL), converted as the store converts them, so
// that an expiry kept in epoch seconds is given in whole seconds. A claim's
// and a quarantine's Now is the time the client passed to the store; for
// the other operations, the client's clock when it called, which stands
// for the store's when it sweeps expired records. The model takes no clock
// of its own: each operation is judged at its Now, wherever the order
// places it. Call and Return are another clock's, one for the whole
// history (a monotonic one), and only order the operations.
//
// Expiry is compared at the store's grain ([Model]'s expiryGrain); from
// its Expires on a record may also have been swept away (a TTL deletion, a
// cleanup), so an operation may find no record then.
//
// # Unknown answers
//
// A request whose answer was lost (a connection reset, a timeout) may have
// been applied, at any time after its call, or never. As etcd's robustness
// tests do, such an operation has Result [Unknown] and returns at the end
// of time ([Operations] sets its Return to math.MaxInt64), so the order
// may place it anywhere after its call, also after every other operation;
// and the model lets it either take effect or not wherever it is placed. A
// request refused before it reached the store (a throttle, a 5xx before
// forwarding) changed nothing and is left out of the history.
//
// A client that retries on its own (an SDK, a driver) returns the last
// attempt's answer, and an earlier attempt may have been applied: [Resent]
// adds that earlier attempt as an operation of unknown answer, so that a
// retried release that finds its own first attempt applied (and the
// record gone) is linearizable, as is a retried claim that finds its own
// claim.
package linearize
