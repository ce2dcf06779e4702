--[[
  A node's heartbeat (docs/cluster.md): records the node with the time of Redis (TIME), so that
  the age of every heartbeat is judged by one clock, never by the nodes' own; returns the whole
  registry with that time, and forgets nodes silent for longer than forgetAfterMs.

  KEYS[1] nodes     hash: nodeId -> "address|version|startedAt|beatAt" (beatAt: Redis TIME, ms)
  KEYS[2] draining  hash: nodeId -> drainedAt (ms): nodes that take no units
  KEYS[3] units     hash: nodeId -> the kinds of units it takes, "relay,partition" (absent: every kind)

  ARGV[1] nodeId ("" : only read)
  ARGV[2] address (node RPC host:port, or "")
  ARGV[3] version
  ARGV[4] startedAt (ms)
  ARGV[5] "1" on a node's first heartbeat: clears its draining flag (a restarted node works again)
  ARGV[6] forgetAfterMs
  ARGV[7] the kinds of units the node takes, comma-separated; "" : every kind

  Returns {now, nodeId1, record1, drainedAt1 ("" when not draining), units1 ("" : every kind), nodeId2, ...}.

  Bounded (issue 22): KEYS[1] holds one field per node of the engine cluster — the live ones and
  those silent for less than ARGV[6] (then forgotten here) — never per unit, member or message,
  so its HGETALL reads as many entries as the cluster has nodes, whatever the groups' sizes.
]]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[1] ~= "" then
  redis.call("HSET", KEYS[1], ARGV[1], ARGV[2] .. "|" .. ARGV[3] .. "|" .. ARGV[4] .. "|" .. now)
  if ARGV[5] == "1" then redis.call("HDEL", KEYS[2], ARGV[1]) end
  if ARGV[7] == "" then redis.call("HDEL", KEYS[3], ARGV[1]) else redis.call("HSET", KEYS[3], ARGV[1], ARGV[7]) end
end
local forget = tonumber(ARGV[6])
local out = { now }
local all = redis.call("HGETALL", KEYS[1])
for i = 1, #all, 2 do
  local beatAt = tonumber(string.match(all[i + 1], "|(%d+)$") or "0")
  if now - beatAt > forget then
    redis.call("HDEL", KEYS[1], all[i])
    redis.call("HDEL", KEYS[2], all[i])
    redis.call("HDEL", KEYS[3], all[i])
  else
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
    out[#out + 1] = redis.call("HGET", KEYS[2], all[i]) or ""
    out[#out + 1] = redis.call("HGET", KEYS[3], all[i]) or ""
  end
end
return out
