package memstore

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

var _ idempotency.Inspector = (*Store)(nil)

// Inspect implements [idempotency.Inspector.Inspect].
func (s *Store) Inspect(ctx context.Context, id string) (idempotency.StoredRecord, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.StoredRecord{}, err
	}
	rec, ok := s.Get(id)
	if !ok {
		return idempotency.StoredRecord{}, fmt.Errorf("memstore: inspect %s: %w", id, idempotency.ErrNotFound)
	}
	return idempotency.StoredRecord{Record: rec, Size: len(rec.Data)}, nil
}

// List implements [idempotency.Inspector.List], in the order of the ids.
func (s *Store) List(ctx context.Context, opts idempotency.ListOptions) iter.Seq2[idempotency.StoredRecord, error] {
	return func(yield func(idempotency.StoredRecord, error) bool) {
		s.mu.Lock()
		var recs []idempotency.Record
		for _, r := range s.records {
			if opts.Match(r) {
				recs = append(recs, clone(r))
			}
		}
		s.mu.Unlock()
		slices.SortFunc(recs, func(a, b idempotency.Record) int { return strings.Compare(a.ID, b.ID) })
		for _, r := range recs {
			if err := ctx.Err(); err != nil {
				yield(idempotency.StoredRecord{}, err)
				return
			}
			if !yield(idempotency.StoredRecord{Record: r, Size: len(r.Data)}, nil) {
				return
			}
		}
	}
}
