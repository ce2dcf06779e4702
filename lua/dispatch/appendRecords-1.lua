--[[
  Appends a batch of dispatch records to one partition's stream (RedisStreamsDispatchLog.append),
  in the order given: one XADD each, inside one call. The relay appended a batch as one XADD
  command per record: 8,500 commands for 8,500 messages of a busy group in bench/engine-cost,
  each a command object and a reply on the node and a command dispatch in Redis.

  KEYS[1] stream   the partition's stream

  ARGV[1..] records, each as: field count n, then n field names and values alternating
            (t tenant, c conversation, s seq, v version, e entry, r recipients, [k chunk], [p push])

  Returns the ids XADD gave, in order.
]]
local ids = {}
local i = 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  ids[#ids + 1] = redis.call("XADD", KEYS[1], "*", unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return ids
