--[[
  Gives a unit up (its owner stopped its work on it): owner "" and the token bumped, so that
  nothing the releasing node still has in flight can write with its token, and another node may
  take the unit at once.

  KEYS[1] lease  hash: owner, token, since

  ARGV[1] owner (the caller)
  ARGV[2] token (the caller's)

  Returns {0, newToken} or {-11, currentOwner, currentToken} (not the caller's any more; nothing written).
]]
local l = redis.call("HMGET", KEYS[1], "owner", "token")
local owner, token = l[1] or "", tonumber(l[2] or "0")
if owner ~= ARGV[1] or token ~= tonumber(ARGV[2]) then return { -11, owner, token } end
local t = redis.call("TIME")
redis.call("HSET", KEYS[1], "owner", "", "token", token + 1,
  "since", tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return { 0, token + 1 }
