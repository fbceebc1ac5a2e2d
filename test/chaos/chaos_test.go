package chaos

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/powertools"
	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// TestShortProfile runs the short profile end to end: worker processes on
// moto_server, every fault, and the account. Any broken promise fails it.
func TestShortProfile(t *testing.T) { testShortProfile(t, Short(1)) }

func testShortProfile(t *testing.T, p Profile) {
	r := runProfile(t, p)
	if r == nil {
		return
	}
	// The run must have exercised what it claims to.
	switch {
	case r.Completed+r.DLQKeys != p.Keys:
		t.Errorf("%d keys completed and %d in the DLQ, want %d in all", r.Completed, r.DLQKeys, p.Keys)
	case r.Sent["duplicate"] == 0 || r.Sent["resend"] == 0:
		t.Errorf("sent %v: want duplicates and re-sends", r.Sent)
	case r.Kills["random"]+r.Kills["after_op"]+r.Kills["deadline"] == 0:
		t.Errorf("no worker was killed: %v", r.Kills)
	case len(r.StoreFaults) == 0:
		t.Errorf("the proxy injected no fault in %d requests", r.StoreRequests)
	case r.Acks == 0:
		t.Error("no delivery was acknowledged")
	}
}

// runProfile runs p end to end and fails t for every broken promise. It
// returns the report, or nil when the run was skipped (-short).
func runProfile(t *testing.T, p Profile) *Report {
	t.Helper()
	if testing.Short() {
		t.Skip("the chaos run takes about 20 s; skipped with -short")
		return nil
	}
	endpoint := moto.Endpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := BuildWorker(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Endpoint: endpoint, Worker: bin, Dir: dir}
	if p.Shared() {
		if env.Powertools, err = filepath.Abs("../../internal/testenv/powertools/testdata"); err != nil {
			t.Fatal(err)
		}
		if err := powertools.Available(env.Powertools); err != nil {
			testproc.Unavailable(t, "powertools", err, "install node and run npm ci in internal/testenv/powertools/testdata (make test does)")
		}
	}
	r, err := Run(ctx, env, p)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos table:\n%s", table.String())
	for _, v := range r.Violations {
		t.Error(v)
	}
	for _, f := range r.Findings {
		t.Log("finding about Powertools:", f)
	}
	return r
}
