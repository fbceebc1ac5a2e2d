package dynamostore

import (
	"fmt"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

var (
	_ driver.SealValidator = (*Store)(nil)
	_ driver.DataFitter    = (*Store)(nil)
)

// ValidateSealed refuses sealed results (idempotency.Config.Sealer) in the
// Powertools data formats: a Powertools function sharing the table would
// read a sealed result as a string, the sealed text, and return it as its
// handler's result (TypeScript), or fail every duplicate (Python). In
// [DataJSON] (the default) a sealed result is stored as S, text that is not
// JSON and begins with "sqsonce:sealed:1:" (see driver.SealedPrefix).
func (s *Store) ValidateSealed() error {
	if s.format != DataJSON {
		return fmt.Errorf("dynamostore: WithDataFormat(%v) shares the table with Powertools, which would replay a sealed result's text as the result: seal with DataJSON only", s.format)
	}
	return nil
}

// FitsData implements [driver.DataFitter]: whether [Store.Complete] of rec
// stores rec.Data, plain or compressed, within the item's budget for it
// (see Large results in the package doc), rather than completing the
// record without it. A guard with a Sealer asks it of a sealed result,
// which gzip shrinks by a quarter at most: when it does not fit, the guard compresses the
// result before sealing it (driver.SealedGzipPrefix). Data within the
// budget fits at once; above it, FitsData compresses it, as Complete
// would, to tell.
func (s *Store) FitsData(rec driver.Record) bool {
	if rec.Data == nil || s.format == DataJSON && len(rec.Data) <= s.budget(rec) {
		return true
	}
	p, _, _ := s.fit(rec)
	return !p.omitted
}
