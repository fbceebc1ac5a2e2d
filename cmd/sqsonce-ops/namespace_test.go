package main

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// TestNamespaceBoundary: the ids of namespace "a#b" start with "a#" but
// are not namespace "a"'s: list leaves them out, inspect, release and
// resolve refuse them, and a namespace holding "#" is refused.
func TestNamespaceBoundary(t *testing.T) {
	env, store, _, _ := dynamoEnv(t, "a")
	now := time.Now()
	stuck := func(id string) string {
		owner := rand.Text()
		if _, loaded, err := store.Acquire(context.Background(), driver.Record{ID: id, Status: driver.StatusInProgress,
			ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(-time.Minute), Owner: owner}, now.Add(-time.Hour), driver.Takeover); err != nil || loaded {
			t.Fatalf("claim %s: %v (loaded %v)", id, err, loaded)
		}
		return owner
	}
	digest := strings.Repeat("0c", 32)
	mine, theirs := "a#"+digest, "a#b#"+digest
	stuck(mine)
	owner := stuck(theirs)
	var l listing
	cli(t, env, "list", "--json").want(t, exitOK).decode(t, &l)
	if len(l.Records) != 1 || l.Records[0].ID != mine {
		t.Errorf("list --namespace a: %+v, want only %s", l.Records, mine)
	}
	inspectJSON(t, env, exitRefused, "--id", theirs)
	cli(t, env, "release", "--id", theirs, "--owner", owner).want(t, exitRefused)
	cli(t, env, "resolve", "--id", theirs, "--owner", owner, "--result", `"x"`).want(t, exitRefused)
	if rec, err := store.Inspect(context.Background(), theirs); err != nil || rec.Status != driver.StatusInProgress || rec.Owner != owner {
		t.Errorf("namespace a#b's record changed: %+v, %v", rec, err)
	}
	other := map[string]string{}
	for k, v := range env {
		other[k] = v
	}
	other[envNamespace] = "a#b"
	cli(t, other, "list").want(t, exitRefused)
}
