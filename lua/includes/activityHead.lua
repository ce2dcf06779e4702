-- activityHead(histKey, upper, floor) -> latestSeq (or nil), headEntry ("" none), headSeq (or nil)
-- The newest record of (floor, upper] (latestSeq: what unread counts up to), and the newest one
-- that moves the conversation: the head a list row and a summary show (spec 003 §2.3: an
-- anchor_target event, ord=0 — a recall, an edit — renders at its target and does not advance the
-- latest position, so two recalls in a row still repair the preview; nor does a custom type
-- declared affects_session_order false). The common case is one read of one entry. Past
-- ACTIVITY_HEAD_SCAN order-neutral records in a row the newest of them stands in (bounded work).
--- @include "includes/histRecord"
local ACTIVITY_HEAD_STEP = 8
local ACTIVITY_HEAD_SCAN = 64
local function activityHead(histKey, upper, floor)
  local first = redis.call("ZREVRANGEBYSCORE", histKey, upper, "(" .. floor, "WITHSCORES", "LIMIT", 0, 1)
  if #first == 0 then return nil, "", nil end
  local latest = tonumber(first[2])
  if histGet(first[1], HIST.ORDER) ~= "0" then return latest, first[1], latest end
  local offset = 1
  while offset < ACTIVITY_HEAD_SCAN do
    local page = redis.call("ZREVRANGEBYSCORE", histKey, upper, "(" .. floor, "WITHSCORES", "LIMIT", offset, ACTIVITY_HEAD_STEP)
    if #page == 0 then return latest, "", nil end
    for i = 1, #page, 2 do
      if histGet(page[i], HIST.ORDER) ~= "0" then return latest, page[i], tonumber(page[i + 1]) end
    end
    offset = offset + ACTIVITY_HEAD_STEP
  end
  return latest, first[1], latest
end
