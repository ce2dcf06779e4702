--[[
  Moves a user's read_conversation_seq forward, never back, clamped to the highest seq the user
  may see (the visible head; left_at - 1 for a user who left).

  KEYS[1] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[2] hist        zset: the conversation history
  KEYS[3] readseq     hash: user hex -> read_conversation_seq
  KEYS[4] grpmeta     hash: dissolved_at (issue 24: the bound of a dissolved group)

  ARGV[1] user (32 hex)
  ARGV[2] seq the user has read up to

  Returns {0, readSeq}  the read seq after the call
          {-5}          not visible: never a member, or no such group
]]
--- @include "includes/parseMember"
--- @include "includes/visibleBounds"

local joinedAt, upper = visibleBounds(KEYS[1], KEYS[4], ARGV[1])
if not joinedAt then return {-5} end
local head = redis.call("ZREVRANGEBYSCORE", KEYS[2], upper, "-inf", "WITHSCORES", "LIMIT", 0, 1)
local headSeq = 0
if #head > 0 then headSeq = tonumber(head[2]) end
local target = math.min(tonumber(ARGV[2]), headSeq)
local current = tonumber(redis.call("HGET", KEYS[3], ARGV[1]) or "0")
if target > current then
  redis.call("HSET", KEYS[3], ARGV[1], target)
  current = target
end
return {0, current}
