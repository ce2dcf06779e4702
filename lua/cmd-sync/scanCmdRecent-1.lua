--[[
  One page of a bucket's recent CMD commits for the catch-up scan (docs/cmd-sync-log.md), with the
  instance's clock read in the same atomic step: every commit whose timestamp is below the
  returned time has completed (scripts run one at a time, and each commit takes TIME when it
  runs), so when the page is not full the scan knows the bucket up to that time, even if it was
  quiet.

  KEYS[1] cmdrecent  zset: score commit ms (Redis TIME), member "tenantHex|type|channelId|seq"

  ARGV[1] min score, inclusive (ms)
  ARGV[2] the most entries to return

  Returns {nowMs, member, score, member, score, ...} in score order (then member order).
]]
local t = redis.call("TIME")
local out = {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
local page = redis.call("ZRANGEBYSCORE", KEYS[1], ARGV[1], "+inf", "WITHSCORES", "LIMIT", 0, tonumber(ARGV[2]))
for i = 1, #page do out[#out + 1] = page[i] end
return out
