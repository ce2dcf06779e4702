-- unreadRange(grpmetaKey, histKey, idxKey, user, lo, hi) -> unread, mentions, mentionFirst (-1 none)
-- The records of (lo, hi] that count toward user's unread (spec 002 §3.1: counts_unread, sent by
-- someone else, not recalled), and how many of them mention the user (the mentions field's 32-hex ids) with
-- the first one's seq. Seqs from grpmeta's unread_index_from on are read from the unread index
-- (zset unreadidx, member "seq|sender|mentions", written with the history entry of every counting
-- record): a few dozen bytes a record, whatever the history holds. Below it (history written
-- before the index existed) the history entries themselves are read, as before issue 22.
--- @include "includes/histRecord"
local function namesUser(field, user)
  if not field or field == "" then return false end
  local at = 1
  while true do
    local i = string.find(field, user, at, true)
    if not i then return false end
    if (i - 1) % 32 == 0 then return true end
    at = i + 1
  end
end
local function unreadRange(metaKey, histKey, idxKey, user, lo, hi)
  local unread, mcount, mfirst = 0, 0, -1
  if hi <= lo then return unread, mcount, mfirst end
  local from = tonumber(redis.call("HGET", metaKey, "unread_index_from") or "0")
  -- records up to `split` are only in the history; the rest are in the index
  local split = hi
  if from > 0 then split = math.min(hi, from - 1) end
  if split > lo then
    for _, e in ipairs(redis.call("ZRANGEBYSCORE", histKey, "(" .. lo, split)) do
      local h = histHeader(e)
      local f = h.fields
      -- a recalled record never counts (spec 002 §3.1; applyAnchorEvent took it out of the index)
      if f[HIST.SENDER_ID] ~= user and f[HIST.COUNTS_UNREAD] == "1" and f[HIST.STATE] ~= "R" then
        unread = unread + 1
        if namesUser(f[HIST.MENTIONS], user) then
          mcount = mcount + 1
          if mfirst < 0 then mfirst = h.seq end
        end
      end
    end
  end
  local ilo = math.max(lo, split)
  if hi > ilo then
    for _, e in ipairs(redis.call("ZRANGEBYSCORE", idxKey, "(" .. ilo, hi)) do
      local seq, sender, mentions = string.match(e, "^(%d+)|(%x*)|(%x*)$")
      if sender ~= user then
        unread = unread + 1
        if namesUser(mentions, user) then
          mcount = mcount + 1
          if mfirst < 0 then mfirst = tonumber(seq) end
        end
      end
    end
  end
  return unread, mcount, mfirst
end
