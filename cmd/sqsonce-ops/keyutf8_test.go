package main

import (
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// TestKeyInvalidUTF8: a --key (or a --key-field name) that is not valid
// UTF-8 is refused, as the function refuses such a key, and never named
// by another key's record id: before, --key r-\xff and r-\xfe resolved to
// the record of the key "r-\ufffd" (json.Marshal's replacement), which
// inspect, release and resolve would then act on.
func TestKeyInvalidUTF8(t *testing.T) {
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	o := &ops{g: globals{namespace: "ns"}, guard: g}
	other, err := (&selector{key: "r-\ufffd", keyField: "k"}).resolve(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []selector{{key: "r-\xff", keyField: "k"}, {key: "r-\xfe", keyField: "k"}, {key: "r-1", keyField: "k\xff"}} {
		id, err := sel.resolve(o, nil)
		if err == nil || id != "" {
			t.Errorf("--key %q --key-field %q: %s, %v; want a refusal (the key %q is %s)", sel.key, sel.keyField, id, err, "r-\ufffd", other)
		} else if strings.Contains(err.Error(), "r-") {
			t.Errorf("--key %q: the error quotes the key: %v", sel.key, err)
		}
	}
}
