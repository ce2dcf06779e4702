--[[
  Reads what the outbox relay needs to put RECORDED commits into the dispatch log: the history
  entry and the audience. A group message's audience is the member set at the version it was
  frozen at (its vpending score): the current ACTIVE members with the retained deltas undone from
  the current version down to V+1. A control message carries its explicit audience in its commit
  record (commits).

  KEYS[1] commits     hash: seq -> "R|version|audience" — RECORDED control messages
  KEYS[2] hist        zset: the conversation history
  KEYS[3] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[4] grpdeltas   hash: version -> "op|targets"
  KEYS[5] grpmeta     hash: version
  KEYS[6] vpending    zset: score member version, member seq — RECORDED group messages

  ARGV[1..] seqs

  Returns a flat list, 4 items per seq: seq, entry, version, audience (concatenated 32-hex ids);
  entry is "" when the seq is no longer RECORDED (already COMMITTED by an earlier relay pass).
  Error {-8, version}: a delta needed to expand an audience is missing (never expected); version
  is the highest missing one.

  The audiences of all the versions the batch needs come from one walk down from the current
  version, each delta undone once: O(versions spanned + members per distinct version).
]]
--- @include "includes/parseMember"

local current = tonumber(redis.call("HGET", KEYS[5], "version") or "0")

-- first pass, in ARGV order: what each seq is (a control message's explicit audience, or the
-- version a group message's audience is frozen at)
local items = {}
local needed, seen = {}, {}
for i = 1, #ARGV do
  local seq = ARGV[i]
  local item = { seq = seq }
  local rec = redis.call("HGET", KEYS[1], seq)
  if rec then
    item.v, item.aud = string.match(rec, "^R|(%d+)|(.*)$")
  else
    item.v = redis.call("ZSCORE", KEYS[6], seq)
    if item.v then
      item.frozen = tonumber(item.v)
      if not seen[item.frozen] then
        seen[item.frozen] = true
        needed[#needed + 1] = item.frozen
      end
    end
  end
  items[i] = item
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
for _, item in ipairs(items) do
  local aud = item.aud
  if item.frozen then aud = audienceAt[item.frozen] end
  if not item.v then
    result[#result + 1] = item.seq; result[#result + 1] = ""; result[#result + 1] = "0"; result[#result + 1] = ""
  else
    local entry = redis.call("ZRANGEBYSCORE", KEYS[2], item.seq, item.seq)[1] or ""
    result[#result + 1] = item.seq; result[#result + 1] = entry; result[#result + 1] = item.v; result[#result + 1] = aud
  end
end
return result
