package redisstore

import "github.com/redis/go-redis/v9"

// The scripts take one key, KEYS[1], the record's hash, so that they run on
// one Redis Cluster slot. The hash's fields are named in the package
// documentation. Each script reads and writes the record atomically: Redis
// runs one script at a time.
//
// Each script is idempotent for its caller: go-redis sends a command
// again after a read timeout, and a script whose first run was applied
// must then report what that run did. So a claim keeps what it replaced
// (the field replaced), a completion recognises its own owner's completed
// record, and a release leaves a marker (the fields released_by and
// release_call) that claims treat as no record. A script sent again by
// go-redis carries the same arguments; a new call of the caller's does
// not (Release's call token), so only the former is recognised.

// claimScript claims KEYS[1] when no record exists (or only a release
// marker), the record expired (expiration < now in epoch seconds), or it
// is INPROGRESS with its lease passed (in_progress_expiration < now in
// epoch milliseconds).
//
// ARGV: now_s, now_ms, owner, expiration_s, lease_ms, validation,
// expire_at_ms, strict ("1": a lapsed lease is not taken over, for
// a claim with driver.NoTakeover; "0" otherwise), strict_lease_ms (a strict claim's lease
// end, written to strict_lease_expiration; "" for none).
//
// Reply: {0, fields...} claimed, replacing the record whose fields follow
// (none for a free key); {1, fields...} refused, the whole record follows
// (HGETALL); {2, fields...} the record is this owner's own claim, sent
// again: the fields of the record that claim replaced follow. A replaced
// record's fields leave out its result.
var claimScript = redis.NewScript(`
local cur = redis.call('HGETALL', KEYS[1])
local replaced = {}
if #cur > 0 then
  local r = {}
  for i = 1, #cur, 2 do r[cur[i]] = cur[i + 1] end
  if r['status'] == nil and r['released_by'] ~= nil then
    cur = {}
  else
    local exp = tonumber(r['expiration'])
    local lease = tonumber(r['in_progress_expiration'])
    local expired = exp ~= nil and exp < tonumber(ARGV[1])
    local lapsed = ARGV[8] ~= '1' and r['status'] == 'INPROGRESS' and lease ~= nil and lease < tonumber(ARGV[2])
    if not (expired or lapsed) then
      if r['status'] == 'INPROGRESS' and r['lease_owner'] == ARGV[3] then
        local reply = {2}
        if r['replaced'] ~= nil then
          local prev = cmsgpack.unpack(r['replaced'])
          for i = 1, #prev do reply[i + 1] = prev[i] end
        end
        return reply
      end
      local reply = {1}
      for i = 1, #cur do reply[i + 1] = cur[i] end
      return reply
    end
    for i = 1, #cur, 2 do
      local f = cur[i]
      if f ~= 'data' and f ~= 'data_encoding' and f ~= 'data_omitted' and f ~= 'replaced' then
        replaced[#replaced + 1] = f
        replaced[#replaced + 1] = cur[i + 1]
      end
    end
  end
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], 'status', 'INPROGRESS', 'expiration', ARGV[4],
  'in_progress_expiration', ARGV[5], 'lease_owner', ARGV[3])
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[1], 'validation', ARGV[6])
end
if ARGV[9] ~= '' then
  redis.call('HSET', KEYS[1], 'strict_lease_expiration', ARGV[9])
end
if #replaced > 0 then
  redis.call('HSET', KEYS[1], 'replaced', cmsgpack.pack(replaced))
end
redis.call('PEXPIREAT', KEYS[1], ARGV[7])
local reply = {0}
for i = 1, #replaced do reply[i + 1] = replaced[i] end
return reply
`)

// completeScript completes KEYS[1] when it is INPROGRESS and owned by
// ARGV[1].
//
// ARGV: owner, expiration_s, expire_at_ms, placement ("none", "plain",
// "gzip" or "omitted"), data.
//
// Reply: {0} completed; {2, data, data_encoding, data_omitted} already
// completed by this owner (an earlier attempt whose reply was lost),
// nothing written, the result as that attempt stored it; {1, status,
// owner, released_by} refused, with the record's status and owner and
// the release marker's owner (nil when absent).
var completeScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'lease_owner', 'released_by')
if cur[1] == 'INPROGRESS' and cur[2] == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'data', 'data_encoding', 'data_omitted', 'replaced', 'quarantined')
  redis.call('HSET', KEYS[1], 'status', 'COMPLETED', 'expiration', ARGV[2])
  if ARGV[4] == 'plain' then
    redis.call('HSET', KEYS[1], 'data', ARGV[5])
  elseif ARGV[4] == 'gzip' then
    redis.call('HSET', KEYS[1], 'data', ARGV[5], 'data_encoding', 'gzip')
  elseif ARGV[4] == 'omitted' then
    redis.call('HSET', KEYS[1], 'data_omitted', 'true')
  end
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
  return {0}
