package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// WorkerPackage is the import path of the worker command.
const WorkerPackage = "github.com/sqsonce/sqsonce/test/chaos/cmd/worker"

// BuildWorker builds the worker command into dir with the go command on
// PATH and returns the binary's path. It must run inside the module.
func BuildWorker(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "worker")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, WorkerPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("chaos: go build %s: %w\n%s", WorkerPackage, err, out)
	}
	return bin, nil
}

// PowertoolsDir returns the directory of the pinned Powertools packages and
// worker.mjs, internal/testenv/powertools/testdata of the repository's root
// module, with the go command on PATH. It must run inside the repository
// (in the workspace, go list -m alone lists every module of go.work).
func PowertoolsDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/sqsonce/sqsonce").Output()
	if err != nil {
		return "", fmt.Errorf("chaos: go list -m: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "internal", "testenv", "powertools", "testdata"), nil
}
