package redisserver

import (
	"testing"
	"time"
)

// TestReplicatedFailover: a key written on the primary is read on the
// replica once it is promoted, and again after a failover back.
func TestReplicatedFailover(t *testing.T) {
	r := StartReplicated(t)
	first, err := r.Primary()
	if err != nil {
		t.Fatal(err)
	}
	if first != r.Addrs()[0] {
		t.Errorf("primary %s, want the first node %s", first, r.Addrs()[0])
	}
	if _, err := command(first, "SET replicated-test v1"); err != nil {
		t.Fatal(err)
	}
	second, err := r.Failover(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatalf("failover left %s the primary", first)
	}
	if got, err := command(second, "GET replicated-test"); err != nil || got != "v1" {
		t.Errorf("GET on the new primary: %q, %v; want v1", got, err)
	}
	if _, err := command(first, "SET replicated-test v2"); err == nil {
		t.Error("the old primary took a write after the failover")
	}
	if _, err := command(second, "SET replicated-test v2"); err != nil {
		t.Fatal(err)
	}
	back, err := r.Failover(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if back != first {
		t.Errorf("failover back: primary %s, want %s", back, first)
	}
	if got, err := command(back, "GET replicated-test"); err != nil || got != "v2" {
		t.Errorf("GET after the failover back: %q, %v; want v2", got, err)
	}
}
