package redisstore

import "github.com/redis/go-redis/v9"

// The scripts take one key, KEYS[1], the record's hash, so that they run on
// one Redis Cluster slot. The hash's fields are the record's attribute
// names (see the package documentation). Each script reads and writes the
// record atomically: Redis runs one script at a time.

// claimScript claims KEYS[1] when no record exists, the record expired
// (expiration < now in epoch seconds), or it is INPROGRESS with its lease
// passed (in_progress_expiration < now in epoch milliseconds).
//
// ARGV: now_s, now_ms, owner, expiration_s, lease_ms, validation,
// expire_at_ms.
//
// Reply: {0} claimed a free key; {0, fields...} claimed, replacing the
// record whose fields (HGETALL) follow; {1, fields...} refused, the
// existing record follows; {2} the record is this owner's own claim.
var claimScript = redis.NewScript(`
local cur = redis.call('HGETALL', KEYS[1])
if #cur > 0 then
  local r = {}
  for i = 1, #cur, 2 do r[cur[i]] = cur[i + 1] end
  local exp = tonumber(r['expiration'])
  local lease = tonumber(r['in_progress_expiration'])
  local expired = exp ~= nil and exp < tonumber(ARGV[1])
  local lapsed = r['status'] == 'INPROGRESS' and lease ~= nil and lease < tonumber(ARGV[2])
  if not (expired or lapsed) then
    if r['status'] == 'INPROGRESS' and r['lease_owner'] == ARGV[3] then
      return {2}
    end
    local reply = {1}
    for i = 1, #cur do reply[i + 1] = cur[i] end
    return reply
  end
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], 'status', 'INPROGRESS', 'expiration', ARGV[4],
  'in_progress_expiration', ARGV[5], 'lease_owner', ARGV[3])
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[1], 'validation', ARGV[6])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[7])
local reply = {0}
for i = 1, #cur do reply[i + 1] = cur[i] end
return reply
`)

// completeScript completes KEYS[1] when it is INPROGRESS and owned by
// ARGV[1].
//
// ARGV: owner, expiration_s, expire_at_ms, has_data ("1" or "0"), data.
//
// Reply: {0} completed; {2} already completed by this owner (an earlier
// attempt whose reply was lost), nothing written; {1, status, owner}
// refused, with the record's status and owner (nil when absent).
var completeScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'lease_owner')
if cur[1] == 'INPROGRESS' and cur[2] == ARGV[1] then
  redis.call('HSET', KEYS[1], 'status', 'COMPLETED', 'expiration', ARGV[2])
  if ARGV[4] == '1' then
    redis.call('HSET', KEYS[1], 'data', ARGV[5])
  else
    redis.call('HDEL', KEYS[1], 'data')
  end
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
  return {0}
end
if cur[1] == 'COMPLETED' and cur[2] == ARGV[1] then
  return {2}
end
return {1, cur[1], cur[2]}
`)

// releaseScript deletes KEYS[1] when it is INPROGRESS and owned by ARGV[1].
//
// Reply: {0} deleted; {1, status, owner} refused, as completeScript.
var releaseScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'lease_owner')
if cur[1] == 'INPROGRESS' and cur[2] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {0}
end
return {1, cur[1], cur[2]}
`)