end
if cur[1] == 'COMPLETED' and cur[2] == ARGV[1] then
  local kept = redis.call('HMGET', KEYS[1], 'data', 'data_encoding', 'data_omitted')
  return {2, kept[1], kept[2], kept[3]}
end
return {1, cur[1], cur[2], cur[3]}
`)

// releaseScript deletes KEYS[1] when it is INPROGRESS and owned by ARGV[1],
// leaving in its place a marker that expires after ARGV[3] milliseconds:
// the fields released_by, ARGV[1], and release_call, ARGV[2], a token of
// the Release call.
//
// Reply: {0} deleted; {2} already released by this call (an earlier
// attempt whose reply was lost); {1, status, owner, released_by} refused,
// as completeScript.
var releaseScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'lease_owner', 'released_by', 'release_call')
if cur[1] == 'INPROGRESS' and cur[2] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'released_by', ARGV[1], 'release_call', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {0}
end
if cur[1] == false and cur[3] == ARGV[1] and cur[4] == ARGV[2] then
  return {2}
end
return {1, cur[1], cur[2], cur[3]}
`)

// quarantineScript marks KEYS[1] quarantined when it is INPROGRESS, owned
// by ARGV[1], with expiration ARGV[2], its lease before ARGV[3] and no
// quarantined field: it sets quarantined to ARGV[3] and the lease to the
// expiration, in epoch milliseconds. The lease is Record.LeaseEnd's:
// strict_lease_expiration on a record whose in_progress_expiration is at
// its expiration (a strict claim), else in_progress_expiration.
//
// ARGV: owner, expiration_s, now_ms.
//
// Reply: {0, fields...} quarantined, the record follows (in progress, it
// has no result); {1, fields...} refused, the record as found follows,
// with its result when it is COMPLETED, so that a guard replays the
// stored result (none when there is no record, or only a release marker).
// A script sent again after its first run was applied finds the record
// quarantined and is refused with it: the caller sees the key quarantined
// either way.
var quarantineScript = redis.NewScript(`
local cur = redis.call('HGETALL', KEYS[1])
local r, rest = {}, {}
for i = 1, #cur, 2 do
  r[cur[i]] = cur[i + 1]
  local f = cur[i]
  if f ~= 'replaced' then
    rest[#rest + 1] = f
    rest[#rest + 1] = cur[i + 1]
  end
end
if r['status'] == nil then
  return {1}
end
local lease = tonumber(r['in_progress_expiration'])
local strict_lease = tonumber(r['strict_lease_expiration'])
local exp = tonumber(r['expiration'])
if strict_lease ~= nil and lease ~= nil and exp ~= nil and lease >= exp * 1000 then
  lease = strict_lease
end
if r['status'] == 'INPROGRESS' and (r['lease_owner'] or '') == ARGV[1] and exp ~= nil and exp == tonumber(ARGV[2])
    and lease ~= nil and lease < tonumber(ARGV[3]) and r['quarantined'] == nil then
  local lease_end = string.format('%.0f', exp * 1000)
  redis.call('HSET', KEYS[1], 'quarantined', ARGV[3], 'in_progress_expiration', lease_end)
  local reply = {0}
  for i = 1, #rest, 2 do
    reply[#reply + 1] = rest[i]
    if rest[i] == 'in_progress_expiration' then
      reply[#reply + 1] = lease_end
    else
      reply[#reply + 1] = rest[i + 1]
    end
  end
  reply[#reply + 1] = 'quarantined'
  reply[#reply + 1] = ARGV[3]
  return reply
end
local reply = {1}
for i = 1, #rest do reply[i + 1] = rest[i] end
return reply
`)

// extendScript moves the lease of KEYS[1] when it is INPROGRESS, owned by
// ARGV[1], has no quarantined field and has not expired (expiration >=
// ARGV[2], epoch seconds): it sets the field ARGV[3]
// (in_progress_expiration, or a strict claim's strict_lease_expiration)
// to ARGV[4], epoch milliseconds, and nothing else. A script sent again
// after its first run was applied sets the same value, and succeeds.
//
// Reply: {0} extended; {1, status, owner, released_by, quarantined}
// refused, with the record's fields (nil when absent).
var extendScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'lease_owner', 'released_by', 'quarantined', 'expiration')
local exp = tonumber(cur[5])
if cur[1] == 'INPROGRESS' and cur[2] == ARGV[1] and cur[4] == false and exp ~= nil and exp >= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
  return {0}
end
return {1, cur[1], cur[2], cur[3], cur[4]}
`)
