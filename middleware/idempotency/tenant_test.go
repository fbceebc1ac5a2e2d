package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
)

// tenantCtx is an invocation's context carrying tenant (and a request id).
func tenantCtx(tenant, requestID string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID, TenantID: tenant})
}

var formats = []idempotency.Format{idempotency.FormatNative, idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript}

func guardOf(t *testing.T, f idempotency.Format, tenancy idempotency.Tenancy) *idempotency.Guard {
	t.Helper()
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise", Format: f, Tenancy: tenancy,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func scopedID(t *testing.T, g *idempotency.Guard, s testScope, k idempotency.Selection) string {
	t.Helper()
	id, err := g.ScopedID(s.Tenant, s.MessageGroup, k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Property 1: two tenants and one key never share an id, in any format;
// nor does a scoped id equal an unscoped one, nor do scopes whose parts
// only split differently.
func TestTenantScopeSeparatesTenants(t *testing.T) {
	k := idempotency.Raw([]byte(`"doc-4471-v9"`))
	sel, err := idempotency.SelectionOf(`body ["idempotency_key"]`, "doc-4471-v9")
	if err != nil {
		t.Fatal(err)
	}
	scopes := []testScope{
		{}, {Tenant: "a"}, {Tenant: "b"}, {Tenant: "ab"}, {Tenant: "a", MessageGroup: "b"},
		{Tenant: "", MessageGroup: "ab"}, {Tenant: "a\x01", MessageGroup: "b"}, {Tenant: "A"}, {Tenant: "a "},
	}
	seen := map[string]string{}
	for _, f := range formats {
		g := guardOf(t, f, idempotency.TenancyInvocation)
		for _, sel := range []idempotency.Selection{k, sel} {
			for _, s := range scopes {
				id := scopedID(t, g, s, sel)
				what := fmt.Sprintf("%v %+v %q", f, s, sel.Selector)
				if other, dup := seen[id]; dup && f != idempotency.FormatNative {
					// The Powertools formats do not hash the selector: the
					// raw and the field key spell the same value.
					if !strings.HasPrefix(other, fmt.Sprintf("%v %+v", f, s)) {
						t.Errorf("%s and %s share id %s", what, other, id)
					}
				} else if dup {
					t.Errorf("%s and %s share id %s", what, other, id)
				}
				seen[id] = what
			}
		}
	}
	// Through Wrap: tenant b never replays tenant a's result.
	g := guardOf(t, idempotency.FormatNative, idempotency.TenancyInvocation)
	var runs atomic.Int32
	fn := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), func(ctx context.Context, m events.SQSMessage) (string, error) {
		runs.Add(1)
		return "result for " + lambdaTenant(ctx), nil
	})
	msg := events.SQSMessage{MessageId: "m-1", Body: `{"idempotency_key":"doc-4471-v9"}`}
	for _, tenant := range []string{"tenant-a", "tenant-b"} {
		got, err := fn(tenantCtx(tenant, "req-"+tenant), msg)
		if err != nil || got != "result for "+tenant {
			t.Errorf("tenant %s: %q, %v; want its own result", tenant, got, err)
		}
	}
	if runs.Load() != 2 {
		t.Errorf("two tenants, one key: %d runs, want 2", runs.Load())
	}
}

func lambdaTenant(ctx context.Context) string {
	lc, _ := lambdacontext.FromContext(ctx)
	return lc.TenantID
}

// Property 2: one tenant and one request never get two ids: the scoped id
// depends on the tenant and on what the format hashes (so spellings the
// format reads as one request stay one), and is the same in every call.
func TestTenantScopeOneRequestOneID(t *testing.T) {
	s := testScope{Tenant: "tenant-a"}
	g := guardOf(t, idempotency.FormatNative, idempotency.TenancyInvocation)
	a := scopedID(t, g, s, idempotency.Selection{Selector: "body fields", Value: []byte(`{"doc":"4471","version":9}`)})
	b := scopedID(t, g, s, idempotency.Selection{Selector: "body fields", Value: []byte(`{ "version":9.0, "doc":"4471" }`)})
	if a != b {
		t.Errorf("one request in two spellings: %s and %s", a, b)
	}
	if again := scopedID(t, g, s, idempotency.Selection{Selector: "body fields", Value: []byte(`{"doc":"4471","version":9}`)}); again != a {
		t.Errorf("the same request twice: %s and %s", a, again)
	}
	// Through Wrap: a producer re-send and a broker duplicate of one
	// tenant's request run once.
	var runs atomic.Int32
	fn := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), func(context.Context, events.SQSMessage) (string, error) {
		runs.Add(1)
		return "summary", nil
	})
	for i, id := range []string{"m-1", "m-1", "m-2"} {
		msg := events.SQSMessage{MessageId: id, Body: `{"idempotency_key":"doc-4471-v9"}`}
		if _, err := fn(tenantCtx("tenant-a", fmt.Sprint("req-", i)), msg); err != nil {
			t.Fatal(err)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("one tenant, one key three times: %d runs, want 1", runs.Load())
	}
}

