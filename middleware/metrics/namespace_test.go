package metrics_test

import (
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/metrics"
)

// TestCheckNamespace: the namespaces CloudWatch drops metrics of are
// refused, without the error quoting them; the others pass.
func TestCheckNamespace(t *testing.T) {
	for _, ns := range []string{metrics.DefaultNamespace, "shop", "Shop/Checkout", "a:b", "AWSome", strings.Repeat("n", 255)} {
		if err := metrics.CheckNamespace(ns); err != nil {
			t.Errorf("CheckNamespace(%q) = %v, want nil", ns, err)
		}
	}
	for _, ns := range []string{"", "AWS/Lambda", ":shop", strings.Repeat("n", 256)} {
		err := metrics.CheckNamespace(ns)
		if err == nil {
			t.Errorf("CheckNamespace(%q) accepted", ns)
		} else if ns != "" && strings.Contains(err.Error(), ns) {
			t.Errorf("CheckNamespace(%q) = %v: quotes the namespace", ns, err)
		}
	}
}
