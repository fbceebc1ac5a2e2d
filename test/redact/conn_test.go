// Package redact_test holds the connection-string masking test, which parses
// with the Redis and PostgreSQL clients: in the test module, so that the
// library's own go.mod does not require them.
package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/redact"
)

// TestConnErrorMasksPassword parses malformed connection strings with the
// clients' own parsers and requires that no error, once through ConnError,
// holds the password in any form, while it still says what is wrong.
func TestConnErrorMasksPassword(t *testing.T) {
	const pw = "S3cr3t/pa@ss%word"
	enc := url.QueryEscape(pw)
	tests := []struct {
		conn  string
		parse func(string) error
	}{
		{"redis://default:" + enc + "@cache.internal:63a79/0", redisParse},
		{"redis://default:" + enc + "@cache.internal:6379/zero", redisParse},
		{"rediss://:" + enc + "@[::1:6379", redisParse},
		{"redis://user:" + pw + "@cache.internal:6379/0", redisParse}, // unescaped: malformed
		{"http://default:" + enc + "@cache.internal:6379/0", redisParse},
		{"postgres://app:" + enc + "@db.internal:54x32/app?sslmode=verify-full", pgParse},
		{"host=db.internal port=5432x user=app password='" + pw + "' sslmode=verify-full", pgParse},
		{"host=db.internal port=5432x user=app password=" + enc + " sslmode=verify-full", pgParse},
	}
	for _, tt := range tests {
		err := tt.parse(tt.conn)
		if err == nil {
			t.Fatalf("%s parsed: want a malformed connection string", tt.conn)
		}
		got := redact.ConnError(tt.conn, fmt.Errorf("SQSONCE_REDIS_URL: %w", err))
		for _, s := range []string{pw, enc, "S3cr3t"} {
			if strings.Contains(got.Error(), s) || strings.Contains(fmt.Sprintf("%+v %#v", got, got), s) {
				t.Errorf("ConnError(%s) = %q: shows the password", tt.conn, got)
			}
		}
		if !strings.HasPrefix(got.Error(), "SQSONCE_REDIS_URL: ") || len(got.Error()) < 30 {
			t.Errorf("ConnError(%s) = %q: want the error's own text, masked", tt.conn, got)
		}
		if errors.Unwrap(got) != nil {
			t.Errorf("ConnError(%s) wraps %v: its chain may hold the password", tt.conn, errors.Unwrap(got))
		}
		if !redact.HasPassword(tt.conn) {
			t.Errorf("HasPassword(%s) = false", tt.conn)
		}
	}
	for _, conn := range []string{"redis://cache.internal:6379/0", "redis://default@cache.internal:6379", "postgres://app@db/app?sslmode=verify-full", "host=db user=app sslmode=verify-full", ""} {
		if redact.HasPassword(conn) {
			t.Errorf("HasPassword(%s) = true: it has none", conn)
		}
	}
	if redact.ConnError("x", nil) != nil {
		t.Error("ConnError of nil is not nil")
	}
}

func redisParse(s string) error { _, err := redis.ParseURL(s); return err }

func pgParse(s string) error { _, err := pgxpool.ParseConfig(s); return err }
