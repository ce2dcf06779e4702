--[[
  Dissolves a group (issue 24; docs/architecture.md "Dissolving a group") in one atomic region:
  idempotency (a group dissolves once: grpmeta.dissolved_at is the record) -> check version V ->
  allocate J -> grpmeta.dissolved_at = J and version V+1 -> the CONTROL message at J
  (custom_type qim.group.v1, op dissolve) recorded like a GROUP message: its commit record is its
  vpending entry at version V+1, so the outbox relay expands its audience to the members at V+1
  (the members at V: a dissolve changes no member) exactly as for any group message.

  Constant cost whatever the group's size: no member is read or written here. Nobody's interval
  is rewritten; instead every reader's visible bound (includes/visibleBounds) stops at
  dissolved_at, and every writer (commitMessages, applyMembership, transferOwner, commitCmd)
  refuses once it is set. The member table is not among the KEYS, so this script cannot touch it.

  While an older group message is still undispatched, the relay walks the deltas down from the
  current version, so V+1 gets an empty delta ("5|", no targets: the member set is unchanged),
  like transferOwner's "4|"; with nothing pending, older deltas are dropped as applyMembership does.

  KEYS[1] grpmeta    hash: version, owner, member_count, created_at, dissolved_at
  KEYS[2] cseq       string: the conversation_seq counter
  KEYS[3] hist       zset: the conversation history
  KEYS[4] vpending   zset: score version, member seq — undispatched group-audience messages
  KEYS[5] grpdeltas  hash: version -> "op|targets"
  KEYS[6] outbox     list: the bucket's outbox

  ARGV[1] V, the member version the dissolve was planned at
  ARGV[2] history entry without its seq (includes/histRecord: sender the owner, kind C,
          counts_unread 0, content type qim.group.v1, body the base64 payload)
  ARGV[3] outbox ref "tenantHex|conversationHex"

  Returns {0, J, messageId, version}  dissolved at J, member version V+1
          {1, J, messageId, version}  already dissolved at J (nothing written; messageId "" if
                                      history retention dropped the event)
          {-1, version}               membership changed: the member version is no longer V
          {-3}                        no such group
]]
--- @include "includes/histRecord"

local meta = redis.call("HMGET", KEYS[1], "version", "dissolved_at")
if not meta[1] then return {-3} end
if meta[2] then
  local entry = redis.call("ZRANGEBYSCORE", KEYS[3], meta[2], meta[2])[1]
  return {1, tonumber(meta[2]), entry and histGet(entry, HIST.MESSAGE_ID) or "", tonumber(meta[1])}
end
if meta[1] ~= ARGV[1] then return {-1, tonumber(meta[1])} end

local j = redis.call("INCR", KEYS[2])
local version = tonumber(meta[1]) + 1
if redis.call("ZCARD", KEYS[4]) > 0 then
  redis.call("HSET", KEYS[5], version, "5|")
else
  redis.call("DEL", KEYS[5])
end
redis.call("HSET", KEYS[1], "version", version, "dissolved_at", j)
redis.call("ZADD", KEYS[3], j, histStamp(j, ARGV[2]))
redis.call("ZADD", KEYS[4], version, j)
redis.call("RPUSH", KEYS[6], ARGV[3] .. "|" .. j)
return {0, j, histGet(ARGV[2], HIST.MESSAGE_ID), version}
