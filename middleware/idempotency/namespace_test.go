package idempotency_test

import (
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestNamespaceRefusesHash: a record id is "{Namespace}#{digest}", and a
// digest holds no "#"; a namespace that holds one would make the ids of
// namespace "a#b" read as namespace "a"'s (a listing by the prefix "a#",
// an operator's tool). New refuses it, and takes the namespaces the
// golden ids use.
func TestNamespaceRefusesHash(t *testing.T) {
	for _, ns := range []string{"a#b", "#", "orders#", "#orders"} {
		_, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: ns})
		if err == nil || !strings.Contains(err.Error(), "Config.Namespace") || !strings.Contains(err.Error(), `"#"`) {
			t.Errorf("Namespace %q: %v, want a refusal naming the \"#\"", ns, err)
		}
	}
	for _, ns := range []string{"summarise", "orders-prod.lambda_function.handler", "Zoë ns/with spaces"} {
		if _, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: ns}); err != nil {
			t.Errorf("Namespace %q: %v", ns, err)
		}
	}
}
