-- Helpers of the durable CMD conversation state (lua/cmd-sync/): numbers travel as the decimal
-- strings the caller sent (tostring of a large Lua number would print 1.7e+12), so a max merge
-- keeps whichever string is numerically larger.
local function cmdMax(a, b)
  if a == nil then return b end
  if tonumber(b) > tonumber(a) then return b end
  return a
end
-- The index member: user ref | (2^53-1 - activeAt) as 14 hex digits | type as 3 digits | id.
-- Formatted in two 28-bit halves so that no %x ever sees a number beyond 32 bits.
local function cmdActiveMember(ref, ctype, id, activeAt)
  local inv = 9007199254740991 - tonumber(activeAt)
  local hi = math.floor(inv / 268435456)
  local lo = inv - hi * 268435456
  return ref .. "|" .. string.format("%07x%07x", hi, lo) .. "|" .. string.format("%03d", tonumber(ctype)) .. "|" .. id
end
-- `read|deletedTo|activeAt|updatedAt|lastMsgSeq`. A row written before the last seq was kept has
-- four fields: its last seq is nil, unknown (issue 23: commands beyond its read seq may be waiting).
local function cmdParseState(v)
  local r, d, a, u, l = string.match(v, "^(%d+)|(%d+)|(%d+)|(%d+)|?(%d*)$")
  if l == "" then l = nil end
  return r, d, a, u, l
end
-- The stored value; a row whose last seq is still unknown keeps the four fields of the old code.
local function cmdStateValue(r, d, a, u, l)
  if l == nil then return r .. "|" .. d .. "|" .. a .. "|" .. u end
  return r .. "|" .. d .. "|" .. a .. "|" .. u .. "|" .. l
end
-- A row is unread while the last seq that concerned its user is beyond its effective read seq;
-- an unknown last seq counts as unread until a sync has looked (docs/cmd-sync-core.md, upgrade).
local function cmdIsUnread(r, d, l)
  if l == nil then return true end
  return tonumber(l) > math.max(tonumber(r), tonumber(d))
end
