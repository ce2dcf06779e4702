--[[
  Advances the read seq of durable CMD conversation states that exist (spec 001
  AdvanceCMDConversationReadSeq), all or nothing: a patch for a missing row is a no-op, a read
  seq never goes back (a max merge), updated at only grows. A row read up to its last seq leaves
  the unread index.

  A patch may carry a last seq: what a sync found of a row whose last seq was unknown (four
  fields, written by the code before issue 23) — the end of the user's commands in the CMD log.
  It is max-merged into the row's last seq (the unknown one taken as none), so that the row settles
  as read or unread like any other and a row with nothing to load never stays in cmdunread.

  KEYS[1] cmdstate   hash  `tenantHex:userHex|type|channelId` → `read|deletedTo|activeAt|updatedAt|lastMsgSeq`
  KEYS[2] cmdunread  zset  the (activeAt DESC, type, id) index of the unread rows
  KEYS[3] lease      hash  the slot's lease (owner, token)

  ARGV[1] owner, ARGV[2] fencing token
  ARGV[3..] rows of 6: userRef, type, channelId, read, updatedAt, lastMsgSeq ("" when none)

  Returns {0, rows written}, or {-10} when fenced (nothing written).
]]
--- @include "includes/fenceHolds"
--- @include "includes/cmdState"
--- @include "includes/cmdUnreadIndex"
if not fenceHolds(KEYS[3], ARGV[1], ARGV[2]) then return { -10 } end
local written = 0
for i = 3, #ARGV, 6 do
  local ref, ctype, id = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local field = ref .. "|" .. ctype .. "|" .. id
  local old = redis.call("HGET", KEYS[1], field)
  if old then
    local r, d, a, u, l = cmdParseState(old)
    local nr, nl = cmdMax(r, ARGV[i + 3]), l
    if ARGV[i + 5] ~= "" then nl = cmdMax(l, ARGV[i + 5]) end
    if nr ~= r or nl ~= l then
      redis.call("HSET", KEYS[1], field, cmdStateValue(nr, d, a, cmdMax(u, ARGV[i + 4]), nl))
      cmdUnreadIndex(KEYS[2], ref, ctype, id, a, cmdIsUnread(r, d, l), a, cmdIsUnread(nr, d, nl))
      written = written + 1
    end
  end
end
return { 0, written }
