package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// Store is a [driver.Store] on Redis. It is safe for concurrent use;
// create one with [New] at start-up and share it.
type Store struct {
	rdb redis.UniversalClient
	options
}

var _ driver.Store = (*Store)(nil)

// New returns a Store on rdb: a *redis.Client (one node, or Sentinel
// through redis.NewFailoverClient) or a *redis.ClusterClient, built once
// by the caller with ContextTimeoutEnabled set. It refuses a *redis.Ring,
// and a server (every node of a Cluster) whose maxmemory-policy is not
// noeviction, which it reads with INFO memory, else CONFIG GET, under ctx.
// It reports every problem at once.
func New(ctx context.Context, rdb redis.UniversalClient, opts ...Option) (*Store, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	var errs []error
	if rdb == nil {
		errs = append(errs, errors.New("redisstore: client is nil"))
	} else if err := checkClient(rdb); err != nil {
		errs = append(errs, err)
	}
	if err := o.validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := checkServers(ctx, rdb, o.maxData); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Store{rdb: rdb, options: o}, nil
}

func storeError(op, id string, err error) error {
	return &idempotency.StoreError{Op: op, ID: id, Err: err}
}

// RedisKey returns the Redis key of record id.
func (s *Store) RedisKey(id string) string { return s.prefix + id }

// run runs script on the record's key; a key holding another type than a
// hash is reported as such.
func (s *Store) run(ctx context.Context, script *redis.Script, id string, args ...any) ([]any, error) {
	reply, err := script.Run(ctx, s.rdb, []string{s.RedisKey(id)}, args...).Slice()
	if err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") {
		return nil, fmt.Errorf("redisstore: the key holds a value that is not a hash, which this store never "+
			"writes (a record of Powertools' CachePersistenceLayer is a JSON string): %w", err)
	}
	return reply, err
}

