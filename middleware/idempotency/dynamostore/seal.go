package dynamostore

import (
	"fmt"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

var _ driver.SealValidator = (*Store)(nil)

// ValidateSealed refuses sealed results (idempotency.Config.Sealer) in the
// Powertools data formats: a Powertools function sharing the table would
// read a sealed result as a JSON string, the sealed text, and return it as
// its handler's result. In [DataJSON] (the default) a sealed result is
// stored as S, a JSON string that begins with "sqsonce:sealed:1:".
func (s *Store) ValidateSealed() error {
	if s.format != DataJSON {
		return fmt.Errorf("dynamostore: WithDataFormat(%v) shares the table with Powertools, which would replay a sealed result's text as the result: seal with DataJSON only", s.format)
	}
	return nil
}
