package planted_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sqsonce/sqsonce/internal/planted"
)

// names lists every planted defect's name; the tagged build's Names must
// agree (TestNames).
var names = []string{
	planted.CompleteUnfenced, planted.EarlyTakeover, planted.NoSkewMargin, planted.CompleteNotIdempotent,
	planted.InProgressReplayed, planted.StrictLeaseReadable, planted.FlightIgnoresPayload,
	planted.QuarantineLapses, planted.ReleaseUnfenced, planted.LostAsClaimed, planted.LoggedAsSuccess,
	planted.JSONGroupUnscoped, planted.JSONIgnoresPayload, planted.JSONDropsStrict, planted.CacheIgnoresPayload,
	planted.TenantUnscoped, planted.StrictExtendReadable, planted.DLQDropsGroup, planted.KeepAliveToExpiry,
	planted.CacheKeepsSealed, planted.NoSealerReplays,
}

// TestNoPlantedInBuild builds a program that links every package with a
// planted site, without the tag and with it: the first binary must hold
// none of the defects' names (the compiler folded every site away), the
// second every one (so the scan can see them).
func TestNoPlantedInBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	goTool := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	build := func(tags ...string) []byte {
		out := filepath.Join(t.TempDir(), "probe")
		args := append([]string{"build", "-o", out}, tags...)
		cmd := exec.Command(goTool, append(args, "./testdata/probe")...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	normal := build()
	for _, n := range names {
		if bytes.Contains(normal, []byte(n)) {
			t.Errorf("the normal build holds the planted name %q", n)
		}
	}
	tagged := build("-tags", "sqsonceplanted")
	for _, n := range names {
		if n == planted.DLQDropsGroup {
			continue // its site is in module middleware/batch/sqsdlq, which the probe's module does not require
		}
		if !bytes.Contains(tagged, []byte(n)) {
			t.Errorf("the tagged build lacks the planted name %q: its site is gone, or the scan sees nothing", n)
		}
	}
}

// TestOff holds the untagged build to planting nothing.
func TestOff(t *testing.T) {
	if planted.Tagged {
		t.Skip("tagged build")
	}
	for _, n := range names {
		if planted.On(n) || planted.If(n, 1, 0) != 0 {
			t.Errorf("On(%q) in the normal build", n)
		}
	}
}
