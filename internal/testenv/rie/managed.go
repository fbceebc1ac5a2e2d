package rie

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// Lambda Managed Instances mode. The pinned emulator enters it when
// AWS_LAMBDA_MAX_CONCURRENCY is in its environment, whatever its value
// (cmd/aws-lambda-rie/main.go), and then:
//   - ignores the bootstrap named on its command line and runs the first of
//     /var/runtime/bootstrap, /var/task/bootstrap, /opt/bootstrap, in
//     /var/task, which must exist (rapid/handlers.go, prepareRuntimeBootstrap);
//   - runs it as uid 993, gid 990, a credential its command line cannot
//     change (supervisor/local/process.go, NewProcessSupervisor);
//   - routes each invocation to a runtime worker waiting in /next and
//     rejects one that finds none idle with 400 Runtime.Unavailable
//     instead of queueing it (invoke/invoke_router.go);
//   - sends no tenant id.
//
// So StartManaged runs the emulator in a mount namespace of its own, where
// an overlay on /var (its upper layer on a tmpfs) holds /var/task/bootstrap,
// a copy of Config.Bootstrap: nothing outside the namespace changes, and
// environments started at once do not see each other's bootstrap. That
// needs Linux, root (CAP_SYS_ADMIN, and the right to run a process as
// another user), unshare(1) and mount(8).

// Managed is an execution environment of Lambda Managed Instances: one
// process that serves up to its MaxConcurrency invocations at once. Its
// [Function.Call] and [Function.Invoke] may be called concurrently; an
// invocation beyond MaxConcurrency fails with status 400 and
// Runtime.Unavailable.
type Managed struct {
	*Function
	pid int // the emulator's
}

// ManagedConfig is an execution environment of Lambda Managed Instances.
type ManagedConfig struct {
	Config
	// MaxConcurrency is AWS_LAMBDA_MAX_CONCURRENCY, the number of the
	// runtime's workers. Required, at least 1.
	MaxConcurrency int
}

// ManagedUID and ManagedGID are the user and group the emulator runs the
// bootstrap as in Lambda Managed Instances mode: what it opens (a request
// log, a documents folder) must be open to them.
const (
	ManagedUID = 993
	ManagedGID = 990
)

// CanStartManaged returns nil if this machine can run [StartManaged], else
// why not.
func CanStartManaged() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("rie: Lambda Managed Instances mode needs Linux (mount namespaces), not %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("rie: Lambda Managed Instances mode needs root: the emulator runs the bootstrap as uid 993 from /var/task, which only a mount namespace of root's can provide")
	}
	for _, p := range []string{"unshare", "mount", "sh"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("rie: Lambda Managed Instances mode needs %s: %w", p, err)
		}
	}
	return nil
}

// managedScript runs in the emulator's new mount namespace: $1 a tmpfs
// mount point, $2 the bootstrap; then it execs the emulator (the rest).
const managedScript = `set -e
mount -t tmpfs -o mode=0755 sqsonce-rie "$1"
mkdir "$1/upper" "$1/work"
mount -t overlay -o "lowerdir=/var,upperdir=$1/upper,workdir=$1/work" sqsonce-rie /var
mkdir -p /var/task
cp "$2" /var/task/bootstrap
chmod 0755 /var/task /var/task/bootstrap
shift 2
exec "$@"
`

// StartManaged starts the emulator in Lambda Managed Instances mode with a
// copy of the bootstrap as /var/task/bootstrap, and waits until it
// listens. The emulator starts the bootstrap's init at once, but its
// workers reach /next one by one: until they all have, a burst of
// invocations can find too few idle. See [CanStartManaged] for what the
// machine needs.
func StartManaged(c ManagedConfig) (*Managed, error) {
	if err := CanStartManaged(); err != nil {
		return nil, err
	}
	if c.RIE == "" || c.Bootstrap == "" {
		return nil, errors.New("rie: Config.RIE and Config.Bootstrap are required")
	}
	if c.MaxConcurrency < 1 {
		return nil, fmt.Errorf("rie: MaxConcurrency %d: at least 1", c.MaxConcurrency)
	}
	bootstrap, err := filepath.Abs(c.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("rie: bootstrap: %w", err)
	}
	if _, err := os.Stat(bootstrap); err != nil {
		return nil, fmt.Errorf("rie: bootstrap: %w", err)
	}
	if c.Timeout == 0 {
		c.Timeout = 300 * time.Second
	}
	if c.Timeout%time.Second != 0 {
		return nil, fmt.Errorf("rie: Timeout %v is not whole seconds", c.Timeout)
	}
	if c.FunctionName == "" {
		c.FunctionName = "function"
	}
	if c.MemorySize == 0 {
		c.MemorySize = 128
	}
	home, err := os.MkdirTemp("", "rie-home-")
	if err != nil {
		return nil, fmt.Errorf("rie: %w", err)
	}
	// The bootstrap runs as ManagedUID: its HOME must be open to it.
	if err := os.Chmod(home, 0o755); err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("rie: %w", err)
	}
	mnt := filepath.Join(home, "mnt") // a mount point inside the namespace only
	if err := os.Mkdir(mnt, 0o755); err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("rie: %w", err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	for k, v := range c.Env {
		if k != "AWS_LAMBDA_MAX_CONCURRENCY" {
			env = append(env, k+"="+v)
		}
	}
	env = append(env,
		"AWS_LAMBDA_MAX_CONCURRENCY="+strconv.Itoa(c.MaxConcurrency),
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(c.Timeout/time.Second)),
		"AWS_LAMBDA_FUNCTION_NAME="+c.FunctionName,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(c.MemorySize),
	)
	var pid int
	proc, addr, err := testproc.Launch(func() (*testproc.Process, string, error) {
		port, err := testproc.FreePort()
		if err != nil {
			return nil, "", err
		}
		apiPort, err := testproc.FreePort()
		if err != nil {
			return nil, "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--",
			"sh", "-c", managedScript, "sh", mnt, bootstrap,
			c.RIE, "--runtime-interface-emulator-address", addr, "--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort))
		cmd.Env = env
		p, err := testproc.Start("aws-lambda-rie (managed instances)", cmd)
		if err != nil {
			return nil, "", err
		}
		p.StopSignal = syscall.SIGKILL
		if err := p.WaitReady(startTimeout, func() error {
			conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				conn.Close()
			}
			return err
		}); err != nil {
			_ = p.Stop()
			return nil, "", err
		}
		pid = cmd.Process.Pid
		return p, addr, nil
	})
	if err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("rie: %w", err)
	}
	fn := &Function{url: "http://" + addr + "/2015-03-31/functions/function/invocations", proc: proc, home: home}
	return &Managed{Function: fn, pid: pid}, nil
}

// Close stops the emulator and the bootstrap. The emulator puts the
// bootstrap in a process group of its own, so it is killed first.
func (m *Managed) Close() error {
	for _, child := range children(m.pid) {
		_ = syscall.Kill(-child, syscall.SIGKILL)
		_ = syscall.Kill(child, syscall.SIGKILL)
	}
	return m.Function.Close()
}

// children returns the pids of pid's child processes, from /proc.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if n, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			out = append(out, n)
		}
	}
	return out
}
