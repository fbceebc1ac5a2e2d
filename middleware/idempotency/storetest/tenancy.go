package storetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// testMessageGroupTenants: under TenancyMessageGroup, two tenants of a
// fair queue (two message groups) send one key; each gets a run and its
// own result, whether its messages go through WrapJSON or Wrap, and both
// wrappers give a message the same scoped record id (a re-send through
// the other wrapper replays).
func testMessageGroupTenants(t *testing.T, s driver.Store) {
	var (
		mu      sync.Mutex
		runs    = map[string]int{}
		reports []idempotency.Report
	)
	g, err := idempotency.New(idempotency.Config{Store: s, Namespace: "storetest-tenancy-" + rand.Text(), Tenancy: idempotency.TenancyMessageGroup,
		Logger: slog.New(slog.DiscardHandler), OnOutcome: func(_ context.Context, r idempotency.Report) {
			mu.Lock()
			reports = append(reports, r)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	type order struct {
		OrderID string `json:"order_id"`
	}
	ran := func(m events.SQSMessage) string {
		mu.Lock()
		defer mu.Unlock()
		group := m.Attributes["MessageGroupId"]
		runs[group]++
		return "charged for " + group
	}
	key := idempotency.BodyField("order_id")
	typed := idempotency.WrapJSON(g, key, func(_ context.Context, _ order, m events.SQSMessage) (string, error) { return ran(m), nil })
	plain := idempotency.Wrap(g, key, func(_ context.Context, m events.SQSMessage) (string, error) { return ran(m), nil })
	sel := idempotency.Selection{Selector: `body ["order_id"]`, Value: []byte(`"o-1"`)}
	for i, step := range []struct {
		wrapper string
		group   string
	}{{"WrapJSON", "tenant-a"}, {"WrapJSON", "tenant-b"}, {"Wrap", "tenant-a"}, {"Wrap", "tenant-b"}, {"WrapJSON", "tenant-b"}, {"WrapJSON", "tenant-a"}} {
		fn := typed
		if step.wrapper == "Wrap" {
			fn = plain
		}
		m := events.SQSMessage{MessageId: fmt.Sprintf("m-%d", i), Body: `{"order_id":"o-1"}`,
			Attributes: map[string]string{"MessageGroupId": step.group}}
		got, err := fn(t.Context(), m)
		if want := "charged for " + step.group; err != nil || got != want {
			t.Errorf("message %d (%s, group %s): %q, %v; want %q", i, step.wrapper, step.group, got, err, want)
		}
		mu.Lock()
		r := reports[len(reports)-1]
		mu.Unlock()
		if want, err := g.ScopedID("", step.group, sel); err != nil || r.ID != want {
			t.Errorf("message %d (%s, group %s): record id %s, want %s (%v)", i, step.wrapper, step.group, r.ID, want, err)
		}
	}
	if runs["tenant-a"] != 1 || runs["tenant-b"] != 1 {
		t.Errorf("runs by group %v, want one for each tenant", runs)
	}
}