// Property 3: the cost of a scoped id is bounded: every id has one length
// whatever the scope's, and a scope part over MaxScopeBytes fails the call
// before anything is claimed.
func TestTenantScopeBoundedCost(t *testing.T) {
	k := idempotency.Raw([]byte(`"doc-4471-v9"`))
	for _, f := range formats {
		g := guardOf(t, f, idempotency.TenancyInvocation) // ScopedID takes both parts, whatever the tenancy
		want := len("summarise#t-") + 64
		for _, n := range []int{1, 100, idempotency.MaxScopeBytes} {
			s := testScope{Tenant: strings.Repeat("t", n), MessageGroup: strings.Repeat("g", n)}
			if id := scopedID(t, g, s, k); len(id) != want {
				t.Errorf("%v, scope parts of %d bytes: id of %d bytes, want %d", f, n, len(id), want)
			}
		}
		for _, s := range []testScope{{Tenant: strings.Repeat("t", idempotency.MaxScopeBytes+1)}, {MessageGroup: strings.Repeat("g", idempotency.MaxScopeBytes+1)}} {
			var ke *idempotency.KeyError
			if _, err := g.ScopedID(s.Tenant, s.MessageGroup, k); !errors.As(err, &ke) {
				t.Errorf("%v, a scope part over the bound: %v, want a *KeyError", f, err)
			}
		}
	}
	store := memstore.New()
	g, err := idempotency.New(idempotency.Config{Store: store, Namespace: "summarise", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	_, err = idempotency.Do(tenantCtx(strings.Repeat("t", idempotency.MaxScopeBytes+1), "req-1"), g, k, func(context.Context) (string, error) {
		ran = true
		return "", nil
	})
	var ke *idempotency.KeyError
	if !errors.As(err, &ke) || ran {
		t.Errorf("a tenant over the bound: ran %v, %v; want a *KeyError and no run", ran, err)
	}
	n := 0
	for _, err := range store.List(context.Background(), driver.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 0 {
		t.Errorf("a tenant over the bound: %d records claimed, want none", n)
	}
}

// Property 4: no content in errors or log lines: a refused scope is named
// by its size, and a scoped call's line carries the tenant as an attribute
// but neither the key nor the body.
func TestTenantScopeQuotesNoContent(t *testing.T) {
	var logs logCapture
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise",
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "SECRET-4471"
	fn := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), func(context.Context, events.SQSMessage) (string, error) {
		return "ok", nil
	})
	msg := events.SQSMessage{MessageId: "m-1", Body: `{"idempotency_key":"` + secret + `","text":"` + secret + `"}`,
		Attributes: map[string]string{"MessageGroupId": secret}}
	longTenant := strings.Repeat(secret, idempotency.MaxScopeBytes/len(secret)+1)
	_, err = fn(tenantCtx(longTenant, "req-long"), msg)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("error %v: want one that quotes nothing", err)
	}
	if _, err := fn(tenantCtx("tenant-a", "req-a"), msg); err != nil {
		t.Fatal(err)
	}
	lines := logs.lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2", len(lines))
	}
	for _, l := range lines {
		for k, v := range l {
			if k != "tenant" && strings.Contains(fmt.Sprint(v), secret) {
				t.Errorf("log line %v quotes content in %s", l, k)
			}
		}
	}
	if l := lines[1]; l["tenant"] != "tenant-a" || l["request_id"] != "req-a" || !strings.HasPrefix(fmt.Sprint(l["record_id"]), "summarise#t-") {
		t.Errorf("scoped call's line %v: want tenant tenant-a, request_id req-a, a scoped record id", l)
	}
	if l := lines[0]; l["tenant"] != nil || l["request_id"] != "req-long" {
		t.Errorf("refused call's line %v: want its request_id and no tenant", l)
	}
}

