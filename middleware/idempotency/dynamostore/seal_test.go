package dynamostore_test

import (
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// TestValidateSealed: sealed results are refused in the Powertools data
// formats, whose readers would replay the sealed text, and accepted in
// DataJSON.
func TestValidateSealed(t *testing.T) {
	for f, ok := range map[dynamostore.DataFormat]bool{
		dynamostore.DataJSON:                 true,
		dynamostore.DataPowertoolsPython:     false,
		dynamostore.DataPowertoolsTypeScript: false,
	} {
		s, err := dynamostore.New(&updates{}, "t", dynamostore.WithDataFormat(f))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ValidateSealed(); (err == nil) != ok {
			t.Errorf("%v: ValidateSealed() = %v, want accepted %v", f, err, ok)
		}
	}
}
