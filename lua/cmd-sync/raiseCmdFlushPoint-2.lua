--[[
  Raises a user slot's CMD flush point (docs/cmd-sync-log.md): T such that every CMD commit with a
  timestamp before T that concerns the slot's users is durably flushed. Only the slot's owner
  writes it (fenced by the slot's lease), and it never moves back, so a late write of an old
  owner, or of this owner from an older computation, cannot make its successor skip commits.

  KEYS[1] cmdflushpt  string: the flush point, ms
  KEYS[2] lease       hash: the user slot's lease (owner, token) — docs/cluster.md

  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3] T, ms

  Returns {0, stored} (stored = the flush point after the call), or {-10} when the slot's lease
  names another owner or token (fenced: nothing written).
]]
--- @include "includes/fenceHolds"
if not fenceHolds(KEYS[2], ARGV[1], ARGV[2]) then return {-10} end
local current = tonumber(redis.call("GET", KEYS[1]) or "0")
local t = tonumber(ARGV[3])
if t > current then
  redis.call("SET", KEYS[1], t)
  current = t
end
return {0, current}