// Calls without a tenant keep the unscoped ids (the golden table's), and
// TenancyOff gives every tenant those: Powertools' ids.
func TestTenancyUnscoped(t *testing.T) {
	k := idempotency.Raw([]byte(`"doc-4471-v9"`))
	for _, f := range formats {
		g := guardOf(t, f, idempotency.TenancyInvocation)
		if got, want := scopedID(t, g, testScope{}, k), mustID(t, g, k); got != want {
			t.Errorf("%v: no scope gives %s, want the unscoped %s", f, got, want)
		}
	}
	for _, tc := range []struct {
		tenancy idempotency.Tenancy
		tenants []string
		groups  []string
		runs    int32
	}{
		{idempotency.TenancyOff, []string{"tenant-a", "tenant-b"}, []string{"", ""}, 1},
		{idempotency.TenancyInvocation, []string{"", ""}, []string{"g-1", "g-2"}, 1},
		{idempotency.TenancyMessageGroup, []string{"", ""}, []string{"g-1", "g-2"}, 2},
		{idempotency.TenancyMessageGroup, []string{"", ""}, []string{"g-1", "g-1"}, 1},
		{idempotency.TenancyMessageGroup, []string{"tenant-a", "tenant-b"}, []string{"g-1", "g-1"}, 2},
	} {
		t.Run(fmt.Sprintf("%v %v %v", tc.tenancy, tc.tenants, tc.groups), func(t *testing.T) {
			g := guardOf(t, idempotency.FormatNative, tc.tenancy)
			var runs atomic.Int32
			var ids []string
			fn := idempotency.Wrap(g, idempotency.BodyField("idempotency_key"), func(context.Context, events.SQSMessage) (string, error) {
				runs.Add(1)
				return "summary", nil
			}, idempotency.OnReplay(func(_ context.Context, v string, r idempotency.Report) (string, error) {
				ids = append(ids, r.ID)
				return v, nil
			}))
			for i := range tc.tenants {
				msg := events.SQSMessage{MessageId: fmt.Sprint("m-", i), Body: `{"idempotency_key":"doc-4471-v9"}`,
					Attributes: map[string]string{"MessageGroupId": tc.groups[i]}}
				if _, err := fn(tenantCtx(tc.tenants[i], "req"), msg); err != nil {
					t.Fatal(err)
				}
			}
			if runs.Load() != tc.runs {
				t.Errorf("%d runs, want %d", runs.Load(), tc.runs)
			}
			if tc.runs == 1 && len(ids) == 1 && tc.tenancy == idempotency.TenancyOff {
				if want := mustID(t, g, idempotency.Selection{Selector: `body ["idempotency_key"]`, Value: []byte(`"doc-4471-v9"`)}); ids[0] != want {
					t.Errorf("TenancyOff: id %s, want the unscoped %s", ids[0], want)
				}
			}
		})
	}
}

func TestTenancyValidated(t *testing.T) {
	_, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise", Tenancy: idempotency.Tenancy(7)})
	if err == nil || !strings.Contains(err.Error(), "Tenancy") {
		t.Errorf("unknown Tenancy: %v, want an error naming it", err)
	}
	// Powertools scopes no id by message group: every message of a fair or
	// FIFO queue has one, so its formats' ids would never be Powertools'.
	for _, f := range []idempotency.Format{idempotency.FormatPowertoolsPython, idempotency.FormatPowertoolsTypeScript} {
		for _, tc := range []struct {
			tenancy idempotency.Tenancy
			refused bool
		}{{idempotency.TenancyMessageGroup, true}, {idempotency.TenancyOff, false}, {idempotency.TenancyInvocation, false}} {
			_, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise", Format: f, Tenancy: tc.tenancy})
			if (err != nil) != tc.refused || tc.refused && !strings.Contains(err.Error(), "TenancyMessageGroup") {
				t.Errorf("Format %v, Tenancy %v: %v; want refused %v", f, tc.tenancy, err, tc.refused)
			}
		}
	}
}

// testScope is a tenant and a message group, as Guard.ScopedID takes them.
type testScope struct{ Tenant, MessageGroup string }

// TestTenantAtTheBoundIsReported: a tenant of exactly MaxScopeBytes scopes
// its call and its log line carries it; one byte more fails the call, and
// its line carries no tenant (gremlins' tenant.go mutant in
// reportedTenant).
func TestTenantAtTheBoundIsReported(t *testing.T) {
	var logs logCapture
	g, err := idempotency.New(idempotency.Config{Store: memstore.New(), Namespace: "summarise",
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	k := idempotency.Raw([]byte(`"k"`))
	atBound := strings.Repeat("t", idempotency.MaxScopeBytes)
	if _, err := idempotency.Do(tenantCtx(atBound, "req-1"), g, k, func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatalf("a tenant of %d bytes: %v", len(atBound), err)
	}
	if _, err := idempotency.Do(tenantCtx(atBound+"t", "req-2"), g, k, func(context.Context) (int, error) { return 1, nil }); err == nil {
		t.Fatalf("a tenant of %d bytes: no error", len(atBound)+1)
	}
	lines := logs.lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2: %v", len(lines), lines)
	}
	if got, _ := lines[0]["tenant"].(string); got != atBound {
		t.Errorf("the line of a tenant at the bound carries tenant %d bytes long, want %d", len(got), len(atBound))
	}
	if got, ok := lines[1]["tenant"]; ok {
		t.Errorf("the line of a tenant over the bound carries tenant %v, want none", got)
	}
}
