package ptinterop_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/jmespath"
)

// TestUnsafeNumberResult: a result with a number beyond JavaScript's safe
// integers, completed by sqsonce in DataPowertoolsTypeScript, never makes
// Powertools fail the key: its unmarshall throws on such a number (a
// BigInt with a fraction), at every delivery until the record expired.
// The result is left out instead, as for any value the format cannot hold.
func TestUnsafeNumberResult(t *testing.T) {
	tb := newTable(t)
	key := "k-" + rand.Text()
	g, err := idempotency.New(idempotency.Config{Store: tb.store, Namespace: keyPrefix,
		Format: idempotency.FormatPowertoolsTypeScript, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := jmespath.MustCompile(keyJMESPath).Select(message(key, nil, `"unused"`))
	if err != nil {
		t.Fatal(err)
	}
	result := json.RawMessage(`{"amount":9007199254740993.5}`)
	if _, err := idempotency.Do(context.Background(), g, k, func(context.Context) (json.RawMessage, error) { return result, nil }); err != nil {
		t.Fatal(err)
	}
	rep := powertools(t, tb, nil, message(key, nil, `"powertools ran"`))
	if r := rep.Events[0].Records[0]; r.Status != "success" || len(rep.Ran) != 0 {
		t.Errorf("Powertools on sqsonce's completed record: %+v, ran %v; want it replayed (empty), not run", r, rep.Ran)
	}
}
