--[[
  Records one issued device token in its user's bounded list (issue 27): drops up to 100 expired
  entries first (an issue is the only writer, so the list never holds more than a bounded number
  of dead ones), refuses when the user already holds the most live tokens, adds the token, and sets
  both keys to expire with the latest token they hold.

  KEYS[1] tokens   zset: score expiresAt ms, member tokenId
  KEYS[2] tokmeta  hash: tokenId -> "device|issuedAtMs|expiresAtMs|keyId"

  ARGV[1] now ms, ARGV[2] tokenId, ARGV[3] expiresAt ms, ARGV[4] the meta value,
  ARGV[5] the most live tokens a user may hold (TOKENS_PER_USER_MAX)

  Returns {0, live tokens after the add}, or {-17, live tokens} when full (nothing written).
]]
local now = tonumber(ARGV[1])
local dead = redis.call("ZRANGE", KEYS[1], "-inf", now, "BYSCORE", "LIMIT", 0, 100)
for _, id in ipairs(dead) do
  redis.call("ZREM", KEYS[1], id)
  redis.call("HDEL", KEYS[2], id)
end
local live = redis.call("ZCARD", KEYS[1])
if live >= tonumber(ARGV[5]) then return { -17, live } end
redis.call("ZADD", KEYS[1], ARGV[3], ARGV[2])
redis.call("HSET", KEYS[2], ARGV[2], ARGV[4])
local last = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", KEYS[1], last[2])
redis.call("PEXPIREAT", KEYS[2], last[2])
return { 0, live + 1 }
