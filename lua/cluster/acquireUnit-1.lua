--[[
  Takes a unit of work (relay bucket, dispatch partition, user slot) by compare-and-set on the
  owner the caller observed, bumping the fencing token: two nodes that saw the same dead or
  released owner cannot both win, and every earlier holder's token is refused from now on.

  KEYS[1] lease  hash: owner (nodeId, "" released), token (only grows), since (Redis TIME, ms)

  ARGV[1] expected owner ("" for none or released)
  ARGV[2] expected token (0 when there is no lease)
  ARGV[3] new owner

  Returns {0, newToken} or {-11, currentOwner, currentToken} (the lease moved; nothing written).
]]
local l = redis.call("HMGET", KEYS[1], "owner", "token")
local owner, token = l[1] or "", tonumber(l[2] or "0")
if owner ~= ARGV[1] or token ~= tonumber(ARGV[2]) then return { -11, owner, token } end
local t = redis.call("TIME")
redis.call("HSET", KEYS[1], "owner", ARGV[3], "token", token + 1,
  "since", tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return { 0, token + 1 }
