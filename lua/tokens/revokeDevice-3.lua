--[[
  Revokes every token of one device of a user (issue 27): a mark holding the revocation time (the
  verifier refuses a token of the device issued at or before it), kept TOKEN_TTL_MAX_MS (no token
  issued before it lives longer), never moved back; the device's tokens leave the user's list. The
  list holds at most TOKENS_PER_USER_MAX tokens, so the walk over it is bounded.

  KEYS[1] tokens     zset: score expiresAt ms, member tokenId
  KEYS[2] tokmeta    hash: tokenId -> "device|issuedAtMs|expiresAtMs|keyId"
  KEYS[3] tokdevrev  string: revocation time ms

  ARGV[1] now ms (the revocation time), ARGV[2] device, ARGV[3] TOKEN_TTL_MAX_MS

  Returns {0, the revocation time in force, tokenId, meta, tokenId, meta, ...} (the tokens taken
  off the list).
]]
local now = tonumber(ARGV[1])
local mark = now
local old = tonumber(redis.call("GET", KEYS[3]) or "0")
if old > mark then mark = old end
redis.call("SET", KEYS[3], mark, "PXAT", mark + tonumber(ARGV[3]))
local out = { 0, mark }
local prefix = ARGV[2] .. "|"
local all = redis.call("HGETALL", KEYS[2])
for i = 1, #all, 2 do
  local id, meta = all[i], all[i + 1]
  if string.sub(meta, 1, #prefix) == prefix then
    redis.call("ZREM", KEYS[1], id)
    redis.call("HDEL", KEYS[2], id)
    out[#out + 1] = id
    out[#out + 1] = meta
  end
end
return out
