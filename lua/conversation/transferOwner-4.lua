--[[
  Transfers a group's ownership to a current member, as a member-version change with
  compare-and-set (check version V -> set owner -> version V+1), and nothing else: the member set,
  the intervals, the audience and the history do not change, so no CONTROL message is recorded
  (spec 000's membership payload has the ops join, leave and remove only; the admin audit log is
  the record of a transfer).

  The version still moves, so that a change planned against the old owner (the recorded sender of
  an admin change, ADR-0021 §2) or an --expect-version compare-and-set sees it. A group message
  still undispatched at an older version expands its audience by undoing the deltas down to its
  version (loadForDispatch), so a delta with no targets ("4|") is written for V+1 while anything
  is pending, exactly like applyMembership writes its own.

  KEYS[1] grpmeta     hash: version, owner, member_count, dissolved_at
  KEYS[2] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[3] grpdeltas   hash: version -> "op|targets"
  KEYS[4] vpending    zset: score version, member seq — undispatched group-audience messages

  ARGV[1] V, the member version the transfer was planned at
  ARGV[2] the new owner (32 hex)

  Returns {0, version, previousOwner}  the owner is now ARGV[2], at member version V+1
          {1, version}                 ARGV[2] already is the owner: nothing written
          {-1, version}                membership changed: the member version is no longer V
          {-3}                         no such group
          {-6, target}                 the new owner is not a current (ACTIVE) member
          {-15, J}                     the group was dissolved at J: nothing changes after it (issue 24)
]]
--- @include "includes/parseMember"

local meta = redis.call("HMGET", KEYS[1], "version", "owner", "dissolved_at")
if not meta[1] then return {-3} end
if meta[3] then return {-15, tonumber(meta[3])} end
if meta[2] == ARGV[2] then return {1, tonumber(meta[1])} end
if meta[1] ~= ARGV[1] then return {-1, tonumber(meta[1])} end
local _, _, state = parseMember(redis.call("HGET", KEYS[2], ARGV[2]))
if state ~= "A" then return {-6, ARGV[2]} end

local version = tonumber(meta[1]) + 1
redis.call("HSET", KEYS[1], "version", version, "owner", ARGV[2])
if redis.call("ZCARD", KEYS[4]) > 0 then
  redis.call("HSET", KEYS[3], version, "4|")
else
  redis.call("DEL", KEYS[3])
end
return {0, version, meta[2]}
