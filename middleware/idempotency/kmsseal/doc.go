// Package kmsseal seals the results an idempotency guard stores
// (idempotency.Config.Sealer) with envelope encryption under an AWS KMS
// key the user owns: each result is encrypted with AES-256-GCM under a
// data key from KMS GenerateDataKey, the record id bound as associated
// data, and the data key, encrypted by KMS, travels in the sealed result;
// opening it asks KMS to Decrypt that data key.
//
//	s, err := kmsseal.New(kms.NewFromConfig(cfg), "alias/sqsonce-results")
//	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "orders", Sealer: s})
//
// The function needs kms:GenerateDataKey and kms:Decrypt on the key.
//
// # Data key cache
//
// A Sealer caches data keys in memory, per process, so that a busy
// function does not call KMS for every record: a data key seals at most
// [Cache].MaxRecords results and is used for at most [Cache].MaxAge, and at
// most [Cache].MaxKeys decrypted data keys are kept for opening (each also
// within MaxRecords uses and MaxAge). With the defaults a process makes
// one GenerateDataKey per 10,000 results sealed or 5 minutes, whichever
// comes first, and one Decrypt per data key it opens results of.
// [WithoutCache] calls KMS for every Seal and every Open.
//
// # Format
//
// A sealed result is a version byte (1), the encrypted data key's length
// (2 bytes, big-endian), the encrypted data key, a 12-byte nonce, and the
// ciphertext with its 16-byte tag; the associated data is everything
// before the nonce followed by the record id. KMS binds the data key to
// the encryption context {"sqsonce": "sealed-result"}. Errors never quote
// a result, sealed or not.
package kmsseal
