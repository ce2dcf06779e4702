--[[
  One reaction added or removed (spec 003 §4.1, issue 28), in one atomic step on the
  conversation's bucket: the idempotency mark (and, within the detail limits, the detail row) and
  the message's summary with summary_version + 1. Constant cost whatever the group's or the
  message's size: one HGET of the member table, one entry of history, one summary (at most
  max_keys pairs), one field of the who hash.

  Idempotent on (tenant, conversation, seq, user, reaction_key): the who hash's field
  "userHex\tkey" is the mark; a repeated add or a remove of nothing answers {1, ...} and changes
  no count and no version. The mark's value is the detail row: reacted_at (ms) while the group has
  at most reaction_detail_max_members (1000) members and the message fewer than
  reaction_detail_max_per_message (10,000) detail rows; otherwise "" (the mark alone: who reacted
  is not kept as a detail row, only counted).

  Who may react: an ACTIVE member to whom the message is visible (joined_at < seq), to a NORMAL
  message (not an event) not recalled, in a group not dissolved. A refusal writes nothing.

  The summary entry (member of rxsum, score seq):
    seq "\t" summary_version "\t" detailRows "\t" markerOnly { "\t" key "\t" count }
  keys in the order they first appeared, a key whose count falls to 0 dropped; an entry whose
  counts are all gone stays (its version never goes back).

  KEYS[1] grpmeta     hash: version, member_count, dissolved_at
  KEYS[2] grpmembers  hash: userHex -> "joinedAt|leftAt|state"
  KEYS[3] hist        zset: the history (the message)
  KEYS[4] rxsum       zset: the conversation's reaction summaries
  KEYS[5] rxwho       hash: the message's reactions by user (reactionWhoKey of ARGV[2])

  ARGV[1] user (32 hex)   ARGV[2] conversation_seq   ARGV[3] reaction_key (validated by the caller:
  1-64 bytes, no byte below 0x21, no 0x7f)   ARGV[4] "+" add, "-" remove   ARGV[5] now (ms)
  ARGV[6] reaction_detail_max_members   ARGV[7] reaction_detail_max_per_message
  ARGV[8] the most distinct keys one message may have

  Returns {0, version, detailRows, markerOnly, marked, key1, count1, ...}   changed
          {1, version, detailRows, markerOnly, 0, key1, count1, ...}        nothing to change (idempotent)
          marked = 1: this add was counted with the mark alone (no detail row)
          {-3} no such group   {-15, J} dissolved at J   {-2} not an ACTIVE member
          {-20} no such message (absent, trimmed, not visible to the user, or an event)
          {-23} the message is recalled   {-24, max} a new key past the distinct keys' limit
]]
--- @include "includes/histRecord"
--- @include "includes/parseMember"

local user, seq, key, add, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == "+", ARGV[5]
local maxMembers, maxDetails, maxKeys = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])

local meta = redis.call("HMGET", KEYS[1], "version", "dissolved_at", "member_count")
if not meta[1] then return { -3 } end
if meta[2] then return { -15, tonumber(meta[2]) } end
local joinedAt, _, state = parseMember(redis.call("HGET", KEYS[2], user))
if state ~= "A" then return { -2 } end
if tonumber(seq) <= joinedAt then return { -20 } end
local m = redis.call("ZRANGEBYSCORE", KEYS[3], seq, seq)[1]
if not m then return { -20 } end
local mh = histHeader(m).fields
if mh[HIST.KIND] ~= "N" then return { -20 } end
if mh[HIST.STATE] == "R" then return { -23 } end

-- the summary as it is: version, detail rows, marks alone, then key/count pairs in order
local version, detailRows, markerOnly = 0, 0, 0
local keys, counts = {}, {}
local cur = redis.call("ZRANGEBYSCORE", KEYS[4], seq, seq)[1]
if cur then
  local parts = {}
  for p in string.gmatch(cur, "[^\t]+") do parts[#parts + 1] = p end
  version, detailRows, markerOnly = tonumber(parts[2]), tonumber(parts[3]), tonumber(parts[4])
  for i = 5, #parts - 1, 2 do
    keys[#keys + 1] = parts[i]
    counts[parts[i]] = tonumber(parts[i + 1])
  end
end

local marked = 0
local function answer(code)
  local out = { code, version, detailRows, markerOnly, marked }
  for _, k in ipairs(keys) do
    out[#out + 1] = k
    out[#out + 1] = counts[k]
  end
  return out
end

local field = user .. "\t" .. key
local mark = redis.call("HGET", KEYS[5], field)
if add then
  if mark then return answer(1) end
  if not counts[key] then
    if #keys >= maxKeys then return { -24, maxKeys } end
    keys[#keys + 1] = key
    counts[key] = 0
  end
  counts[key] = counts[key] + 1
  if tonumber(meta[3] or "0") <= maxMembers and detailRows < maxDetails then
    redis.call("HSET", KEYS[5], field, now)
    detailRows = detailRows + 1
  else
    redis.call("HSET", KEYS[5], field, "")
    markerOnly = markerOnly + 1
    marked = 1
  end
else
  if not mark then return answer(1) end
  redis.call("HDEL", KEYS[5], field)
  if mark == "" then markerOnly = markerOnly - 1 else detailRows = detailRows - 1 end
  counts[key] = (counts[key] or 1) - 1
  if counts[key] <= 0 then
    counts[key] = nil
    for i, k in ipairs(keys) do
      if k == key then
        table.remove(keys, i)
        break
      end
    end
  end
end
version = version + 1

local entry = { seq, version, detailRows, markerOnly }
for _, k in ipairs(keys) do
  entry[#entry + 1] = k
  entry[#entry + 1] = counts[k]
end
redis.call("ZREMRANGEBYSCORE", KEYS[4], seq, seq)
redis.call("ZADD", KEYS[4], seq, table.concat(entry, "\t"))
return answer(0)