// Acquire implements [driver.Store.Acquire] with one script (EVALSHA,
// or EVAL once when the server does not have it cached) that claims the key
// or returns the record that holds it. The record a claim replaced is
// returned without its result; a claim sent again by its owner returns
// the record its first attempt replaced. With [driver.NoTakeover] the
// script takes no lapsed lease over.
func (s *Store) Acquire(ctx context.Context, rec driver.Record, now time.Time, mode driver.ClaimMode) (driver.Record, bool, error) {
	strictArg := "0"
	if mode == driver.NoTakeover {
		strictArg = "1"
	}
	if rec.ID == "" {
		return driver.Record{}, false, storeError("acquire", "", errors.New("redisstore: empty record id"))
	}
	if rec.Owner == "" {
		return driver.Record{}, false, storeError("acquire", rec.ID,
			errors.New("redisstore: record has no owner: its Complete and Release could not be fenced"))
	}
	strictLease := ""
	if !rec.StrictLease.IsZero() {
		strictLease = strconv.FormatInt(rec.StrictLease.UnixMilli(), 10)
	}
	reply, err := s.run(ctx, claimScript, rec.ID,
		now.Unix(), now.UnixMilli(), rec.Owner,
		rec.ExpiresAt.Unix(), rec.LeaseUntil.UnixMilli(), rec.Validation,
		rec.ExpiresAt.UnixMilli(), strictArg, strictLease,
	)
	if err != nil {
		return driver.Record{}, false, storeError("acquire", rec.ID, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return driver.Record{}, false, storeError("acquire", rec.ID, err)
	}
	switch code {
	case 0, 2: // claimed (2: by this owner's earlier attempt); fields are the record replaced, if any
		if len(fields) == 0 {
			return driver.Record{}, false, nil
		}
		old, err := decode(rec.ID, fields)
		if err != nil {
			// The claim holds whatever the old record contained.
			return driver.Record{ID: rec.ID}, false, nil
		}
		return old, false, nil
	case 1: // refused
		old, err := decode(rec.ID, fields)
		if err != nil {
			return driver.Record{}, false, storeError("acquire", rec.ID, fmt.Errorf("redisstore: read existing record: %w", err))
		}
		return old, true, nil
	}
	return driver.Record{}, false, storeError("acquire", rec.ID, unexpected(code, fields))
}

// Complete implements [driver.Store.Complete] with one script that sets
// the record COMPLETED with its result and expiry, fenced by owner. It
// returns the result as stored: nil when it did not fit in [WithMaxData]
// even compressed. A record already completed by the same owner (an
// earlier attempt whose reply was lost, or an operator's under the claim's
// owner) is a success, left as it is, and its stored result is returned.
// Attached writes are refused with [driver.ErrAttachUnsupported]: Redis
// commits nothing with a completion.
func (s *Store) Complete(ctx context.Context, rec driver.Record) ([]byte, error) {
	if rec.ID == "" {
		return nil, storeError("complete", "", errors.New("redisstore: empty record id"))
	}
	if err := noAttached(rec.Attached); err != nil {
		return nil, storeError("complete", rec.ID, err)
	}
	if rec.Owner == "" {
		return nil, storeError("complete", rec.ID, fmt.Errorf("redisstore: no owner to fence the completion with: %w", driver.ErrLeaseLost))
	}
	placement, value := s.place(ctx, rec.ID, rec.Data)
	reply, err := s.run(ctx, completeScript, rec.ID,
		rec.Owner, rec.ExpiresAt.Unix(), rec.ExpiresAt.UnixMilli(), placement, value)
	if err != nil {
		return nil, storeError("complete", rec.ID, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return nil, storeError("complete", rec.ID, err)
	}
	switch code {
	case 0:
		if placement == placeOmitted {
			return nil, nil
		}
		return rec.Data, nil
	case 2: // completed by this owner already: its result as stored then
		if len(reply) != 4 {
			break
		}
		stored, err := decodeData(optional(reply, 1), optional(reply, 2), optional(reply, 3))
		if err != nil {
			return nil, storeError("complete", rec.ID, fmt.Errorf("redisstore: completed by this owner, but the stored result cannot be read: %w", err))
		}
		return stored, nil
	case 1:
		return nil, s.lost("complete", rec.ID, rec.Owner, fields)
	}
	return nil, storeError("complete", rec.ID, unexpected(code, fields))
}

// releaseMarker is how long a release's marker outlives the call's
// deadline (or, without a deadline, the call): the time a retry of the
// release by go-redis can still arrive.
const releaseMarker = time.Minute

// Release implements [driver.Store.Release] with one script that
// deletes the record only if it is INPROGRESS and owned by owner. It leaves
// a marker that claims treat as no record, so that this call's script,
// sent again by go-redis after its first run was applied, succeeds; the
// marker expires a minute after ctx's deadline. Another Release of the
// key, by its owner too, fails with [driver.ErrLeaseLost].
func (s *Store) Release(ctx context.Context, id, owner string) error {
	if id == "" {
		return storeError("release", "", errors.New("redisstore: empty record id"))
	}
	if owner == "" {
		return storeError("release", id, fmt.Errorf("redisstore: no owner to fence the release with: %w", driver.ErrLeaseLost))
	}
	marker := releaseMarker
	if d, ok := ctx.Deadline(); ok {
		marker += max(time.Until(d), 0)
	}
	reply, err := s.run(ctx, releaseScript, id, owner, rand.Text(), marker.Milliseconds())
	if err != nil {
		return storeError("release", id, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return storeError("release", id, err)
	}
	switch code {
	case 0, 2: // released (2: by this call's earlier attempt)
		return nil
	case 1:
		return s.lost("release", id, owner, fields)
	}
	return storeError("release", id, unexpected(code, fields))
}

// noAttached fails with [driver.ErrAttachUnsupported] when writes are
// attached: Redis commits nothing with a completion.
func noAttached(writes []any) error {
	if len(writes) > 0 {
		return fmt.Errorf("redisstore: %d attached write(s): %w", len(writes), driver.ErrAttachUnsupported)
	}
	return nil
}

// lost is the error of a fenced write refused: fields are the record's
// status, its owner and a release marker's owner ("" when absent).
func (s *Store) lost(op, id, owner string, fields []string) error {
	status, _ := fieldAt(fields, 0)
	own, _ := fieldAt(fields, 1)
	releasedBy, _ := fieldAt(fields, 2)
	why := "the record is gone"
	switch {
	case status == "" && releasedBy == owner:
		why = "the record was released by this owner"
	case status == "":
	case status != string(driver.StatusInProgress) && status != string(driver.StatusCompleted):
		why = "the record has an unknown status"
	case status != string(driver.StatusInProgress):
		why = "the record is " + status
	case own == "":
		why = "the record has no lease owner (written by another library)"
	case own != owner:
		why = "the lease was taken over by another owner"
	}
	return storeError(op, id, fmt.Errorf("redisstore: %s: %w", why, driver.ErrLeaseLost))
}

// unexpected reports a script reply the store does not know, without its
// content.
func unexpected(code int64, fields []string) error {
	return fmt.Errorf("redisstore: unexpected script reply (code %d, %d fields)", code, len(fields))
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

// optional returns reply[i] as a string, or nil when the reply holds nil
// (an absent field) there.
func optional(reply []any, i int) *string {
	if i < len(reply) {
		if v, ok := reply[i].(string); ok {
			return &v
		}
	}
	return nil
}

func fieldAt(fields []string, i int) (string, bool) {
	if i < len(fields) {
		return fields[i], true
	}
	return "", false
}
