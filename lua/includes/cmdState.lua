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
local function cmdParseState(v)
  local r, d, a, u = string.match(v, "^(%d+)|(%d+)|(%d+)|(%d+)$")
  return r, d, a, u
end
