--[[
  Creates or max-merges durable CMD conversation states of one user slot (spec 001
  UpsertCMDConversationStates), all or nothing: read seq, deleted-to seq, active at, updated at
  and last seq only ever grow, and a row none of read, deleted-to, active at and last seq would
  grow is not written at all, so a replayed or repeated batch, or an old one after a newer,
  changes nothing (updated at included). The unread index holds exactly the rows whose last seq
  is beyond max(read, deleted-to), so that a sync finds every unread row without reading the read
  ones (issue 23, defect 5). A row of the old code (four fields, last seq unknown) keeps its last
  seq unknown: only a sync that loaded the user's commands to the end of the CMD log settles it
  (advanceCmdStateReads), since an intent re-derived late may carry a seq older than a command the
  row still holds unread.

  KEYS[1] cmdstate   hash  `tenantHex:userHex|type|channelId` → `read|deletedTo|activeAt|updatedAt|lastMsgSeq`
  KEYS[2] cmdactive  zset  the (activeAt DESC, type, id) index, members from cmdActiveMember
  KEYS[3] cmdunread  zset  the same index over the unread rows only
  KEYS[4] lease      hash  the slot's lease (owner, token) — docs/cluster.md

  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3..] rows of 8: userRef, type, channelId, read, deletedTo, activeAt, updatedAt, lastMsgSeq

  Returns {0, rows changed}, or {-10} when the slot's lease names another owner or token (fenced:
  nothing written).
]]
--- @include "includes/fenceHolds"
--- @include "includes/cmdState"
--- @include "includes/cmdUnreadIndex"
if not fenceHolds(KEYS[4], ARGV[1], ARGV[2]) then return { -10 } end
local changed = 0
for i = 3, #ARGV, 8 do
  local ref, ctype, id = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local field = ref .. "|" .. ctype .. "|" .. id
  local old = redis.call("HGET", KEYS[1], field)
  local r, d, a, u, l = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]
  local write = true
  local oa, wasUnread = a, false
  if old then
    local orr, od, oldA, ou, ol = cmdParseState(old)
    oa = oldA
    wasUnread = cmdIsUnread(orr, od, ol)
    r, d, a, u = cmdMax(orr, r), cmdMax(od, d), cmdMax(oa, a), cmdMax(ou, u)
    if ol == nil then l = nil else l = cmdMax(ol, l) end
    -- nothing to merge: the row stays as it is, its updated at included (a replay is a no-op)
    write = r ~= orr or d ~= od or a ~= oa or l ~= ol
    if a ~= oa then
      redis.call("ZREM", KEYS[2], cmdActiveMember(ref, ctype, id, oa))
      redis.call("ZADD", KEYS[2], 0, cmdActiveMember(ref, ctype, id, a))
    end
  else
    redis.call("ZADD", KEYS[2], 0, cmdActiveMember(ref, ctype, id, a))
  end
  if write then
    redis.call("HSET", KEYS[1], field, cmdStateValue(r, d, a, u, l))
    cmdUnreadIndex(KEYS[3], ref, ctype, id, oa, wasUnread, a, cmdIsUnread(r, d, l))
    changed = changed + 1
  end
end
return { 0, changed }
