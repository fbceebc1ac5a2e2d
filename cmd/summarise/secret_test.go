package main

import (
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

// TestNoPasswordInConnectionErrors builds the app with connection strings
// that carry a password and are malformed, or name a server that refuses
// them (a real redis-server that has no password, a port nobody listens
// on), and requires the init error to say which variable is wrong without
// the password in any form: the init error reaches CloudWatch Logs.
func TestNoPasswordInConnectionErrors(t *testing.T) {
	const pw = "S3cr3tPassw0rd/x@y"
	enc := url.QueryEscape(pw)
	redisAddr := redisSrv.Addr(t)
	tests := []struct {
		name, store, env, conn string
	}{
		{"redis bad port", storeRedis, envRedisURL, "redis://default:" + enc + "@cache.internal:63a79/0"},
		{"redis unescaped password", storeRedis, envRedisURL, "redis://default:" + pw + "@cache.internal:6379/0"},
		{"redis bad database", storeRedis, envRedisURL, "redis://default:" + enc + "@cache.internal:6379/zero"},
		{"redis wrong password", storeRedis, envRedisURL, "redis://nobody:" + enc + "@" + redisAddr + "/0"},
		{"postgres bad port", storePostgres, envPostgresURL, "postgres://app:" + enc + "@db.internal:54x32/app?sslmode=verify-full"},
		{"postgres DSN", storePostgres, envPostgresURL, "host=db.internal port=54x32 user=app password='" + pw + "' sslmode=verify-full"},
		{"postgres refused", storePostgres, envPostgresURL, "postgres://app:" + enc + "@127.0.0.1:1/app?sslmode=disable&connect_timeout=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadConfig(localEnv(map[string]string{envStore: tt.store, tt.env: tt.conn}), "", "")
			if err == nil {
				var a *app
				if a, err = build(t.Context(), c, outputs{Logger: slog.New(slog.DiscardHandler), Metrics: new(syncBuffer)}); err == nil {
					a.close()
				}
			}
			if err == nil {
				t.Fatal("built: want an init error")
			}
			for _, s := range []string{pw, enc, "S3cr3t", "Passw0rd"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("init error %q shows the password", err)
				}
			}
			if !strings.Contains(err.Error(), tt.env) {
				t.Errorf("init error %q does not name %s", err, tt.env)
			}
			t.Log(err)
		})
	}
}
