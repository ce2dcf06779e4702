--[[
  Reads what the outbox relay needs to put RECORDED commits into the dispatch log: the history
  entry and the audience. A group message's audience is the member set at the version it was
  frozen at (its vpending score): the current ACTIVE members with the retained deltas undone from
  the current version down to V+1. A control message carries its explicit audience in its commit
  record (commits).

  Bounded work (issue 22, REDIS_CALL_MEMBER_BUDGET): a seq whose audience could exceed the budget
  is not expanded here but marked for a fanout job (state "F"), which the relay expands chunk by
  chunk (expandAudience): a group message when the member table holds more than `budget` entries
  (HLEN counts LEFT and REMOVED members too: it bounds what HGETALL would read), a control message
  when its explicit audience names more than `budget` users. Order per conversation: once a seq of
  the conversation goes to a fanout job, every later seq of it does too (also a small one), while
  this batch or a pending job (fanout pending count > 0) has one, so that its records reach the log
  in seq order behind the job's chunks.

  KEYS[1] commits        hash: seq -> "R|version|audience" — RECORDED control messages
  KEYS[2] hist           zset: the conversation history
  KEYS[3] grpmembers     hash: user hex -> "joinedAt|leftAt|state"
  KEYS[4] grpdeltas      hash: version -> "op|targets"
  KEYS[5] grpmeta        hash: version
  KEYS[6] vpending       zset: score member version, member seq — RECORDED group messages
  KEYS[7] fanoutPending  hash: "tenantHex|conversationHex" -> fanout jobs pending (the bucket's)

  ARGV[1] budget: the most members one call may read (REDIS_CALL_MEMBER_BUDGET)
  ARGV[2] outbox ref "tenantHex|conversationHex"
  ARGV[3..] seqs

  Returns a flat list, 5 items per seq, in ARGV order: seq, state, entry, version, audience
  (concatenated 32-hex ids; "=" when it is the audience of the "D" item before it: a batch of one
  group's messages at one version carries its member list once, not once per message).
  state "D": dispatch it now (entry, version, audience); "F": hand a
  control message to a fanout job (version only; entry and audience ""); "M": hand a group
  message to a fanout job (entry and version; audience ""): the relay announces it to the devices
  online first, in one record whose audience is the members visible at its seq (issue 27); "": no
  longer RECORDED (COMMITTED by an earlier relay pass; version "0", the rest "").
  Error {-8, version}: a delta needed to expand an audience is missing (never expected); version
  is the highest missing one.

  The audiences of all the versions the batch needs come from one walk down from the current
  version, each delta undone once: O(versions spanned + members per distinct version), with at
  most `budget` members.
]]
--- @include "includes/parseMember"

local budget = tonumber(ARGV[1])
local current = tonumber(redis.call("HGET", KEYS[5], "version") or "0")
local big = redis.call("HLEN", KEYS[3]) > budget

-- first pass, in ARGV order: what each seq is (a control message's explicit audience, or the
-- version a group message's audience is frozen at), and the first seq too big to expand here
local items = {}
local chunkFrom = nil
if tonumber(redis.call("HGET", KEYS[7], ARGV[2]) or "0") > 0 then chunkFrom = 0 end
for i = 3, #ARGV do
  local seq = ARGV[i]
  local item = { seq = seq, n = tonumber(seq) }
  local rec = redis.call("HGET", KEYS[1], seq)
  if rec then
    item.v, item.aud = string.match(rec, "^R|(%d+)|(.*)$")
    if #item.aud / 32 > budget and (chunkFrom == nil or item.n < chunkFrom) then chunkFrom = item.n end
  else
    item.v = redis.call("ZSCORE", KEYS[6], seq)
    if item.v then
      item.frozen = tonumber(item.v)
      if big and (chunkFrom == nil or item.n < chunkFrom) then chunkFrom = item.n end
    end
  end
  items[#items + 1] = item
end

local needed, seen = {}, {}
for _, item in ipairs(items) do
  if item.v and chunkFrom ~= nil and item.n >= chunkFrom then
    item.fanout = true
  elseif item.frozen and not seen[item.frozen] then
    seen[item.frozen] = true
    needed[#needed + 1] = item.frozen
  end
end

-- the members at every needed version in ONE walk down from the current version, undoing each
-- delta once (a backlog pending at many versions after an outage costs the versions it spans,
-- not that times the number of versions)
local audienceAt = {}
if #needed > 0 then
  table.sort(needed, function(x, y) return x > y end)
  local set = {}
  local all = redis.call("HGETALL", KEYS[3])
  for i = 1, #all, 2 do
    local _, _, state = parseMember(all[i + 1])
    if state == "A" then set[all[i]] = true end
  end
  local k = current
  for _, v in ipairs(needed) do
    while k > v do
      local delta = redis.call("HGET", KEYS[4], k)
      if not delta then return {-8, k} end
      local op, list = string.match(delta, "^(%d)|(.*)$")
      for i = 1, #list, 32 do
        local u = string.sub(list, i, i + 31)
        if op == "1" then set[u] = nil else set[u] = true end
      end
      k = k - 1
    end
    local out = {}
    for u in pairs(set) do out[#out + 1] = u end
    table.sort(out)
    audienceAt[v] = table.concat(out)
  end
end

local result = {}
local lastAud = nil
local function push(seq, state, entry, v, aud)
  result[#result + 1] = seq; result[#result + 1] = state; result[#result + 1] = entry; result[#result + 1] = v; result[#result + 1] = aud
end
for _, item in ipairs(items) do
  if not item.v then
    push(item.seq, "", "", "0", "")
  elseif item.fanout and item.aud then
    push(item.seq, "F", "", item.v, "")
  elseif item.fanout then
    push(item.seq, "M", redis.call("ZRANGEBYSCORE", KEYS[2], item.seq, item.seq)[1] or "", item.v, "")
  else
    local aud = item.aud
    if item.frozen then aud = audienceAt[item.frozen] end
    local entry = redis.call("ZRANGEBYSCORE", KEYS[2], item.seq, item.seq)[1] or ""
    if aud == lastAud then
      push(item.seq, "D", entry, item.v, "=")
    else
      push(item.seq, "D", entry, item.v, aud)
      lastAud = aud
    end
  end
end
return result
