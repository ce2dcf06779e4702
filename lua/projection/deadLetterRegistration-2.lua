--[[
  The registration task's way past an item it cannot decode (a queue entry written by hand or
  corrupted): moves it from the head of the pending queue to the bucket's dead-letter list, so
  the queue behind it keeps moving, and keeps only the newest ARGV[2] dead letters. Only the
  exact head is moved: if another task popped or moved it first, nothing happens.

  KEYS[1] ucs_pending   list of pending registrations
  KEYS[2] ucs_dead      list of dead letters (same user bucket)

  ARGV[1] the head item to move
  ARGV[2] how many dead letters to keep (≥ 1)

  Returns 1 when the item was moved, 0 when the head was something else.
]]
if redis.call("LINDEX", KEYS[1], 0) ~= ARGV[1] then return 0 end
redis.call("LPOP", KEYS[1])
redis.call("RPUSH", KEYS[2], ARGV[1])
redis.call("LTRIM", KEYS[2], -tonumber(ARGV[2]), -1)
return 1
