package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
)

// Store is an [idempotency.Store] on Redis. It is safe for concurrent use;
// create one with [New] at start-up and share it.
type Store struct {
	rdb redis.UniversalClient
	options
}

// options are what the Options set.
type options struct {
	prefix string
}

var (
	_ idempotency.Store           = (*Store)(nil)
	_ idempotency.AttachValidator = (*Store)(nil)
)

// Option configures a [Store] made by [New].
type Option func(*options)

// WithKeyPrefix puts prefix before every record id to make its Redis key,
// for example "idempotency:" on a server shared with other data. Default
// none: the key is the record id, "{namespace}#{digest}". A prefix holding a
// hash tag ("{...}") puts every record on one Cluster slot: leave braces out
// unless that is what you want.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// New returns a Store on rdb: a *redis.Client, *redis.ClusterClient,
// *redis.Ring or failover client built once by the caller.
func New(rdb redis.UniversalClient, opts ...Option) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: client is nil")
	}
	s := &Store{rdb: rdb}
	for _, opt := range opts {
		opt(&s.options)
	}
	return s, nil
}

func storeError(op, id string, err error) error {
	return &idempotency.StoreError{Op: op, ID: id, Err: err}
}

// RedisKey returns the Redis key of record id.
func (s *Store) RedisKey(id string) string { return s.prefix + id }

