--[[
  Writes conversation-list rows of ONE user and keeps their UserBadgeState in the same atomic
  step (spec 002 §4): per row a compare-and-set against the row the caller computed from, the
  badge moved by (new contribution - old contribution), one new per-user projection version
  stamped on every row written (the role of projection_mailbox_seq, §5.1) with its
  driving_event_id. The version is an INCR of the user's one counter, from which live frames
  draw theirs too (docs/conversation-list.md, "the low-latency path"): above every version any
  process stamped or sent before, whatever crashed or moved meanwhile. A row that is "deleted" (deleted_before >= head, §7) is dropped from the
  hash: the list does not hold it until a new message revives it.

  Contributions of a row (fields 3 state, 8 muted, 9 archived, 13 unread, 16 mentions):
    total_unread  += unread   when state = A and not archived and (not muted or include_muted)
    total_mention += mentions when state = A
    muted_unread  += unread   when muted

  KEYS[1] rows     hash: conversation hex -> row (core/conversation-list/row.ts)
  KEYS[2] badge    hash: total_unread, total_mention, muted_unread
  KEYS[3] prefs    hash: conversation hex -> "hidden|deleted|pin|muted|archived|deletedBeforeSet" (the user's
                   durable choices, not a projection row: a rebuild reads them)
  KEYS[4] version  string: the user's version counter (stored writes and live frames; never wiped)

  ARGV[1] include_muted (1/0), the tenant's policy
  ARGV[2] driving_event_id
  ARGV[3] 1: recompute the badge from every row after writing (reconcile, §4 "每次 reconcile 后强制全量重算")
  ARGV[4..] per row, 5 items: conversation hex, expected current row ("" = absent),
            new row without its last two fields ("" = drop the row), keep (1 = store it, 0 = drop),
            prefs value ("" = unchanged)

  Returns {0, version, total_unread, total_mention, muted_unread}
          {-12, i}  the stored row i (1-based) is not the expected one: nothing written
]]
local includeMuted = ARGV[1] == "1"
local function contrib(row)
  if not row or row == "" then return 0, 0, 0 end
  local f = {}
  for part in string.gmatch(row, "([^|]*)|?") do f[#f + 1] = part end
  local unread, mentions = tonumber(f[13]) or 0, tonumber(f[16]) or 0
  local active, muted, archived = f[3] == "A", f[8] == "1", f[9] == "1"
  local u, m, mu = 0, 0, 0
  if active and not archived and (not muted or includeMuted) then u = unread end
  if active then m = mentions end
  if muted then mu = unread end
  return u, m, mu
end

local n = (#ARGV - 3) / 5
for i = 1, n do
  local a = 3 + (i - 1) * 5
  local cur = redis.call("HGET", KEYS[1], ARGV[a + 1]) or ""
  if cur ~= ARGV[a + 2] then return {-12, i} end
end
local version = redis.call("INCR", KEYS[4])
local fresh = redis.call("EXISTS", KEYS[2]) == 0 or ARGV[3] == "1"
local du, dm, dmu = 0, 0, 0
for i = 1, n do
  local a = 3 + (i - 1) * 5
  local conv, old, new, keep, prefs = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  local ou, om, omu = contrib(old)
  local stored = ""
  if keep == "1" then
    stored = new .. "|" .. version .. "|" .. ARGV[2]
    redis.call("HSET", KEYS[1], conv, stored)
  else
    redis.call("HDEL", KEYS[1], conv)
  end
  local nu, nm, nmu = contrib(stored)
  du = du + nu - ou; dm = dm + nm - om; dmu = dmu + nmu - omu
  if prefs ~= "" then redis.call("HSET", KEYS[3], conv, prefs) end
end
if fresh then
  local tu, tm, tmu = 0, 0, 0
  local all = redis.call("HVALS", KEYS[1])
  for _, row in ipairs(all) do
    local u, m, mu = contrib(row)
    tu = tu + u; tm = tm + m; tmu = tmu + mu
  end
  redis.call("HSET", KEYS[2], "total_unread", tu, "total_mention", tm, "muted_unread", tmu)
else
  redis.call("HINCRBY", KEYS[2], "total_unread", du)
  redis.call("HINCRBY", KEYS[2], "total_mention", dm)
  redis.call("HINCRBY", KEYS[2], "muted_unread", dmu)
end
local b = redis.call("HMGET", KEYS[2], "total_unread", "total_mention", "muted_unread")
return {0, version, tonumber(b[1]), tonumber(b[2]), tonumber(b[3])}
