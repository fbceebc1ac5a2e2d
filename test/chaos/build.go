package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
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
