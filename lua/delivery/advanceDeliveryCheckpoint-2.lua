--[[
  Moves the delivery consumer's checkpoint of one dispatch-log partition (issue 27,
  docs/gateway.md "Delivery"), fenced by the partition's lease and compared with the position the
  caller started its step from: a paused old owner can neither move it back (re-pushes) nor past
  records the new owner has not pushed yet (lost pushes).

  KEYS[1] checkpoint   string "offset|streamId"
  KEYS[2] lease        hash: the partition's lease (owner, token) — docs/cluster.md

  ARGV[1] expected position ("" when the caller saw none)
  ARGV[2] new position
  ARGV[3] owner (nodeId; "" without a cluster)
  ARGV[4] fencing token (0 without a cluster)

  Returns {0, newPos}, {-9, currentPos ("" when none)} when another consumer moved it first, or
  {-10, currentPos} when the lease names another owner or a newer token (fenced: nothing written).
]]
--- @include "includes/fenceHolds"
local current = redis.call("GET", KEYS[1]) or ""
if not fenceHolds(KEYS[2], ARGV[3], ARGV[4]) then return {-10, current} end
if current ~= ARGV[1] then return {-9, current} end
redis.call("SET", KEYS[1], ARGV[2])
return {0, ARGV[2]}
