package redisstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/inflate"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// The writes of an operator's tool (cmd/sqsonce-ops): a release and a
// completion fenced on the record as the tool inspected it, not on an owner
// token, so that a claim without an owner can be released or resolved too.

// inspectedFenceLua is the condition of both scripts below: KEYS[1] is
// INPROGRESS, not a release marker, with the owner ARGV[1] (empty for
// none), the expiration ARGV[2], the lease end ARGV[3], the quarantine
// mark ARGV[4] and the strict lease ARGV[5], each empty for a field the
// record had not: an extension since the read fails it.
const inspectedFenceLua = `
local cur = redis.call('HMGET', KEYS[1], 'status', 'lease_owner', 'expiration', 'in_progress_expiration', 'quarantined', 'released_by',
  'strict_lease_expiration')
local function same(v, arg)
  if arg == '' then return v == false end
  return v ~= false and tonumber(v) == tonumber(arg)
end
local fenced = cur[1] == 'INPROGRESS' and (cur[2] or '') == ARGV[1] and same(cur[3], ARGV[2])
  and same(cur[4], ARGV[3]) and same(cur[5], ARGV[4]) and same(cur[7], ARGV[5])
`

// releaseInspectedScript deletes KEYS[1] when inspectedFenceLua holds,
// leaving a release marker as releaseScript does: released_by ARGV[1],
// release_call ARGV[6] (a token of the call), expiring after ARGV[7]
// milliseconds.
//
// Reply: {0} released; {2} released by this call already (its first run
// applied, the reply lost); {1, status, owner, released_by} refused.
var releaseInspectedScript = redis.NewScript(inspectedFenceLua + `
if fenced then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'released_by', ARGV[1], 'release_call', ARGV[6])
  redis.call('PEXPIRE', KEYS[1], ARGV[7])
  return {0}
end
if cur[1] == false and redis.call('HGET', KEYS[1], 'release_call') == ARGV[6] then
  return {2}
end
return {1, cur[1], cur[2], cur[6]}
`)

// completeInspectedScript completes KEYS[1] when inspectedFenceLua holds,
// as completeScript does, and sets its owner to ARGV[6].
//
// ARGV[6..]: owner, expiration_s, expire_at_ms, placement ("none", "plain"
// or "gzip"), data.
//
// Reply: {0} completed; {2, data, data_encoding, data_omitted} COMPLETED
// with owner ARGV[6] already, nothing written; {1, status, owner,
// released_by} refused.
var completeInspectedScript = redis.NewScript(inspectedFenceLua + `
if fenced then
  redis.call('HDEL', KEYS[1], 'data', 'data_encoding', 'data_omitted', 'replaced', 'quarantined')
  redis.call('HSET', KEYS[1], 'status', 'COMPLETED', 'expiration', ARGV[7], 'lease_owner', ARGV[6])
  if ARGV[9] == 'plain' then
    redis.call('HSET', KEYS[1], 'data', ARGV[10])
  elseif ARGV[9] == 'gzip' then
    redis.call('HSET', KEYS[1], 'data', ARGV[10], 'data_encoding', 'gzip')
  end
  redis.call('PEXPIREAT', KEYS[1], ARGV[8])
  return {0}
end
if cur[1] == 'COMPLETED' and cur[2] == ARGV[6] then
  local kept = redis.call('HMGET', KEYS[1], 'data', 'data_encoding', 'data_omitted')
  return {2, kept[1], kept[2], kept[3]}
end
return {1, cur[1], cur[2], cur[6]}
`)

// fenceArgs are the arguments of inspectedFenceLua for found.
func fenceArgs(found driver.Record) []any {
	stamp := func(t time.Time, ms bool) string {
		switch {
		case t.IsZero():
			return ""
		case ms:
			return strconv.FormatInt(t.UnixMilli(), 10)
		}
		return strconv.FormatInt(t.Unix(), 10)
	}
	return []any{found.Owner, stamp(found.ExpiresAt, false), stamp(found.LeaseUntil, true), stamp(found.Quarantined, true),
		stamp(found.StrictLease, true)}
}

