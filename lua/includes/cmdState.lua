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
-- `read|deletedTo|activeAt|updatedAt|lastMsgSeq`; a row written before the last seq was kept has
-- four fields: its last seq is "0" (nothing beyond its read seq is known).
local function cmdParseState(v)
  local r, d, a, u, l = string.match(v, "^(%d+)|(%d+)|(%d+)|(%d+)|?(%d*)$")
  if l == "" then l = "0" end
  return r, d, a, u, l
end
-- A row is unread while the last seq that concerned its user is beyond its effective read seq.
local function cmdIsUnread(r, d, l)
  return tonumber(l) > math.max(tonumber(r), tonumber(d))
end
