--[[
  One membership change — join (admin add), leave (the user) or remove (admin) — as a CONTROL
  message in one atomic region, in ADR-0021 §2's order: idempotency look-up -> check version V
  -> allocate J -> member set and version V+1 snapshot -> intervals -> record the control
  message's commit (RECORDED), which then takes the ordinary outbox -> COMMITTED path.

  The member table holds the member set and the intervals in one hash (an ACTIVE entry is a
  member), so steps "member set" and "intervals" are one write per target.
  Version snapshots are deltas: grpdeltas[V+1] = "op|targets" is kept only while an undispatched
  group message (vpending) was frozen at an older version and needs it to expand its audience;
  with nothing pending no delta is written and older ones are dropped (memory stays bounded).

  KEYS[1] idem        hash: idempotency id -> seq
  KEYS[2] grpmeta     hash: version, owner, member_count, dissolved_at, unread_index_from
  KEYS[3] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[4] grpdeltas   hash: version -> "op|targets" (targets: concatenated 32-hex ids)
  KEYS[5] vpending    zset: score version, member seq — undispatched group-audience messages
  KEYS[6] cseq        string: the conversation_seq counter
  KEYS[7] hist        zset: the conversation history
  KEYS[8] commits     hash: seq -> "R|version|audience" — RECORDED control messages (removed when COMMITTED)
  KEYS[9] outbox      list: the bucket's outbox

  ARGV[1] idempotency id (32 hex): blake3("qim.membership-event.v1\0" ‖ tenant ‖ group ‖ op ‖ actor ‖ V ‖ targets)[0..16]
  ARGV[2] V, the member version the change was planned at
  ARGV[3] op: 1 join, 2 leave, 3 remove
  ARGV[4] history entry without its seq (includes/histRecord: kind C, counts_unread 0, content type
          qim.membership.v1, body the base64 payload)
  ARGV[5] outbox ref "tenantHex|conversationHex"
  ARGV[6] membership_event_broadcast_max_members (500)
  ARGV[7] groups.max_members: the most ACTIVE members the group may have after a join
  ARGV[8..] targets (32 hex, distinct, sorted)

  Returns {0, J, messageId, version, memberCount, audienceSize}  the change was committed at J
          {1, J, messageId, version, memberCount, 0}             this change was committed before (the existing event);
                                                                 version and memberCount are the current ones; messageId
                                                                 is "" if history retention dropped the event
          {-1, version}  membership changed: the member version is no longer V
          {-3}           no such group
          {-6, target}   the plan no longer holds: a join target is already a member, or a leave/remove target is not
                         (also: a target named twice, or no target at all — "" — which the engine never sends)
          {-7}           the owner cannot leave or be removed
          {-15, J}       the group was dissolved at J: no membership change after it (issue 24)
          {-16, memberCount, max}  a join would take the group past ARGV[7] members: nothing written
]]
--- @include "includes/parseMember"
--- @include "includes/histRecord"
--- @include "includes/recordCommit"

local existing = redis.call("HGET", KEYS[1], ARGV[1])
if existing then
  local entry = redis.call("ZRANGEBYSCORE", KEYS[7], existing, existing)[1]
  local meta = redis.call("HMGET", KEYS[2], "version", "member_count")
  return {1, tonumber(existing), entry and histGet(entry, HIST.MESSAGE_ID) or "", tonumber(meta[1]), tonumber(meta[2]), 0}
end

local meta = redis.call("HMGET", KEYS[2], "version", "owner", "member_count", "dissolved_at")
if not meta[1] then return {-3} end
if meta[4] then return {-15, tonumber(meta[4])} end
if meta[1] ~= ARGV[2] then return {-1, tonumber(meta[1])} end
local op = ARGV[3]
local owner = meta[2]

local targets = {}
local seen = {}
if #ARGV < 8 then return {-6, ""} end
for i = 8, #ARGV do
  local t = ARGV[i]
  if seen[t] then return {-6, t} end
  seen[t] = true
  local _, _, state = parseMember(redis.call("HGET", KEYS[3], t))
  if op == "1" then
    if state == "A" then return {-6, t} end
  else
    if t == owner then return {-7} end
    if state ~= "A" then return {-6, t} end
  end
  targets[#targets + 1] = t
end

-- the size limit, here in the atomic region and before any write, so that concurrent adds
-- planned against the same count cannot together overshoot it (member_count: the ACTIVE members)
local count = tonumber(meta[3])
if op == "1" and count + #targets > tonumber(ARGV[7]) then return {-16, count, tonumber(ARGV[7])} end

local j = redis.call("INCR", KEYS[6])
local version = tonumber(meta[1]) + 1

-- member set and intervals: join -> joined_at = J - 1 (the join event itself is visible),
-- left_at cleared, a rejoin replaces the old interval; leave/remove -> left_at = J.
for _, t in ipairs(targets) do
  if op == "1" then
    redis.call("HSET", KEYS[3], t, (j - 1) .. "||A")
    count = count + 1
  else
    local joined = parseMember(redis.call("HGET", KEYS[3], t))
    redis.call("HSET", KEYS[3], t, joined .. "|" .. j .. "|" .. (op == "2" and "L" or "R"))
    count = count - 1
  end
end
redis.call("HSET", KEYS[2], "version", version, "member_count", count)
if redis.call("ZCARD", KEYS[5]) > 0 then
  redis.call("HSET", KEYS[4], version, op .. "|" .. table.concat(targets))
else
  redis.call("DEL", KEYS[4])
end

-- audience (DeliveryAudience::Direct): post-change members ∪ affected when the group has at most
-- membership_event_broadcast_max_members members, else the affected users only.
local audience = {}
if count <= tonumber(ARGV[6]) then
  local all = redis.call("HGETALL", KEYS[3])
  for i = 1, #all, 2 do
    local _, _, state = parseMember(all[i + 1])
    if state == "A" then audience[#audience + 1] = all[i] end
  end
  if op ~= "1" then
    for _, t in ipairs(targets) do audience[#audience + 1] = t end
  end
else
  audience = targets
end

recordCommit(KEYS[7], KEYS[1], KEYS[9], j, ARGV[4], ARGV[1], ARGV[5])
-- a control message never counts toward unread, so the unread index (commitMessages-8) is
-- complete from J on: reads of a group whose first record is this event never read its history
redis.call("HSETNX", KEYS[2], "unread_index_from", j)
redis.call("HSET", KEYS[8], j, "R|" .. version .. "|" .. table.concat(audience))
return {0, j, histGet(ARGV[4], HIST.MESSAGE_ID), version, count, #audience}
