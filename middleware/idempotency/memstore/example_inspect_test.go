package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// An operator's tool lists the claims whose lease lapsed through the
// store's Inspector, and reads one by id.
func ExampleStore_List() {
	s := memstore.New()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for name, lease := range map[string]time.Duration{"a": -time.Minute, "b": time.Hour, "c": -time.Hour} {
		s.Put(driver.Record{ID: "orders#" + name, Status: driver.StatusInProgress,
			ExpiresAt: now.Add(24 * time.Hour), LeaseUntil: now.Add(lease), Owner: "owner-" + name})
	}
	var inspector driver.Inspector = s
	ctx := context.Background()
	for rec, err := range inspector.List(ctx, driver.ListOptions{Status: driver.StatusInProgress, Prefix: "orders#"}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if rec.LeaseUntil.Before(now) {
			fmt.Println(rec.ID, "lapsed; owner", rec.Owner)
		}
	}
	if _, err := inspector.Inspect(ctx, "orders#z"); errors.Is(err, driver.ErrNotFound) {
		fmt.Println("orders#z: no record")
	}
	// Output:
	// orders#a lapsed; owner owner-a
	// orders#c lapsed; owner owner-c
	// orders#z: no record
}
