// Package pgserver gives tests a real PostgreSQL server on loopback: one
// server per test binary, initialised with initdb into a temporary
// directory on first use, listening on a free 127.0.0.1 port (and a Unix
// socket in that directory), without fsync, and stopped and removed when the
// tests end.
//
//	var pg = pgserver.New()
//	func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
//	func TestX(t *testing.T) { url := pg.NewDatabase(t) }
//
// The binaries are found with pg_config --bindir, then in PATH, then in
// Debian's /usr/lib/postgresql/{version}/bin. PostgreSQL
// refuses to run as root: when the tests run as root, initdb and the server
// run as the user "postgres" (the Debian package creates it), and the
// temporary directory is given to that user.
//
// When the server cannot be started, a test that asks for it fails if the
// environment variable CI is "true" and is skipped otherwise, with a message
// saying how to install it (apt-get install postgresql). With
// SQSONCE_TEST_POSTGRES_URL set, no server is started and the tests use
// that one; NewDatabase then creates its databases there.
package pgserver
