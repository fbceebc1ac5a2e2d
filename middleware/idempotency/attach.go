package idempotency

import (
	"context"
	"fmt"
	"sync"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Attach attaches w to the completion of the operation running in ctx: the
// store commits w together with the record's completion, or neither (see
// [driver.Record.Attached]). What w may be depends on the store; package dynamostore
// takes DynamoDB transaction items. Attach returns [ErrNotClaimed] when ctx is
// not the context of an operation run by [Do] or [Wrap], or the operation has
// returned.
//
// Attach asks the store first ([driver.AttachValidator]) and returns its
// error, so that the operation learns at once of a write its completion
// could not commit, rather than after the work is done; a store that
// commits no attached writes fails it with [driver.ErrAttachUnsupported].
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

// RecordID returns the id of the record claimed for the operation running in
// ctx ("{namespace}#{digest}"), for logs and for keying the operation's own
// writes, or "" outside an operation run by [Do] or [Wrap].
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
