--[[
  The commit path's atomic region (DESIGN §2, ADR-0021 §1) for a batch of messages of one
  conversation, all frozen by the writer at member version V. In the spec's order:
  idempotency look-up by client_message_id -> grpmeta.version == V (else "membership changed":
  nothing written, no sequence consumed) -> the sender is a member at V -> allocate the next
  conversation_seq -> history entry + commit record RECORDED -> the bucket's outbox.
  Because the version is checked in the same script that allocates the seqs, the message at seq
  S goes to exactly the members at the moment S was allocated. A group message's commit record
  is its vpending entry: the version its audience is frozen at, all the relay needs to expand it.

  Batching is group commit: the writer sends what queued up for the conversation while its
  previous call was in flight, so one call's fixed cost is shared (a lone message is a batch of
  1), and the writes of all accepted messages go out as one command per key.

  KEYS[1] idem        hash: client_message_id -> "seq|V|contentDigest" (V the member version the
                      message was committed at; contentDigest the sha1 hex of the entry's content,
                      see below). Entries written before issue 24 hold "seq" alone: read as a retry
                      (no digest to compare) whose version is unknown.
  KEYS[2] grpmeta     hash: version, owner, member_count, dissolved_at, unread_index_from
  KEYS[3] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[4] cseq        string: the conversation_seq counter
  KEYS[5] hist        zset: score seq, member the history entry (includes/histRecord)
  KEYS[6] outbox      list: "tenantHex|conversationHex|seq" (the bucket's outbox)
  KEYS[7] vpending    zset: score member version, member seq — RECORDED group messages (removed when COMMITTED)
  KEYS[8] unreadidx   zset: score seq, member "seq|sender|mentions" — every record that counts toward
                      unread (countsUnread 1), written with its history entry: what the unread
                      scripts read instead of the entries (includes/unreadRange, issue 22).
                      grpmeta's unread_index_from (set once, by the first commit or membership
                      event of this code) is the first seq it covers; older records are read from hist.

  ARGV[1] V, the member version the writer froze the batch at
  ARGV[2] outbox ref "tenantHex|conversationHex"
  ARGV[3..] per message, 3 items: client_message_id (32 hex), sender (32 hex),
            history entry without its seq (includes/histRecord: a "rest")
            (at most 128 messages; a malformed list is an error reply with nothing written)
  Idempotency is by client_message_id plus content: a message's content is its history entry
  without messageId and createdAt (which the writer mints anew on every attempt): sender, kind,
  countsUnread, contentType, body, mentions and any later field (histContent). The same id with the
  same content is a retry (a duplicate of the first commit, also within the batch); the same id
  with other content is refused as an idempotency conflict, an idempotency key being reusable
  for one message only (issue 24).

  Returns {0, status, seq, messageId, status, seq, messageId, ...}: one triple per message, in
  ARGV order, with status
     0  committed (RECORDED) at seq
     1  this client_message_id was committed before (also earlier in the same batch): the existing
        seq and messageId ("" if history retention dropped the entry)
    -1  membership changed: the member version is no longer V; seq carries the current version,
        messageId ""; nothing of the batch was written and no sequence consumed
    -2  the sender is not a member at V (seq 0, messageId "")
    -3  no such group (seq 0, messageId "")
   -14  idempotency conflict: this client_message_id was taken by a message with other content;
        seq is that message's seq (0 when it is earlier in this batch), messageId ""; nothing of
        this message is written and no sequence consumed for it
   -15  the group was dissolved: seq is its dissolved_at J, messageId ""; nothing of the batch
        was written (issue 24: nothing is committed after the dissolve event). A retry of a
        message committed before the dissolve still answers 1 (the look-up comes first)
]]
--- @include "includes/histRecord"

