--[[
  The membership planner's read: the group's meta and the given users' member entries, in one
  consistent snapshot. Read-only; the committing script (applyMembership) re-checks the version
  and every target, so a plan that went stale in between is refused there, never applied.

  KEYS[1] grpmeta     hash: version, owner, member_count, dissolved_at
  KEYS[2] grpmembers  hash: user hex -> "joinedAt|leftAt|state"

  ARGV[1..] users (32 hex)

  Returns {0, version, owner, memberCount, dissolvedAt, state1, state2, ...}
            dissolvedAt: the group's dissolved_at J, 0 while it is not dissolved (issue 24);
            state "A", "L", "R" or "" (never a member)
          {-3}  no such group
]]
local meta = redis.call("HMGET", KEYS[1], "version", "owner", "member_count", "dissolved_at")
if not meta[1] then return {-3} end
local out = {0, tonumber(meta[1]), meta[2], tonumber(meta[3]), tonumber(meta[4] or "0")}
if #ARGV > 0 then
  local entries = redis.call("HMGET", KEYS[2], unpack(ARGV))
  for i = 1, #ARGV do
    local e = entries[i]
    out[#out + 1] = e and string.sub(e, -1) or ""
  end
end
return out
