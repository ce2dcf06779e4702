--[[
  Puts one chunk of a user's durable CMD states written before the last seq was kept (four
  fields: last seq unknown, so possibly unread) into the unread index, at the user's first sync
  after the upgrade (issue 23: such rows were in no cmdunread, and a sync that reads cmdunread only
  never found their pending commands). The user's rows are walked in cmdactive order from a
  cursor, at most ARGV[5] of them a call; the call that reaches the end marks the user in
  cmdindexed, and every later call answers at once. Rows written since the upgrade always carry
  their last seq, so once marked the user never has a row to index again. Re-running a chunk is
  harmless (ZADD of the same member).

  KEYS[1] cmdstate    hash  `tenantHex:userHex|type|channelId` → `read|deletedTo|activeAt|updatedAt[|lastMsgSeq]`
  KEYS[2] cmdactive   zset  the (activeAt DESC, type, id) index of all rows (members: cmdActiveMember)
  KEYS[3] cmdunread   zset  the same index over the unread rows
  KEYS[4] cmdindexed  hash  `tenantHex:userHex` → "1" once the user's old rows are in cmdunread
  KEYS[5] lease       hash  the slot's lease (owner, token)

  ARGV[1] owner, ARGV[2] fencing token
  ARGV[3] userRef `tenantHex:userHex`
  ARGV[4] cursor: the last cmdactive member of the previous chunk, "" to start
  ARGV[5] the most rows to look at (the caller's chunk, ≤ CMD_STATE_READ_CHUNK)

  Returns {0, rows looked at, rows indexed, next cursor} with next cursor "" once the user is
  marked (done), or {-10} when fenced (nothing written).
]]
--- @include "includes/fenceHolds"
--- @include "includes/cmdState"
if not fenceHolds(KEYS[5], ARGV[1], ARGV[2]) then return { -10 } end
local ref = ARGV[3]
if redis.call("HEXISTS", KEYS[4], ref) == 1 then return { 0, 0, 0, "" } end
local from = "[" .. ref .. "|"
if ARGV[4] ~= "" then from = "(" .. ARGV[4] end
local count = tonumber(ARGV[5])
local members = redis.call("ZRANGEBYLEX", KEYS[2], from, "[" .. ref .. "|\255", "LIMIT", 0, count)
local indexed = 0
for _, m in ipairs(members) do
  local ttt, id = string.match(m, "^[^|]+|%x+|(%d+)|(.+)$")
  local ctype = tostring(tonumber(ttt))
  local v = redis.call("HGET", KEYS[1], ref .. "|" .. ctype .. "|" .. id)
  if v then
    local r, d, a, u, l = cmdParseState(v)
    if l == nil then
      redis.call("ZADD", KEYS[3], 0, cmdActiveMember(ref, ctype, id, a))
      indexed = indexed + 1
    end
  end
end
if #members < count then
  redis.call("HSET", KEYS[4], ref, "1")
  return { 0, #members, indexed, "" }
end
return { 0, #members, indexed, members[#members] }
