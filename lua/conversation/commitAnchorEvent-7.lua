--[[
  Step 1 of a recall or an edit (spec 003 §2.3, issue 29): the CONTROL event into the commit log
  with its own conversation_seq, BEFORE the target's state changes (applyAnchorEvent, step 2). The
  event is an anchor_target record (ord=0: it does not move the conversation in the list; it renders
  at its target) and carries the target's sender, counts_unread flag, mentions and message id
  (spec 002 §3.5's target_* fields), copied here from the target so that every consumer decides
  without reading the target. Its audience is the group's members at the current version, like a
  message's (vpending at that version: the relay expands it).

  KEYS[1] idem  KEYS[2] grpmeta  KEYS[3] grpmembers  KEYS[4] cseq  KEYS[5] hist  KEYS[6] outbox
  KEYS[7] vpending  (as commitMessages-8)

  ARGV[1] mode: R recall, E edit
  ARGV[2] client_message_id (32 hex): a recall's is derived from its target (one recall per
          message, whoever asks); an edit's is the client's (a retried edit answers its first event)
  ARGV[3] actor (32 hex): the user, or the admin actor for a moderation call
  ARGV[4] "1": the user's own call (the actor must be an ACTIVE member, the target's sender, within
          the window); "0": moderation (no window, no author check)
  ARGV[5] now (ms)   ARGV[6] the window (ms): recall_self_window or edit_self_window
  ARGV[7] target_conversation_seq
  ARGV[8] the event's history entry without its seq (includes/histRecord: a "rest", ord=0)
  ARGV[9] outbox ref "tenantHex|conversationHex"

  Returns {0, eventSeq, eventMessageId}      the event is in the log (RECORDED)
          {1, eventSeq, eventMessageId}      a retry: the event was written before (for a recall of
                                             a recalled message: its recall event's seq, id "")
          {-3} no such group   {-15, J} dissolved   {-2} the actor is no ACTIVE member (own call)
          {-20} no such message (absent, trimmed, or not a normal message: events are not targets)
          {-21} not the author  {-22, sentAt} the window has passed  {-23} recalled (an edit)
          {-14, seq} the client_message_id was used for another edit
  Nothing is written on a refusal.
]]
--- @include "includes/histRecord"
--- @include "includes/parseMember"

local mode, cmid, actor, own = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == "1"
local now, window, target = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local rest = ARGV[8]
local head = histHeader(rest)
if not head then return redis.error_reply("ERR commitAnchorEvent: ARGV[8] is no history entry") end
local digest = redis.sha1hex(histContent(rest, head) .. "|" .. target)

local existing = redis.call("HGET", KEYS[1], cmid)
if existing then
  local seq, _, stored = string.match(existing, "^(%d+)|(%d+)|(%x+)$")
  if not seq then seq = existing end
  -- a recall's id names "the recall of this message", whoever asks (the author, then a moderator):
  -- any retry answers the one event; an edit's id is its author's, compared with its content
  if stored and stored ~= digest and mode ~= "R" then return { -14, tonumber(seq) } end
  local entry = redis.call("ZRANGEBYSCORE", KEYS[5], seq, seq)[1]
  return { 1, tonumber(seq), entry and histGet(entry, HIST.MESSAGE_ID) or "" }
end

local meta = redis.call("HMGET", KEYS[2], "version", "dissolved_at")
local version = meta[1]
if not version then return { -3 } end
if meta[2] then return { -15, tonumber(meta[2]) } end

local t = redis.call("ZRANGEBYSCORE", KEYS[5], target, target)[1]
if not t then return { -20 } end
local th = histHeader(t).fields
if th[HIST.KIND] ~= "N" then return { -20 } end
if own then
  local _, _, state = parseMember(redis.call("HGET", KEYS[3], actor))
  if state ~= "A" then return { -2 } end
  if th[HIST.SENDER_ID] ~= actor then return { -21 } end
  if now - tonumber(th[HIST.CREATED_AT]) > window then return { -22, tonumber(th[HIST.CREATED_AT]) } end
end
if th[HIST.STATE] == "R" then
  if mode == "E" then return { -23 } end
  return { 1, tonumber(th[HIST.RECALL_EVENT_SEQ] or "0"), "" }
end

local seq = redis.call("INCR", KEYS[4])
local rec = histDecode(rest)
rec.seq = seq
rec.fields[HIST.TARGET_SEQ] = target
rec.fields[HIST.TARGET_SENDER_ID] = th[HIST.SENDER_ID]
rec.fields[HIST.TARGET_COUNTS_UNREAD] = th[HIST.COUNTS_UNREAD]
rec.fields[HIST.TARGET_MENTIONS] = th[HIST.MENTIONS]
rec.fields[HIST.TARGET_MESSAGE_ID] = th[HIST.MESSAGE_ID]
redis.call("ZADD", KEYS[5], seq, histEncode(rec))
redis.call("HSET", KEYS[1], cmid, seq .. "|" .. version .. "|" .. digest)
redis.call("RPUSH", KEYS[6], ARGV[9] .. "|" .. seq)
redis.call("ZADD", KEYS[7], version, seq)
return { 0, seq, head.fields[HIST.MESSAGE_ID] }
