package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsonce/sqsonce/internal/planted"
)

// Tenancy says what scopes a record id to a tenant ([Config.Tenancy]), so
// that two tenants with one key never share a record. A scoped id is
// "{Namespace}#t-{digest}", SHA-256 of the scope and the key; a call
// without a scope keeps the unscoped id, byte for byte.
type Tenancy int

const (
	// TenancyInvocation, the default, scopes a call's record id by its
	// invocation's tenant: lambdacontext's TenantID, set by Lambda's tenant
	// isolation mode (the Lambda-Runtime-Aws-Tenant-Id header).
	TenancyInvocation Tenancy = iota

	// TenancyMessageGroup scopes by the invocation's tenant and, for an SQS
	// message (Wrap, WrapJSON; not Do), by its MessageGroupId: the tenant
	// of an SQS fair queue. On a FIFO queue a group is not a tenant: a key
	// re-sent in another group runs again.
	TenancyMessageGroup

	// TenancyOff scopes nothing, as Powertools does, for a table shared
	// with it: a tenant that sends another's key gets its stored result, so
	// use it only where keys cannot collide across tenants.
	TenancyOff
)

// String returns the constant's name.
func (t Tenancy) String() string {
	switch t {
	case TenancyInvocation:
		return "TenancyInvocation"
	case TenancyMessageGroup:
		return "TenancyMessageGroup"
	case TenancyOff:
		return "TenancyOff"
	}
	return fmt.Sprintf("Tenancy(%d)", int(t))
}

func (t Tenancy) valid() bool { return t >= TenancyInvocation && t <= TenancyOff }

// maxScopeBytes bounds each part of an idScope.
const maxScopeBytes = 1024

// An idScope is what a record id is scoped to (see [Tenancy]). The zero
// idScope scopes nothing. Each part holds at most 1024 bytes: a longer
// tenant or message group fails its call with a [*KeyError] (which quotes
// neither), so that the cost of an id stays bounded whatever an invocation
// carries (SQS message group ids have at most 128 characters).
type idScope struct {
	Tenant       string // the invocation's TenantID
	MessageGroup string // the SQS message's MessageGroupId, under TenancyMessageGroup
}

// scopeDomain begins the material of a scoped digest, before the scope's
// parts (each behind its length) and the format.
const scopeDomain = "sqsonce tenant scope\x00"

// scopedPrefix begins a scoped digest. No unscoped digest begins so: hex
// (the native and Python formats) and base64 (the TypeScript format) have
// no "-".
const scopedPrefix = "t-"

// ScopedID returns the record id of k for an invocation's tenant and an
// SQS message's group (empty when none counts; see [Tenancy]): [Guard.ID]
// when both are empty, else "{Namespace}#t-{digest}". It fails as ID does,
// and with a [*KeyError] for a tenant or group longer than 1024 bytes.
func (g *Guard) ScopedID(tenant, group string, k Selection) (string, error) {
	return g.scopedID(idScope{Tenant: tenant, MessageGroup: group}, k)
}

func (g *Guard) scopedID(s idScope, k Selection) (string, error) {
	if s == (idScope{}) {
		return g.ID(k)
	}
	if err := s.check(); err != nil {
		return "", err
	}
	spelled, err := g.cfg.Format.spell(k)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(scopeDomain))
	for _, part := range []string{s.Tenant, s.MessageGroup} {
		h.Write(binary.AppendUvarint(nil, uint64(len(part))))
		h.Write([]byte(part))
	}
	h.Write([]byte{byte(g.cfg.Format)})
	h.Write(spelled)
	ns := g.cfg.Namespace
	b := make([]byte, 0, len(ns)+1+len(scopedPrefix)+2*sha256.Size)
	b = append(append(append(b, ns...), '#'), scopedPrefix...)
	return string(hex.AppendEncode(b, h.Sum(nil))), nil
}

// check fails for a part of s longer than 1024 bytes, naming its size,
// never its bytes.
func (s idScope) check() error {
	for _, p := range []struct{ name, v string }{{"the invocation's tenant id", s.Tenant}, {"the message's MessageGroupId", s.MessageGroup}} {
		if len(p.v) > maxScopeBytes {
			return &KeyError{Source: p.name, Err: fmt.Errorf("%d bytes, longer than the %d a scope allows", len(p.v), maxScopeBytes)}
		}
	}
	return nil
}

// tenantOf returns the tenant of ctx's invocation, or "".
func tenantOf(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.TenantID
	}
	return ""
}

// reportedTenant is the tenant of ctx's invocation for a Report and its
// log line: "" when there is none, or when it is longer than maxScopeBytes
// (its call fails, and its line does not carry it).
func reportedTenant(ctx context.Context) string {
	if t := tenantOf(ctx); len(t) <= maxScopeBytes {
		return t
	}
	return ""
}

// requestIDOf returns the Lambda request id of ctx's invocation, or "".
func requestIDOf(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}

// scope is the scope of call c made with ctx, under the guard's Tenancy.
func (g *Guard) scope(ctx context.Context, c call) idScope {
	switch g.cfg.Tenancy {
	case TenancyOff:
		return idScope{}
	case TenancyMessageGroup:
		return idScope{Tenant: tenantOf(ctx), MessageGroup: c.group}
	}
	return idScope{Tenant: planted.If(planted.TenantUnscoped, "", tenantOf(ctx))}
}
