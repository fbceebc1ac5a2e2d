package sealed

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/kmsseal"
)

// TestSealAfterContextEnded: an operation that returns after its call's
// context ended (a call that ignores it), its lease still good, stores its
// result sealed as it stores it unsealed: sealing, a KMS call when no data
// key is cached, runs in the completion's detached context. Before, Seal
// failed with the context's error and every duplicate failed for good
// (WithheldData).
func TestSealAfterContextEnded(t *testing.T) {
	client, keyID := newKey(t)
	db := moto.DynamoDB(t)
	ds, err := dynamostore.New(db, motoserver.NewTable(t, db))
	if err != nil {
		t.Fatal(err)
	}
	for _, sealed := range []bool{false, true} {
		var sealer driver.Sealer
		ns := "plain"
		if sealed {
			s, err := kmsseal.New(client, keyID) // a new Sealer: no data key cached
			if err != nil {
				t.Fatal(err)
			}
			sealer, ns = s, "sealed"
		}
		g := guard(t, ds, ns, sealer)
		k := idempotency.Raw([]byte(`"order-1"`))
		runs := 0
		op := func(context.Context) (result, error) {
			runs++
			time.Sleep(600 * time.Millisecond) // past the call's deadline, within the lease
			return result{Answer: secret, Tokens: 1}, nil
		}
		c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err1 := idempotency.Do(c, g, k, op)
		cancel()
		got, err2 := idempotency.Do(ctx(t), g, k, op)
		if err2 != nil || got.Answer != secret || runs != 1 {
			t.Errorf("sealed %v: first call %v; the duplicate got %+v, %v (ErrUnsealed: %v), %d runs; want the stored result, 1 run",
				sealed, err1, got, err2, errors.Is(err2, driver.ErrUnsealed), runs)
		}
	}
}
