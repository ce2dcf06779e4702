--[[
  The stored half of one user's live view (ConversationListService.view), read in one atomic
  step: the badge, the user's version counter (drawn, for a live frame: INCR; else read), the
  stored rows asked for and the choices (prefs) of the rows the process holds records for. One
  call in place of a MULTI of four commands: ioredis builds a Pipeline for each MULTI, and the
  live view is read for every watched user a message touches.

  KEYS[1] badge    hash: total_unread, total_mention, muted_unread
  KEYS[2] version  string: the user's version counter (clversion)
  KEYS[3] rows     hash: conversation hex -> stored row
  KEYS[4] prefs    hash: conversation hex -> the user's choices

  ARGV[1]           "1": draw a new version (INCR), else read it (0 when absent)
  ARGV[2]           n, the number of rows asked for
  ARGV[3 .. 2+n]    conversation hexes of the rows
  ARGV[3+n ..]      conversation hexes whose prefs are read

  Returns { badge as HGETALL gives it, version, the n rows (false: none), the prefs (false: none) },
  the rows and prefs read in slices of 1000 (a user may hold many rows in a window).
]]
local function hmget(key, from, to)
  local out = {}
  local i = from
  while i <= to do
    local last = math.min(to, i + 999)
    local got = redis.call("HMGET", key, unpack(ARGV, i, last))
    for j = 1, #got do out[#out + 1] = got[j] end
    i = last + 1
  end
  return out
end

local version
if ARGV[1] == "1" then
  version = redis.call("INCR", KEYS[2])
else
  version = tonumber(redis.call("GET", KEYS[2]) or "0")
end
local n = tonumber(ARGV[2])
return { redis.call("HGETALL", KEYS[1]), version, hmget(KEYS[3], 3, 2 + n), hmget(KEYS[4], 3 + n, #ARGV) }
