--[[
  The registration task's second step (ADR-0021 §4): after writing a batch read from the head of
  a pending queue to the authority, pop exactly the heads equal to what it wrote, in order, and
  stop at the first difference. Another task that wrote the same batch first has popped them
  already, so nothing it did not write is ever dropped; writing an item twice is harmless.

  KEYS[1] ucs_pending   list of pending registrations
  KEYS[2] lease         hash: the user slot's lease (owner, token) — docs/cluster.md

  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3..] the items written, in queue order

  Returns the number of items popped, or -10 when the slot's lease names another owner or a
  newer token (fenced: nothing popped).
]]
--- @include "includes/fenceHolds"
if not fenceHolds(KEYS[2], ARGV[1], ARGV[2]) then return -10 end
local popped = 0
for i = 3, #ARGV do
  if redis.call("LINDEX", KEYS[1], 0) ~= ARGV[i] then break end
  redis.call("LPOP", KEYS[1])
  popped = popped + 1
end
return popped
