--[[
  The commit path's atomic region (DESIGN §2, ADR-0021 §1): idempotency look-up by
  client_message_id -> grpmeta.version == V (else "membership changed", no sequence consumed)
  -> sender is a member at V -> INCR the conversation sequence -> history entry + commit record
  RECORDED -> bucket outbox. A group message's commit record is its vpending entry: seq with the
  member version its audience is frozen at (all the relay needs to expand the audience). Because the version is checked in the same script that allocates
  seq S, the message at S goes to exactly the members at the moment S was allocated.

  KEYS[1] idem        hash: client_message_id / idempotency id -> seq
  KEYS[2] grpmeta     hash: version, owner, member_count
  KEYS[3] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[4] cseq        string: the conversation_seq counter
  KEYS[5] hist        zset: score seq, member "seq|messageId|sender|kind|countsUnread|createdAt|contentType|body"
  KEYS[6] outbox      list: "tenantHex|conversationHex|seq" (the bucket's outbox)
  KEYS[7] vpending    zset: score member version, member seq — RECORDED group messages (removed when COMMITTED)

  ARGV[1] client_message_id (32 hex)
  ARGV[2] V, the member version the writer froze the audience at
  ARGV[3] sender (32 hex)
  ARGV[4] history entry without its seq: "messageId|sender|N|countsUnread|createdAt|contentType|body"
  ARGV[5] outbox ref "tenantHex|conversationHex"

  Returns {0, seq, messageId}  committed (RECORDED)
          {1, seq, messageId}  this client_message_id was committed before: the existing commit
                               (messageId "" if history retention dropped the entry)
          {-1, version}        membership changed: the member version is no longer V
          {-2}                 the sender is not a member at V
          {-3}                 no such group
]]
--- @include "includes/parseMember"
--- @include "includes/histField"
--- @include "includes/recordCommit"

local existing = redis.call("HGET", KEYS[1], ARGV[1])
if existing then
  local entry = redis.call("ZRANGEBYSCORE", KEYS[5], existing, existing)[1]
  return {1, tonumber(existing), entry and histField(entry, 2) or ""}
end
local version = redis.call("HGET", KEYS[2], "version")
if not version then return {-3} end
if version ~= ARGV[2] then return {-1, tonumber(version)} end
local _, _, state = parseMember(redis.call("HGET", KEYS[3], ARGV[3]))
if state ~= "A" then return {-2} end
local seq = redis.call("INCR", KEYS[4])
recordCommit(KEYS[5], KEYS[1], KEYS[6], seq, ARGV[4], ARGV[1], ARGV[5])
redis.call("ZADD", KEYS[7], version, seq)
return {0, seq, histField(ARGV[4], 1)}
