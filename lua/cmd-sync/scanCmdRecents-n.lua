--[[
  The first page of many buckets' recent CMD commits for one catch-up round (docs/cmd-sync-log.md):
  scanCmdRecent-1.lua over every bucket an instance holds, in one call instead of one per bucket
  (256 calls a second per node otherwise, nearly all of them answering "nothing new"). The clock
  is read once, in the same atomic step as every page: every commit whose timestamp is below the
  returned time has completed, in each bucket read here.

  Variadic: one key per bucket; on a Redis Cluster the caller sends one call per hash tag.
  KEYS[i] cmdrecent of bucket i   zset: score commit ms (Redis TIME), member "tenantHex|type|channelId|seq"

  ARGV[2i-1] min score of bucket i, inclusive (ms)
  ARGV[2i]   the most entries to return for bucket i

  Returns {nowMs, n1, member, score, ... (n1 pairs), n2, member, score, ...}: per bucket in KEYS
  order, its entry count then its entries in score order (then member order).
]]
local t = redis.call("TIME")
local out = {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
for i = 1, #KEYS do
  local page = redis.call("ZRANGEBYSCORE", KEYS[i], ARGV[2 * i - 1], "+inf", "WITHSCORES", "LIMIT", 0, tonumber(ARGV[2 * i]))
  out[#out + 1] = #page / 2
  for j = 1, #page do out[#out + 1] = page[j] end
end
return out
