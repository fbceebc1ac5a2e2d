package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/storetest"
)

// TestStrictAcrossProcesses: a strict guard and a default guard in two
// processes on one Redis (storetest.StrictAcrossProcesses): the strict call
// outlives its lease, the default call does not run the operation.
func TestStrictAcrossProcesses(t *testing.T) {
	storetest.StrictAcrossProcesses(t, func(t *testing.T) (driver.Store, []string) {
		s := newStore(t, newClient(t)) // in a child, the parent's server (redisserver.EnvAddr)
		return s, []string{redisserver.EnvAddr + "=" + server.Addr(t)}
	})
}

// TestOlderReleaseKeepsOffStrictClaim: the claim script of an older
// release (claimScript2e43541) does not take over a strict claim whose
// lease lapsed (storetest.OlderReleaseKeepsOff).
func TestOlderReleaseKeepsOffStrictClaim(t *testing.T) {
	rdb := newClient(t)
	s := newStore(t, rdb)
	storetest.OlderReleaseKeepsOff(t, s, func(t *testing.T, id string, now time.Time) bool {
		t.Helper()
		reply, err := claimScript2e43541.Run(context.Background(), rdb, []string{s.RedisKey(id)},
			now.Unix(), now.UnixMilli(), "older-release",
			now.Add(time.Hour).Unix(), now.Add(time.Minute).UnixMilli(), "",
			now.Add(time.Hour).UnixMilli(), "0",
		).Slice()
		if err != nil {
			t.Fatal(err)
		}
		code, ok := reply[0].(int64)
		if !ok || code == 2 {
			t.Fatalf("older claim script: reply %v", reply)
		}
		return code == 0
	})
}

// claimScript2e43541 is redisstore's claim script as of commit 2e43541,
// before strict claims were written as they are now: what an older
// release, still running beside this one, runs.
var claimScript2e43541 = redis.NewScript(`
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
if #replaced > 0 then
  redis.call('HSET', KEYS[1], 'replaced', cmsgpack.pack(replaced))
end
redis.call('PEXPIREAT', KEYS[1], ARGV[7])
local reply = {0}
for i = 1, #replaced do reply[i + 1] = replaced[i] end
return reply
`)
