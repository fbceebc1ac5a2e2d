package idempotency

// Permanent reports true: the same body fails the same way on every
// delivery. Package batch moves such a message to the dead-letter queue at
// once when it is configured to (batch.PermanentError).
func (e *BodyError) Permanent() bool { return true }

// Permanent reports true: a message without a key, or with one the format
// cannot hash, fails the same way on every delivery (batch.PermanentError).
func (e *KeyError) Permanent() bool { return true }

// Permanent reports true: the key stays claimed with the other payload
// while its record lives (batch.PermanentError).
func (e *PayloadMismatchError) Permanent() bool { return true }
