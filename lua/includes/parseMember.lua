-- parseMember(raw) -> joinedAt, leftAt (or nil), state
-- A member-table value is "joinedAt|leftAt|state": state A (ACTIVE), L (LEFT), R (REMOVED);
-- leftAt is empty while ACTIVE. (ADR-0021 §2: visible(u,c) = (joined_at, left_at).)
local function parseMember(raw)
  if not raw then return nil, nil, nil end
  local j, l, s = string.match(raw, "^(%d+)|(%d*)|(%a)$")
  if not j then return nil, nil, nil end
  if l == "" then l = nil else l = tonumber(l) end
  return tonumber(j), l, s
end
