package idempotency

import (
	"context"
	"fmt"
	"sync"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Attach attaches w to the completion of the operation running in ctx, so
// that the store commits both or neither: a store's own helper calls it
// (dynamostore.Attach, pgstore.Attach), with the writes that store takes.
// It returns [ErrNotClaimed] outside an operation the guard runs, and the
// store's refusal at once ([driver.AttachValidator]), so that the
// operation learns of a write its completion could not commit before it
// does its work.
func Attach(ctx context.Context, w any) error {
	a, _ := ctx.Value(attachKey{}).(*attachments)
	if a == nil {
		return ErrNotClaimed
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrNotClaimed
	}
	v, ok := a.store.(driver.AttachValidator)
	if !ok {
		return fmt.Errorf("idempotency: attach to %s: %T commits no attached writes: %w", a.id, a.store, driver.ErrAttachUnsupported)
	}
	if err := v.ValidateAttached(a.id, append(a.items[:len(a.items):len(a.items)], w)); err != nil {
		return err
	}
	a.items = append(a.items, w)
	return nil
}

// RecordID returns the id of the record claimed for the operation running
// in ctx, for logs and for keying the operation's own writes, or "" outside
// one.
func RecordID(ctx context.Context) string {
	if a, _ := ctx.Value(attachKey{}).(*attachments); a != nil {
		return a.id
	}
	return ""
}

type attachKey struct{}

type attachments struct {
	id     string // the record's id
	store  driver.Store
	mu     sync.Mutex
	closed bool
	items  []any
}

func (a *attachments) close() []any {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	return a.items
}
