--[[
  Revokes one device token (issue 27): a mark that expires when the token does (the verifier
  refuses while it exists; after it the token is expired anyway), and the token leaves its user's
  list. Idempotent: a second call finds the mark and says so.

  KEYS[1] tokens   zset: score expiresAt ms, member tokenId
  KEYS[2] tokmeta  hash: tokenId -> "device|issuedAtMs|expiresAtMs|keyId"
  KEYS[3] tokrev   string: the token's revocation mark

  ARGV[1] now ms, ARGV[2] tokenId, ARGV[3] the token's expiresAt ms

  Returns {0, 1 when newly revoked or 0 when it already was}; {0, 0} as well for a token already
  expired (nothing to keep).
]]
local now, exp = tonumber(ARGV[1]), tonumber(ARGV[3])
redis.call("ZREM", KEYS[1], ARGV[2])
redis.call("HDEL", KEYS[2], ARGV[2])
if exp <= now then return { 0, 0 } end
if redis.call("EXISTS", KEYS[3]) == 1 then return { 0, 0 } end
redis.call("SET", KEYS[3], "1", "PXAT", exp)
return { 0, 1 }
