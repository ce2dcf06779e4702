--[[
  The registration task's second step (ADR-0021 §4): after writing a batch read from the head of
  a pending queue to the authority, pop exactly the heads equal to what it wrote, in order, and
  stop at the first difference. Another task that wrote the same batch first has popped them
  already, so nothing it did not write is ever dropped; writing an item twice is harmless.

  KEYS[1] ucs_pending   list of pending registrations

  ARGV[1..] the items written, in queue order

  Returns the number of items popped.
]]
local popped = 0
for i = 1, #ARGV do
  if redis.call("LINDEX", KEYS[1], 0) ~= ARGV[i] then break end
  redis.call("LPOP", KEYS[1])
  popped = popped + 1
end
return popped
