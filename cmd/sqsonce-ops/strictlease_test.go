package main

import (
	"context"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// TestStrictClaimLease: a strict claim is stored with its lease at the
// record's expiry and its owner's lease end apart (Record.StrictLease);
// inspect shows that lease end, and calls the claim lapsed once it passed.
func TestStrictClaimLease(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "orders")
	now := time.Now().Truncate(time.Millisecond)
	for _, tc := range []struct {
		name  string
		lease time.Duration
		state string
	}{{"live", time.Hour, stateInProgress}, {"lapsed", -time.Minute, stateLeaseLapsed}} {
		rec := driver.Record{ID: "orders#" + tc.name, Status: driver.StatusInProgress, ExpiresAt: now.Add(24 * time.Hour),
			StrictLease: now.Add(tc.lease), Owner: "worker-1"}
		rec.LeaseUntil = rec.ExpiresAt
		if _, loaded, err := store.Acquire(context.Background(), rec, now, driver.NoTakeover); err != nil || loaded {
			t.Fatalf("seed the %s strict claim: loaded %v, %v", tc.name, loaded, err)
		}
		v := inspectJSON(t, env, exitOK, "--id", rec.ID)
		if v.State != tc.state || v.LeaseUntil == nil || !v.LeaseUntil.Equal(rec.StrictLease) {
			t.Errorf("%s strict claim: state %q, lease until %v; want %q, its StrictLease %v (not the expiry %v)",
				tc.name, v.State, v.LeaseUntil, tc.state, rec.StrictLease, rec.ExpiresAt)
		}
	}
}
