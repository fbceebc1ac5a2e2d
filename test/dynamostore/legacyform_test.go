package dynamostore_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
)

// TestTypeScriptResultLikeLegacySeal: in DataPowertoolsTypeScript, where no
// result is sealed (the store refuses a Sealer), a string result in the
// syntax of the sealed form earlier builds wrote ("sqsonce:sealed:1:" and
// base64, or nothing) is stored as DynamoDB's S, and read back as the JSON
// string it is; the guard's escape does not survive native types. Another
// guard's duplicate replays it. Before, every duplicate failed with
// ErrUnsealed (for good, of "sqsonce:sealed:1:") though nothing was sealed.
func TestTypeScriptResultLikeLegacySeal(t *testing.T) {
	e := newEnv(t, dynamostore.WithDataFormat(dynamostore.DataPowertoolsTypeScript))
	newGuard := func() *idempotency.Guard {
		g, err := idempotency.New(idempotency.Config{Store: e.store, Namespace: "orders", Format: idempotency.FormatPowertoolsTypeScript,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	writer, reader := newGuard(), newGuard()
	for i, result := range []string{"sqsonce:sealed:1:QUJD", "sqsonce:sealed:1:gzip:QUJD", "sqsonce:sealed:1:"} {
		k := idempotency.Raw([]byte(`"order-` + string(rune('a'+i)) + `"`))
		if v, err := idempotency.Do(context.Background(), writer, k, func(context.Context) (string, error) { return result, nil }); err != nil || v != result {
			t.Fatalf("%q: the first call: %q, %v", result, v, err)
		}
		ran := false
		v, err := idempotency.Do(context.Background(), reader, k, func(context.Context) (string, error) { ran = true; return "ran again", nil })
		if err != nil || ran || v != result {
			t.Errorf("%q: a duplicate: %q, ran %v, %v; want the stored result replayed", result, v, ran, err)
		}
	}
}
