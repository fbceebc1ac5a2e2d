package pgserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// Restartable is a PostgreSQL server of one test's own, not shared, which
// the test may restart. Create it with [StartRestartable].
//
// Unlike [Server], it runs with synchronous_commit on (PostgreSQL's
// default): a commit is written to the write-ahead log before it is
// acknowledged, so that a crash of the server (not of the machine: fsync
// stays off) loses no acknowledged transaction.
type Restartable struct {
	bin, data, dir string
	cred           *syscall.Credential
	port           int
	url            string

	mu sync.Mutex
	p  *testproc.Process
}

// StartRestartable initialises a cluster in a new directory and starts
// PostgreSQL on a free loopback port; it is stopped and its directory
// removed when t ends. When PostgreSQL cannot be started, t fails under
// CI=true and is skipped otherwise.
func StartRestartable(t testing.TB) *Restartable {
	t.Helper()
	r, err := startRestartable()
	if err != nil {
		testproc.Unavailable(t, "pgserver", err, hint)
	}
	t.Cleanup(r.close)
	return r
}

func startRestartable() (*Restartable, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgserver-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("give %s to user %s: %w", dir, unprivileged, err)
		}
	}
	r := &Restartable{bin: bin, data: filepath.Join(dir, "data"), dir: dir, cred: cred}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", r.data, "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var last error
	for range 3 { // a port found free can be taken before the server binds it
		if r.port, last = testproc.FreePort(); last != nil {
			break
		}
		if last = r.start(); last == nil {
			return r, nil
		}
	}
	os.RemoveAll(dir)
	return nil, last
}

// URL returns the URL of the server's "postgres" database as its
// superuser. It stays the same across restarts.
func (r *Restartable) URL() string { return r.url }

// start starts the server on r.port and waits until it answers.
func (r *Restartable) start() error {
	cmd := exec.Command(filepath.Join(r.bin, "postgres"), "-D", r.data,
		"-p", strconv.Itoa(r.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+r.dir,
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	p, err := testproc.Start("postgres", cmd)
	if err != nil {
		return err
	}
	p.StopSignal = syscall.SIGINT // fast shutdown: do not wait for clients
	r.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", r.port)
	if err := p.WaitReady(startTimeout, func() error { return execSQL(r.url, "", 2*time.Second) }); err != nil {
		_ = p.Stop()
		return err
	}
	r.mu.Lock()
	r.p = p
	r.mu.Unlock()
	return nil
}

// Restart stops the server and starts it again on the same port and data
// directory, waiting until it answers. With crash true it stops it as a
// crash would (an immediate shutdown, SIGQUIT: no shutdown checkpoint,
// every backend ended at once, and recovery from the write-ahead log at
// start); else with a fast shutdown (SIGINT: open transactions rolled
// back, clients disconnected, a checkpoint).
func (r *Restartable) Restart(crash bool) error {
	r.mu.Lock()
	p := r.p
	r.p = nil
	r.mu.Unlock()
	if p != nil {
		if crash {
			p.StopSignal = syscall.SIGQUIT
		}
		if err := p.Stop(); err != nil {
			return fmt.Errorf("pgserver: restart: %w", err)
		}
	}
	if err := r.start(); err != nil {
		return fmt.Errorf("pgserver: restart: %w", err)
	}
	return nil
}

func (r *Restartable) close() {
	r.mu.Lock()
	p := r.p
	r.p = nil
	r.mu.Unlock()
	if p != nil {
		_ = p.Stop()
	}
	os.RemoveAll(r.dir)
}
