--[[
  Appends a batch of dispatch records to one partition's stream (RedisStreamsDispatchLog.append),
  in the order given: one XADD each, inside one call. The relay appended a batch as one XADD
  command per record: 8,500 commands for 8,500 messages of a busy group in bench/engine-cost,
  each a command object and a reply on the node and a command dispatch in Redis.

  It also answers the id of the record the batch follows: the stream's newest record before the
  first XADD, in the same atomic step. A process that knows what came right before each record it
  appended knows when a run of its own records follows a consumer's position with nothing between
  them (no other process's record), and serves that run from memory without reading the stream.

  KEYS[1] stream   the partition's stream

  ARGV[1..] records, each as: field count n, then n field names and values alternating
            (t tenant, c conversation, s seq, v version, e entry, r recipients, [k chunk], [p push])

  Returns {previous, id1, id2, ...}: the id of the newest record before the batch ("" when the
  stream holds none), then the ids XADD gave, in order. {} when there is nothing to append.
]]
if #ARGV == 0 then return {} end
local newest = redis.call("XREVRANGE", KEYS[1], "+", "-", "COUNT", 1)
local out = {newest[1] and newest[1][1] or ""}
local i = 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  out[#out + 1] = redis.call("XADD", KEYS[1], "*", unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return out
