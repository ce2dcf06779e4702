-- visibleBounds(grpmembersKey, user) -> joinedAt, upper, leftAt, state
-- The user's visible interval (joined_at, left_at) (ADR-0021 §3): records with
-- joined_at < seq < left_at; upper is the highest visible seq bound (left_at - 1, or "+inf").
-- Returns nil when the user never was a member (or the group does not exist).
local function visibleBounds(grpmembersKey, user)
  local joinedAt, leftAt, state = parseMember(redis.call("HGET", grpmembersKey, user))
  if not joinedAt then return nil end
  local upper = "+inf"
  if leftAt then upper = tostring(leftAt - 1) end
  return joinedAt, upper, leftAt, state
end
