--[[
  Step 2 of a recall or an edit (spec 003 §2.3, issue 29): the target's state, AFTER its event is in
  the log (commitAnchorEvent). A recall sets state R and recall_event_conversation_seq = the
  event's seq, drops the payload, and takes the target out of the unread index (spec 002 §3.1:
  a recalled message never counts); an edit sets state E, the last edit's seq, and the event's
  payload. Idempotent: a recall finds recall_event_conversation_seq set, an edit finds its seq
  applied (or a later one), and nothing changes. Run by the call that wrote the event and by the
  outbox relay before it dispatches the event: a process that died between the two steps leaves
  the event in the outbox, and whoever relays it finishes the change (C-5). A recall also deletes
  the target's reactions, summary and who (spec 003 §4.3), in the same step: a reaction that
  landed between the two steps goes with them, and none lands after (react refuses state R).
  The who hash goes with UNLINK: its memory is freed off the main thread, whatever its size.

  KEYS[1] hist       zset: the history (the event and its target)
  KEYS[2] unreadidx  zset: the unread index
  KEYS[3] rxsum      zset: the conversation's reaction summaries
  KEYS[4] rxwho      hash: the target's reactions by user (core/conversation keys.ts reactionWhoKey)

  ARGV[1] the event's conversation_seq
  ARGV[2] its target's conversation_seq (as the caller read it from the event: KEYS[4] is named by it)

  Returns {0} applied   {1} already applied, or nothing to apply to (the event or its target trimmed)
          {2} an edit of a recalled message: nothing changes
]]
--- @include "includes/histRecord"

local eseq = ARGV[1]
local event = redis.call("ZRANGEBYSCORE", KEYS[1], eseq, eseq)[1]
if not event then return { 1 } end
local eh = histHeader(event)
local target = eh.fields[HIST.TARGET_SEQ]
if not target then return redis.error_reply("ERR applyAnchorEvent: seq " .. eseq .. " is no anchor event") end
if target ~= ARGV[2] then return redis.error_reply("ERR applyAnchorEvent: seq " .. eseq .. " targets " .. target .. ", not " .. ARGV[2]) end
local t = redis.call("ZRANGEBYSCORE", KEYS[1], target, target)[1]
if not t then return { 1 } end
local rec = histDecode(t)
local f = rec.fields
local recall = eh.fields[HIST.CONTENT_TYPE] == "qim.recall.v1"
if recall then
  if f[HIST.RECALL_EVENT_SEQ] then return { 1 } end
  f[HIST.STATE] = "R"
  f[HIST.RECALL_EVENT_SEQ] = eseq
  rec.body = ""
else
  if f[HIST.STATE] == "R" then return { 2 } end
  if f[HIST.EDIT_EVENT_SEQ] and tonumber(f[HIST.EDIT_EVENT_SEQ]) >= tonumber(eseq) then return { 1 } end
  f[HIST.STATE] = "E"
  f[HIST.EDIT_EVENT_SEQ] = eseq
  rec.body = string.sub(event, eh.bodyAt)
end
redis.call("ZREMRANGEBYSCORE", KEYS[1], target, target)
redis.call("ZADD", KEYS[1], target, histEncode(rec))
if recall then
  redis.call("ZREMRANGEBYSCORE", KEYS[2], target, target)
  redis.call("ZREMRANGEBYSCORE", KEYS[3], target, target)
  redis.call("UNLINK", KEYS[4])
end
return { 0 }
