package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/handler"
	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

var (
	moto   = motoserver.New()
	redisS = redisserver.New()
	pgS    = pgserver.New()
)

// awsEnv is the AWS SDK's environment in the tests.
var awsEnv = map[string]string{
	"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": motoserver.Region,
	"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
}

func TestMain(m *testing.M) {
	// The AWS SDK reads its credentials and region from the environment:
	// moto's, never a developer's profile.
	for k, v := range awsEnv {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_PROFILE")
	os.Unsetenv("AWS_SESSION_TOKEN")
	code := moto.Run(m)
	_ = redisS.Close()
	_ = pgS.Close()
	os.Exit(code)
}

// result is one run of the tool.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

// cli runs the tool in process with the environment env (nothing else of
// the process's environment but the AWS SDK's).
func cli(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := runEnv(ctx, args, func(k string) string { return env[k] }, &out, &errOut)
	return result{args: args, stdout: out.String(), stderr: errOut.String(), code: code}
}

// want fails the test unless r exited with code.
func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("sqsonce-ops %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// decode reads r's JSON output into v.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("sqsonce-ops %s: output is not JSON: %v\n%s", strings.Join(r.args, " "), err, r.stdout)
	}
}

// inspectJSON inspects id and returns the record as shown.
func inspectJSON(t *testing.T, env map[string]string, code int, args ...string) recordView {
	t.Helper()
	var v recordView
	cli(t, env, append([]string{"inspect", "--json"}, args...)...).want(t, code).decode(t, &v)
	return v
}

// idOf is the record id the app's guard gives the message body, in
// namespace ns and format f.
func idOf(t *testing.T, g *idempotency.Guard, body string) string {
	t.Helper()
	k, err := idempotency.Select(handler.Key(), events.SQSMessage{MessageId: "m", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.ID(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// seeded is a store holding one record in each state an operator meets.
type seeded struct {
	g                                           *idempotency.Guard
	completed, stuck, live, quarantined, absent string // record ids
	stuckOwner, liveOwner, quarantinedOwner     string
	bodies                                      map[string]string // message body by record id
}

// seed writes the records: completed through the guard as the app does,
// the claims directly, and the quarantined one through quarantine (raw,
// as strict mode leaves it).
func seed(t *testing.T, store driver.Store, ns string, quarantine func(t *testing.T, rec driver.Record)) seeded {
	t.Helper()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: ns, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s := seeded{g: g, bodies: map[string]string{}}
	body := func(key string) string {
		return `{"idempotency_key":"` + key + `","document":{"id":"d","version":1},"prompt_version":"v1"}`
	}
	ctx := context.Background()
	now := time.Now()
	for _, k := range []string{"order-completed", "order-stuck", "order-live", "order-quarantined", "order-absent"} {
		s.bodies[idOf(t, g, body(k))] = body(k)
	}
	s.completed = idOf(t, g, body("order-completed"))
	s.stuck = idOf(t, g, body("order-stuck"))
	s.live = idOf(t, g, body("order-live"))
	s.quarantined = idOf(t, g, body("order-quarantined"))
	s.absent = idOf(t, g, body("order-absent"))
	k, _ := idempotency.Select(handler.Key(), events.SQSMessage{Body: body("order-completed")})
	if _, err := idempotency.Do(ctx, g, k, func(context.Context) (map[string]string, error) {
		return map[string]string{"summary": "done"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	claim := func(id string, lease time.Duration) string {
		owner := rand.Text()
		rec := driver.Record{ID: id, Status: driver.StatusInProgress, ExpiresAt: now.Add(24 * time.Hour),
			LeaseUntil: now.Add(lease), Owner: owner}
		if _, loaded, err := store.Acquire(ctx, rec, now.Add(-time.Hour), driver.Takeover); err != nil || loaded {
			t.Fatalf("seed claim: %v (loaded %v)", err, loaded)
		}
		return owner
	}
	s.stuckOwner = claim(s.stuck, -10*time.Minute)
	s.liveOwner = claim(s.live, time.Hour)
	s.quarantinedOwner = rand.Text()
	q := driver.Record{ID: s.quarantined, Status: driver.StatusInProgress, ExpiresAt: now.Add(24 * time.Hour),
		Owner: s.quarantinedOwner, Quarantined: now.Add(-5 * time.Minute)}
	q.LeaseUntil = q.ExpiresAt
	quarantine(t, q)
	return s
}

// keyOf is the app's key of a message body.
func keyOf(t *testing.T, body string) idempotency.Selection {
	t.Helper()
	k, err := idempotency.Select(handler.Key(), events.SQSMessage{MessageId: "m", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return k
}
