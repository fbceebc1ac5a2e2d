// Package memstore is an in-memory [driver.Store]: the default for local
// runs and the store of unit tests.
//
//	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "orders"})
//	h := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), fn)
//
// It has the same semantics as the DynamoDB store and passes the same
// conformance suite, but its records live only as long as the process, so it
// protects against duplicates within one process only: the promise of package
// idempotency ("The promise") holds for the deliveries one process sees.
package memstore