// Acquire implements [idempotency.Store.Acquire] with one script (EVALSHA,
// or EVAL once when the server does not have it cached) that claims the key
// or returns the record that holds it.
func (s *Store) Acquire(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, bool, error) {
	if rec.ID == "" {
		return idempotency.Record{}, false, storeError("acquire", "", errors.New("redisstore: empty record id"))
	}
	if rec.Owner == "" {
		return idempotency.Record{}, false, storeError("acquire", rec.ID,
			errors.New("redisstore: record has no owner: its Complete and Release could not be fenced"))
	}
	reply, err := claimScript.Run(ctx, s.rdb, []string{s.RedisKey(rec.ID)},
		now.Unix(), now.UnixMilli(), rec.Owner,
		rec.ExpiresAt.Unix(), rec.LeaseUntil.UnixMilli(), rec.Validation,
		rec.ExpiresAt.UnixMilli(),
	).Slice()
	if err != nil {
		return idempotency.Record{}, false, storeError("acquire", rec.ID, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return idempotency.Record{}, false, storeError("acquire", rec.ID, err)
	}
	switch code {
	case 0: // claimed; fields are the record replaced, if any
		if len(fields) == 0 {
			return idempotency.Record{}, false, nil
		}
		old, err := decode(rec.ID, fields)
		if err != nil {
			// The claim holds whatever the old record contained.
			return idempotency.Record{ID: rec.ID}, false, nil
		}
		return old, false, nil
	case 1: // refused
		old, err := decode(rec.ID, fields)
		if err != nil {
			return idempotency.Record{}, false, storeError("acquire", rec.ID, fmt.Errorf("redisstore: read existing record: %w", err))
		}
		return old, true, nil
	case 2: // our own claim, sent again
		return idempotency.Record{}, false, nil
	}
	return idempotency.Record{}, false, storeError("acquire", rec.ID, fmt.Errorf("redisstore: unexpected script reply %v", reply))
}

// Complete implements [idempotency.Store.Complete] with one script that
// sets the record COMPLETED with its result and expiry, fenced by owner. A
// record already completed by the same owner (an earlier attempt whose
// reply was lost) is a success and is left as it is. Attached writes are
// refused with [idempotency.ErrAttachUnsupported].
func (s *Store) Complete(ctx context.Context, rec idempotency.Record) error {
	if rec.ID == "" {
		return storeError("complete", "", errors.New("redisstore: empty record id"))
	}
	if err := s.ValidateAttached(rec.ID, rec.Attached); err != nil {
		return storeError("complete", rec.ID, err)
	}
	if rec.Owner == "" {
		return storeError("complete", rec.ID, fmt.Errorf("redisstore: no owner to fence the completion with: %w", idempotency.ErrLeaseLost))
	}
	hasData, data := "0", ""
	if rec.Data != nil {
		hasData, data = "1", string(rec.Data)
	}
	reply, err := completeScript.Run(ctx, s.rdb, []string{s.RedisKey(rec.ID)},
		rec.Owner, rec.ExpiresAt.Unix(), rec.ExpiresAt.UnixMilli(), hasData, data).Slice()
	if err != nil {
		return storeError("complete", rec.ID, err)
	}
	return s.fenced("complete", rec.ID, rec.Owner, reply)
}

// Release implements [idempotency.Store.Release] with one script that
// deletes the record only if it is INPROGRESS and owned by owner.
func (s *Store) Release(ctx context.Context, id, owner string) error {
	if id == "" {
		return storeError("release", "", errors.New("redisstore: empty record id"))
	}
	if owner == "" {
		return storeError("release", id, fmt.Errorf("redisstore: no owner to fence the release with: %w", idempotency.ErrLeaseLost))
	}
	reply, err := releaseScript.Run(ctx, s.rdb, []string{s.RedisKey(id)}, owner).Slice()
	if err != nil {
		return storeError("release", id, err)
	}
	return s.fenced("release", id, owner, reply)
}

// ValidateAttached implements [idempotency.AttachValidator]: Redis cannot
// commit an operation's writes with the completion (they may live on other
// Cluster slots), so any attached write is refused with
// [idempotency.ErrAttachUnsupported] when it is attached, before the
// operation's work is lost.
func (s *Store) ValidateAttached(_ string, writes []any) error {
	if len(writes) > 0 {
		return fmt.Errorf("redisstore: %d attached write(s): %w", len(writes), idempotency.ErrAttachUnsupported)
	}
	return nil
}

// fenced interprets the reply of the completion or release script.
func (s *Store) fenced(op, id, owner string, reply []any) error {
	code, fields, err := parseReply(reply)
	if err != nil {
		return storeError(op, id, err)
	}
	switch code {
	case 0:
		return nil
	case 2: // completed by this owner already
		if op == "complete" {
			return nil
		}
	case 1:
		status, _ := fieldAt(fields, 0)
		own, _ := fieldAt(fields, 1)
		why := "the record is gone"
		switch {
		case status == "":
		case status != string(idempotency.StatusInProgress):
			why = "the record is " + status
		case own == "":
			why = "the record has no lease owner (written by another library)"
		case own != owner:
			why = "the lease was taken over by another owner"
		}
		return storeError(op, id, fmt.Errorf("redisstore: %s: %w", why, idempotency.ErrLeaseLost))
	}
	return storeError(op, id, fmt.Errorf("redisstore: unexpected script reply %v", reply))
}

// parseReply splits a script's reply into its code and the strings after it
// (nil entries become "").
func parseReply(reply []any) (int64, []string, error) {
	if len(reply) == 0 {
		return 0, nil, errors.New("redisstore: empty script reply")
	}
	code, ok := reply[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("redisstore: script reply starts with %T, want an integer", reply[0])
	}
	fields := make([]string, 0, len(reply)-1)
	for _, v := range reply[1:] {
		switch v := v.(type) {
		case string:
			fields = append(fields, v)
		case nil:
			fields = append(fields, "")
		default:
			return 0, nil, fmt.Errorf("redisstore: script reply holds a %T, want strings", v)
		}
	}
	return code, fields, nil
}

func fieldAt(fields []string, i int) (string, bool) {
	if i < len(fields) {
		return fields[i], true
	}
	return "", false
}

// decode reads a record from its hash's fields, as HGETALL lists them.
func decode(id string, kv []string) (idempotency.Record, error) {
	if len(kv)%2 != 0 {
		return idempotency.Record{}, fmt.Errorf("redisstore: record has %d field names and values", len(kv))
	}
	rec := idempotency.Record{ID: id}
	var errs []error
	num := func(name, v string) int64 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("redisstore: field %s = %q is not an integer", name, v))
		}
		return n
	}
	for i := 0; i < len(kv); i += 2 {
		name, v := kv[i], kv[i+1]
		switch name {
		case idempotency.AttrStatus:
			rec.Status = idempotency.Status(v)
		case idempotency.AttrExpiration:
			rec.ExpiresAt = time.Unix(num(name, v), 0)
		case idempotency.AttrLeaseExpiry:
			rec.LeaseUntil = time.UnixMilli(num(name, v))
		case idempotency.AttrData:
			rec.Data = []byte(v)
		case idempotency.AttrValidation:
			rec.Validation = v
		case idempotency.AttrOwner:
			rec.Owner = v
		}
	}
	if rec.Status != idempotency.StatusInProgress && rec.Status != idempotency.StatusCompleted {
		errs = append(errs, fmt.Errorf("redisstore: record has status %q", rec.Status))
	}
	return rec, errors.Join(errs...)
}
