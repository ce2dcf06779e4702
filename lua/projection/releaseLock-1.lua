--[[
  Releases a lock taken with SET NX PX only if this holder still owns it (a lock that expired
  and was taken by someone else is left alone).

  KEYS[1] the lock   string: the holder's token

  ARGV[1] token

  Returns 1 when released, 0 when the lock was not ours (or gone).
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end
return 0
