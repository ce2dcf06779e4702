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
  Error {-8, version}: a delta needed to expand an audience is missing (never expected).
]]
--- @include "includes/parseMember"

local current = tonumber(redis.call("HGET", KEYS[5], "version") or "0")
local memberCache = nil
local audienceAt = {}

local function membersAt(v)
  if audienceAt[v] then return audienceAt[v] end
  if not memberCache then
    memberCache = {}
    local all = redis.call("HGETALL", KEYS[3])
    for i = 1, #all, 2 do
      local _, _, state = parseMember(all[i + 1])
      if state == "A" then memberCache[all[i]] = true end
    end
  end
  local set = {}
  for u in pairs(memberCache) do set[u] = true end
  for k = current, v + 1, -1 do
    local delta = redis.call("HGET", KEYS[4], k)
    if not delta then return nil, k end
    local op, list = string.match(delta, "^(%d)|(.*)$")
    for i = 1, #list, 32 do
      local u = string.sub(list, i, i + 31)
      if op == "1" then set[u] = nil else set[u] = true end
    end
  end
  local out = {}
  for u in pairs(set) do out[#out + 1] = u end
  table.sort(out)
  audienceAt[v] = table.concat(out)
  return audienceAt[v]
end

local result = {}
for i = 1, #ARGV do
  local seq = ARGV[i]
  local v, aud = nil, nil
  local rec = redis.call("HGET", KEYS[1], seq)
  if rec then
    v, aud = string.match(rec, "^R|(%d+)|(.*)$")
  else
    v = redis.call("ZSCORE", KEYS[6], seq)
    if v then
      local missing
      aud, missing = membersAt(tonumber(v))
      if not aud then return {-8, missing} end
    end
  end
  if not v then
    result[#result + 1] = seq; result[#result + 1] = ""; result[#result + 1] = "0"; result[#result + 1] = ""
  else
    local entry = redis.call("ZRANGEBYSCORE", KEYS[2], seq, seq)[1] or ""
    result[#result + 1] = seq; result[#result + 1] = entry; result[#result + 1] = v; result[#result + 1] = aud
  end
end
return result