// ReleaseInspected releases the INPROGRESS record found, as [Store.Inspect]
// returned it, for an operator: one script that releases it as
// [Store.Release] does, fenced on the record being unchanged since it was
// read (status, owner or none, expiration, lease end, quarantine mark,
// strict lease)
// instead of on an owner token. A record that changed, or is gone, is left
// alone and the error wraps [driver.ErrLeaseLost]. The script sent
// again by go-redis after its first run was applied succeeds.
func (s *Store) ReleaseInspected(ctx context.Context, found driver.Record) error {
	if found.ID == "" {
		return storeError("release", "", errors.New("redisstore: empty record id"))
	}
	marker := releaseMarker
	if d, ok := ctx.Deadline(); ok {
		marker += max(time.Until(d), 0)
	}
	reply, err := s.run(ctx, releaseInspectedScript, found.ID, append(fenceArgs(found), rand.Text(), marker.Milliseconds())...)
	if err != nil {
		return storeError("release", found.ID, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return storeError("release", found.ID, err)
	}
	switch code {
	case 0, 2:
		return nil
	case 1:
		return changed("release", found, fields)
	}
	return storeError("release", found.ID, unexpected(code, fields))
}

// CompleteInspected completes the INPROGRESS record found, as
// [Store.Inspect] returned it, for an operator: one script that sets it
// COMPLETED with done.Data, done.ExpiresAt and done.Owner as its owner
// (found's own, or a new token for a claim that had none), fenced as
// [Store.ReleaseInspected]. Unlike [Store.Complete], it never completes a
// record without its result: a result that does not fit in [WithMaxData]
// even compressed fails with an error and nothing is written. Finding the
// record COMPLETED with done's owner and result (the script sent again
// after its first run was applied) is a success.
func (s *Store) CompleteInspected(ctx context.Context, found, done driver.Record) error {
	if found.ID == "" || done.ID != found.ID {
		return storeError("complete", found.ID, errors.New("redisstore: the completion names another id than the record found"))
	}
	if done.Owner == "" {
		return storeError("complete", found.ID, errors.New("redisstore: the completion has no owner"))
	}
	if err := noAttached(done.Attached); err != nil {
		return storeError("complete", found.ID, err)
	}
	placement, value := placeNone, []byte(nil)
	if done.Data != nil {
		placement, value = placePlain, done.Data
		if len(done.Data) > s.compressAbove || len(done.Data) > s.maxData {
			if z := inflate.Gzip(done.Data); len(z) < len(done.Data) && len(z) <= s.maxData {
				placement, value = placeGzip, z
			}
		}
		if placement == placePlain && len(done.Data) > s.maxData {
			return storeError("complete", found.ID, fmt.Errorf("redisstore: the result (%d bytes) cannot be kept in full: it does not fit in WithMaxData (%d bytes), even compressed; nothing written",
				len(done.Data), s.maxData))
		}
	}
	args := append(fenceArgs(found), done.Owner, done.ExpiresAt.Unix(), done.ExpiresAt.UnixMilli(), placement, value)
	reply, err := s.run(ctx, completeInspectedScript, found.ID, args...)
	if err != nil {
		return storeError("complete", found.ID, err)
	}
	code, fields, err := parseReply(reply)
	if err != nil {
		return storeError("complete", found.ID, err)
	}
	switch code {
	case 0:
		return nil
	case 2:
		if len(reply) == 4 {
			stored, err := decodeData(optional(reply, 1), optional(reply, 2), optional(reply, 3))
			if err == nil && bytes.Equal(stored, done.Data) {
				return nil // this completion, applied by an earlier run
			}
		}
		return storeError("complete", found.ID, fmt.Errorf("redisstore: the record is COMPLETED with another result: %w", driver.ErrLeaseLost))
	case 1:
		return changed("complete", found, fields)
	}
	return storeError("complete", found.ID, unexpected(code, fields))
}

// changed is the error of an operator's write refused by its fence: fields
// are the record's status, its owner and a release marker's owner.
func changed(op string, found driver.Record, fields []string) error {
	status, _ := fieldAt(fields, 0)
	own, _ := fieldAt(fields, 1)
	why := "the record is gone"
	switch {
	case status == "":
	case status != string(driver.StatusInProgress) && status != string(driver.StatusCompleted):
		why = "the record has an unknown status" // never quoted: another writer may have put anything there
	case status != string(driver.StatusInProgress):
		why = "the record is " + status
	case own != found.Owner:
		why = "the lease was taken over by another owner"
	default:
		why = "the record changed since it was inspected (its lease, strict lease, expiry or quarantine mark)"
	}
	return storeError(op, found.ID, fmt.Errorf("redisstore: %s: %w", why, driver.ErrLeaseLost))
}
