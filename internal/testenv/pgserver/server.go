package pgserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// EnvURL names the environment variable that points the tests at an
// already running server (a postgres:// URL of a user that may create
// databases) instead of starting one.
const EnvURL = "SQSONCE_TEST_POSTGRES_URL"

const (
	startTimeout = 60 * time.Second
	hint         = "install PostgreSQL with: apt-get install -y postgresql (or set " + EnvURL + " to a running server)"
	// unprivileged runs the server when the tests run as root.
	unprivileged = "postgres"
)

// Server is a PostgreSQL server shared by the tests of one test binary.
// Create it with [New]; it is safe for concurrent use.
type Server struct {
	shared *testproc.Shared // its address: the URL of the "postgres" database, as superuser
}

// New returns a Server that starts nothing until a test asks for it.
func New() *Server {
	return &Server{shared: testproc.NewShared("pgserver", hint, func() (string, func() error, error) {
		if u := os.Getenv(EnvURL); u != "" {
			return u, nil, nil
		}
		return start()
	})}
}

// Run runs the tests and then closes the server. Use it in TestMain.
func (s *Server) Run(m *testing.M) int { return s.shared.Run(m) }

// URL returns the URL of the server's "postgres" database as its
// superuser, starting the server on first use. When no server can be had,
// it fails the test under CI=true and skips it otherwise.
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	return s.shared.Addr(t)
}

// Close stops the server if this Server started one and removes its
// directory. It is safe to call more than once.
func (s *Server) Close() error { return s.shared.Close() }

// NewDatabase creates an empty database for t and returns its URL. The
// database is dropped when t ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	base := s.URL(t)
	name := "test_" + strings.ToLower(rand.Text())
	exec := func(sql string) error { return execSQL(base, sql, 30*time.Second) }
	if err := exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("pgserver: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("pgserver: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgserver: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// BinDir returns the directory of the PostgreSQL programs: pg_config
// --bindir, else the directory of initdb in PATH, else Debian's
// /usr/lib/postgresql/{version}/bin.
func BinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	// Debian and Ubuntu keep the server's programs out of PATH.
	if found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(found) > 0 {
		slices.Sort(found) // the latest major version last (while they have two digits)
		return filepath.Dir(found[len(found)-1]), nil
	}
	return "", errors.New("no initdb in pg_config --bindir, PATH or /usr/lib/postgresql/*/bin")
}

// start initialises a cluster in a new directory and starts PostgreSQL on
// it, and returns its URL and the function that stops it and removes the
// directory.
func start() (string, func() error, error) {
	bin, err := BinDir()
	if err != nil {
		return "", nil, err
	}
	cred, err := credential()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "pgserver-")
	if err != nil {
		return "", nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("give %s to user %s: %w", dir, unprivileged, err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	p, u, err := testproc.Launch(func() (*testproc.Process, string, error) { return launch(bin, data, dir, cred) })
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return u, func() error {
		err := p.Stop()
		if rerr := os.RemoveAll(dir); err == nil {
			err = rerr
		}
		return err
	}, nil
}

// credential returns the user to run PostgreSQL as: nil (the current user)
// unless the tests run as root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(unprivileged)
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses root: no user %q to run it as: %w", unprivileged, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %q has uid %q gid %q", unprivileged, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func launch(bin, data, sockets string, cred *syscall.Credential) (*testproc.Process, string, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+sockets,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	p, err := testproc.Start("postgres", cmd)
	if err != nil {
		return nil, "", err
	}
	p.StopSignal = syscall.SIGINT // fast shutdown: do not wait for clients
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	ready := func() error { return execSQL(u, "", 2*time.Second) }
	if err := p.WaitReady(startTimeout, ready); err != nil {
		_ = p.Stop()
		return nil, "", err
	}
	return p, u, nil
}

// execSQL connects to the database at u and runs sql (nothing when it is
// empty), all within timeout.
func execSQL(u, sql string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if sql == "" {
		return nil
	}
	_, err = conn.Exec(ctx, sql)
	return err
}
