--[[
  One history page as a user sees it (ADR-0021 §3): only records inside (joined_at, left_at);
  earliest_available_conversation_seq = max(global earliest, joined_at + 1). A user who never was
  a member gets the same answer as for a group that does not exist.

  KEYS[1] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[2] hist        zset: the conversation history
  KEYS[3] grpmeta     hash: dissolved_at (issue 24: the bound of a dissolved group), earliest_seq
                      (issue 26: retention's global earliest; absent = 1)

  ARGV[1] user (32 hex)
  ARGV[2] after: return records with seq > after
  ARGV[3] limit

  Returns {0, joinedAt, leftAt (-1 while a member), state, earliestAvailable, entry...}
          {-5}  not visible: never a member, or no such group
]]
--- @include "includes/parseMember"
--- @include "includes/visibleBounds"

local joinedAt, upper, leftAt, state = visibleBounds(KEYS[1], KEYS[3], ARGV[1])
if not joinedAt then return {-5} end
-- the global earliest: retention's floor (grpmeta.earliest_seq, issue 26), or the oldest record kept
local globalEarliest = tonumber(redis.call("HGET", KEYS[3], "earliest_seq") or "1")
local first = redis.call("ZRANGE", KEYS[2], 0, 0, "WITHSCORES")
if #first > 0 then globalEarliest = math.max(globalEarliest, tonumber(first[2])) end
local earliest = math.max(globalEarliest, joinedAt + 1)
local lower = math.max(tonumber(ARGV[2]), joinedAt)
local out = {0, joinedAt, leftAt or -1, state, earliest}
local entries = redis.call("ZRANGEBYSCORE", KEYS[2], "(" .. lower, upper, "LIMIT", 0, tonumber(ARGV[3]))
for _, e in ipairs(entries) do out[#out + 1] = e end
return out
