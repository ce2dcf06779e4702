--[[
  The one registration step of the session projection (ADR-0021 §4, spec 002 §2.2), shared by
  the durable dispatch consumer and the low-latency path. For each entry: ZADD GT the
  conversation into the user's projection (the score only ever grows, so out-of-order events
  cannot move a conversation back); when ZADD reports the member was absent, append the pending
  registration to the user bucket's queue in the same atomic step. Whichever path adds a
  conversation first registers it, exactly once, and a crash can never separate the two writes.

  Variadic: two keys per entry, on the user's {uNNN} tag. On a Redis Cluster the caller sends
  one call per tag; on standalone instances one call per instance.
  KEYS[2i-1] convs of entry i        zset: conversation hex -> created_at (ms) of its latest message
  KEYS[2i]   ucs_pending of its user bucket   list of pending registrations

  ARGV[3i-2] conversation hex
  ARGV[3i-1] created_at (ms)
  ARGV[3i]   pending item "tenantHex|userHex|conversationHex|kind|createdAt"

  Returns the number of entries registered (appended to a pending queue).
]]
local registered = 0
for i = 1, #KEYS / 2 do
  local a = 3 * (i - 1)
  if redis.call("ZADD", KEYS[2 * i - 1], "GT", ARGV[a + 2], ARGV[a + 1]) == 1 then
    redis.call("RPUSH", KEYS[2 * i], ARGV[a + 3])
    registered = registered + 1
  end
end
return registered
