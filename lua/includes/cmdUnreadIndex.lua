--- @include "includes/cmdState"
-- Keeps a row's entry in the unread index (the cmdactive member format, in the same order) in step
-- with the row: the old entry (old active at, if it was unread) out, the new one (if unread) in.
local function cmdUnreadIndex(key, ref, ctype, id, oldActive, wasUnread, newActive, isUnread)
  if wasUnread and (not isUnread or oldActive ~= newActive) then
    redis.call("ZREM", key, cmdActiveMember(ref, ctype, id, oldActive))
  end
  if isUnread and (not wasUnread or oldActive ~= newActive) then
    redis.call("ZADD", key, 0, cmdActiveMember(ref, ctype, id, newActive))
  end
end
