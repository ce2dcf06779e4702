--[[
  The membership planner's read: the group's meta and the given users' member entries, in one
  consistent snapshot. Read-only; the committing script (applyMembership) re-checks the version
  and every target, so a plan that went stale in between is refused there, never applied.

  KEYS[1] grpmeta     hash: version, owner, member_count
  KEYS[2] grpmembers  hash: user hex -> "joinedAt|leftAt|state"

  ARGV[1..] users (32 hex)

  Returns {0, version, owner, memberCount, state1, state2, ...}  state "A", "L", "R" or "" (never a member)
          {-3}  no such group
]]
local meta = redis.call("HMGET", KEYS[1], "version", "owner", "member_count")
if not meta[1] then return {-3} end
local out = {0, tonumber(meta[1]), meta[2], tonumber(meta[3])}
if #ARGV > 0 then
  local entries = redis.call("HMGET", KEYS[2], unpack(ARGV))
  for i = 1, #ARGV do
    local e = entries[i]
    out[#out + 1] = e and string.sub(e, -1) or ""
  end
end
return out