if #ARGV < 2 or (#ARGV - 2) % 3 ~= 0 then return redis.error_reply("ERR commitMessages: ARGV is V, ref, then triples") end
if (#ARGV - 2) / 3 > 128 then return redis.error_reply("ERR commitMessages: at most 128 messages a call") end

local out = {0}
local fresh = {}   -- messages not seen before: { cmid, sender, rest, digest, slot, dups }
local inBatch = {} -- client_message_id -> index into fresh

for i = 3, #ARGV, 3 do
  local cmid, sender, rest = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local head = histHeader(rest)
  if not head then return redis.error_reply("ERR commitMessages: message " .. (i / 3) .. " is no history entry") end
  local digest = redis.sha1hex(histContent(rest, head))
  local slot = #out + 1
  out[slot] = 1; out[slot + 1] = 0; out[slot + 2] = ""
  local earlier = inBatch[cmid]
  if earlier then
    if fresh[earlier].digest == digest then
      fresh[earlier].dups[#fresh[earlier].dups + 1] = slot
      out[slot + 2] = fresh[earlier].head.fields[HIST.MESSAGE_ID]
    else
      out[slot] = -14
    end
  else
    local existing = redis.call("HGET", KEYS[1], cmid)
    if existing then
      local seq, _, stored = string.match(existing, "^(%d+)|(%d+)|(%x+)$")
      if not seq then seq = existing end
      if stored and stored ~= digest then
        out[slot] = -14; out[slot + 1] = tonumber(seq)
      else
        local entry = redis.call("ZRANGEBYSCORE", KEYS[5], seq, seq)[1]
        out[slot + 1] = tonumber(seq)
        out[slot + 2] = entry and histGet(entry, HIST.MESSAGE_ID) or ""
      end
    else
      fresh[#fresh + 1] = { cmid = cmid, sender = sender, rest = rest, head = head, digest = digest, slot = slot, dups = {} }
      inBatch[cmid] = #fresh
    end
  end
end
if #fresh == 0 then return out end

local function refuse(m, status, seq)
  out[m.slot] = status; out[m.slot + 1] = seq; out[m.slot + 2] = ""
  for _, d in ipairs(m.dups) do out[d] = status; out[d + 1] = seq; out[d + 2] = "" end
end
local function refuseAll(status, seq)
  for _, m in ipairs(fresh) do refuse(m, status, seq) end
  return out
end
local meta = redis.call("HMGET", KEYS[2], "version", "dissolved_at", "unread_index_from")
local version = meta[1]
if not version then return refuseAll(-3, 0) end
if meta[2] then return refuseAll(-15, tonumber(meta[2])) end
if version ~= ARGV[1] then return refuseAll(-1, tonumber(version)) end

local accepted = {}
for _, m in ipairs(fresh) do
  local member = redis.call("HGET", KEYS[3], m.sender)
  if member and string.sub(member, -1) == "A" then
    accepted[#accepted + 1] = m
  else
    refuse(m, -2, 0)
  end
end
if #accepted == 0 then return out end

local last = redis.call("INCRBY", KEYS[4], #accepted)
local first = last - #accepted + 1
local hist, idem, outbox, pending, unread = {}, {}, {}, {}, {}
for j, m in ipairs(accepted) do
  local seq = first + j - 1
  local f = m.head.fields
  out[m.slot] = 0; out[m.slot + 1] = seq; out[m.slot + 2] = f[HIST.MESSAGE_ID]
  for _, d in ipairs(m.dups) do out[d + 1] = seq end
  hist[#hist + 1] = seq; hist[#hist + 1] = histStamp(seq, m.rest)
  if f[HIST.COUNTS_UNREAD] == "1" then
    unread[#unread + 1] = seq; unread[#unread + 1] = seq .. "|" .. f[HIST.SENDER_ID] .. "|" .. (f[HIST.MENTIONS] or "")
  end
  idem[#idem + 1] = m.cmid; idem[#idem + 1] = seq .. "|" .. version .. "|" .. m.digest
  outbox[#outbox + 1] = ARGV[2] .. "|" .. seq
  pending[#pending + 1] = version; pending[#pending + 1] = seq
end
redis.call("ZADD", KEYS[5], unpack(hist))
redis.call("HSET", KEYS[1], unpack(idem))
redis.call("RPUSH", KEYS[6], unpack(outbox))
redis.call("ZADD", KEYS[7], unpack(pending))
if not meta[3] then redis.call("HSET", KEYS[2], "unread_index_from", first) end
if #unread > 0 then redis.call("ZADD", KEYS[8], unpack(unread)) end
return out
