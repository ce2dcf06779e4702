--[[
  Creates a group: meta at member version 1 and the initial members with joined_at = 0
  (ADR-0021 §2: the initial cohort sees the conversation from its start; no control message).

  KEYS[1] grpmeta     hash: version, owner, member_count, created_at
  KEYS[2] grpmembers  hash: user hex -> "joinedAt|leftAt|state" (the member set and the intervals)

  ARGV[1] owner (32 hex)
  ARGV[2] created_at (ms)
  ARGV[3..] initial members (32 hex, owner included; a repeated id counts once)

  Returns {0, version, memberCount}
          {-4}  the group already exists
]]
if redis.call("EXISTS", KEYS[1]) == 1 then return {-4} end
local n = 0
for i = 3, #ARGV do
  n = n + redis.call("HSET", KEYS[2], ARGV[i], "0||A")
end
redis.call("HSET", KEYS[1], "version", 1, "owner", ARGV[1], "member_count", n, "created_at", ARGV[2])
return {0, 1, n}
