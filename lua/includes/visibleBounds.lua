-- visibleBounds(grpmembersKey, grpmetaKey, user) -> joinedAt, upper, leftAt, state
-- The user's visible interval (joined_at, left_at) (ADR-0021 §3): records with
-- joined_at < seq < left_at; upper is the highest visible seq bound (left_at - 1, or "+inf").
-- A dissolved group (grpmeta.dissolved_at = J, issue 24) bounds everyone at J: the dissolve event
-- itself is visible (it is how a member's devices learn of it), nothing after it. A member who
-- left before J keeps their own lower bound. One HGET, whatever the group's size: the dissolve
-- rewrites no interval, this is where it takes effect.
-- Returns nil when the user never was a member (or the group does not exist).
local function visibleBounds(grpmembersKey, grpmetaKey, user)
  local joinedAt, leftAt, state = parseMember(redis.call("HGET", grpmembersKey, user))
  if not joinedAt then return nil end
  local upper = nil
  if leftAt then upper = leftAt - 1 end
  local dissolvedAt = tonumber(redis.call("HGET", grpmetaKey, "dissolved_at") or "")
  if dissolvedAt and (upper == nil or dissolvedAt < upper) then upper = dissolvedAt end
  if upper == nil then return joinedAt, "+inf", leftAt, state end
  return joinedAt, tostring(upper), leftAt, state
end
