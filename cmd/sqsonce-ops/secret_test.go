package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPasswordNotOnCommandLine: a --redis-url or --postgres-url that
// carries a password is refused (every user of the machine reads a
// process's arguments), while the same URL from the environment or from
// --redis-url-file is used; no output of the tool, -help included, shows
// the password, even when the URL is malformed or the server refuses it.
func TestPasswordNotOnCommandLine(t *testing.T) {
	const pw = "S3cr3tPassw0rd/x@y"
	enc := url.QueryEscape(pw)
	leaks := func(t *testing.T, r result) {
		t.Helper()
		for _, s := range []string{pw, enc, "S3cr3t", "Passw0rd"} {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Errorf("sqsonce-ops %q shows the password:\n%s%s", r.args, r.stdout, r.stderr)
			}
		}
	}
	base := map[string]string{envNamespace: "n", envStore: storeRedis}
	withEnv := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct{ flag, conn string }{
		{"--redis-url", "redis://app:" + enc + "@cache.internal:6379/0"},
		{"--postgres-url", "postgres://app:" + enc + "@db.internal/app?sslmode=verify-full"},
		{"--postgres-url", "host=db.internal user=app password=" + enc + " sslmode=verify-full"},
	} {
		r := cli(t, base, "list", tc.flag, tc.conn)
		if r.code != exitRefused || !strings.Contains(r.stderr, tc.flag+" carries a password") || !strings.Contains(r.stderr, tc.flag+"-file") {
			t.Errorf("%s with a password: exit %d, stderr %q; want it refused, naming %s-file", tc.flag, r.code, r.stderr, tc.flag)
		}
		leaks(t, r)
	}

	// From the environment and from a file, a URL with a password is used:
	// the server's refusal is reported, the password is not.
	bad := "redis://nobody:" + enc + "@" + redisS.Addr(t) + "/0"
	file := filepath.Join(t.TempDir(), "redis-url")
	if err := os.WriteFile(file, []byte(bad+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, r := range []result{
		cli(t, withEnv(envRedisURL, bad), "list"),
		cli(t, base, "list", "--redis-url-file", file),
		cli(t, withEnv(envRedisURL, "redis://nobody:"+enc+"@cache.internal:63a79/0"), "list"),
		cli(t, withEnv(envRedisURL, "redis://nobody:"+pw+"@cache.internal:6379/0"), "list"),
	} {
		if r.code == 0 || r.stderr == "" {
			t.Errorf("sqsonce-ops %q: exit %d, stderr %q; want the refusal reported", r.args, r.code, r.stderr)
		}
		leaks(t, r)
	}
	leaks(t, cli(t, withEnv(envRedisURL, bad), "list", "-help"))
	if r := cli(t, base, "list", "--redis-url-file", file); !strings.Contains(r.stderr, "WRONGPASS") {
		t.Errorf("--redis-url-file: stderr %q; want the server's refusal of the file's URL", r.stderr)
	}
	// A URL without a password is still taken from the flag.
	// (Exit 0, or the refusal of a namespace the shared server holds no
	// record of: either way the tool reached the server with the URL.)
	r := cli(t, base, "list", "--redis-url", redisS.URL(t))
	if r.code != 0 && !strings.Contains(r.stderr, "no record of namespace") {
		t.Errorf("--redis-url without a password: exit %d, stderr %q", r.code, r.stderr)
	}
}
