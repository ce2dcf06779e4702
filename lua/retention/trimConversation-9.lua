--[[
  One bounded step of a conversation's retention trim (issue 26), at the conversation's relay
  bucket owner: moves the conversation's global earliest seq (grpmeta.earliest_seq, spec 000's
  "global earliest" of earliest_available_conversation_seq = max(global earliest, joined_at + 1))
  forward and removes what lies below it, in the same atomic step: the history entries and the
  unread index entries beside them. Every reader (readHistory, conversationSummary,
  recomputeUnread, markRead, loadForDispatch) then finds nothing older: the definitional unread
  can never count a trimmed message, because the records it counts are gone in the same step
  that moved the floor. One step also walks one HSCAN page of the idempotency index and drops
  the ids of trimmed seqs (the idempotency window of a conversation is its retention).

  Rule: a record is trimmed when it is older than max_age_ms (its created_at, by the caller's
  clock) OR when more than keep_count seqs follow it (seq <= last seq - keep_count); 0 turns a
  rule off. Never past a record still waiting for dispatch: the oldest seq in vpending (group
  messages) or commits (control messages) bounds the floor, and a conversation with fanout jobs
  pending is not trimmed this step. At most `budget` history entries are removed (or read, for
  the age rule) per call; `more` = 1 says the rule wants more.

  KEYS[1] lease          hash: the bucket's relay lease (owner, token) — docs/cluster.md
  KEYS[2] grpmeta        hash: earliest_seq (the global earliest, absent = 1), idem_trim_cursor
  KEYS[3] cseq           string: the last allocated conversation_seq
  KEYS[4] hist           zset: the conversation history
  KEYS[5] unreadidx      zset: score seq, the unread index
  KEYS[6] vpending       zset: member seq, score version — RECORDED group messages
  KEYS[7] commits        hash: seq -> RECORDED control messages
  KEYS[8] fanoutPending  hash: "tenantHex|conversationHex" -> fanout jobs pending (the bucket's)
  KEYS[9] idem           hash: client_message_id -> "seq|..." (or "seq" for membership events)

  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3] outbox ref "tenantHex|conversationHex"
  ARGV[4] now, ms (the caller's clock, the one created_at was stamped with)
  ARGV[5] max_age_ms (0: no age rule)
  ARGV[6] keep_count (0: no count rule)
  ARGV[7] budget: the most history entries one call removes or reads
  ARGV[8] dry run: 1 computes and counts, writes nothing

  Returns {0, earliestBefore, earliestAfter, histRemoved, idxRemoved, idemRemoved, more}
          {1, earliest, reason} nothing done: reason "pending" (a fanout job of the conversation is
                                pending, or more RECORDED commits than the budget), "nogroup"
          {-10}                 the bucket's lease names another owner or a newer token (fenced)
]]
--- @include "includes/fenceHolds"
--- @include "includes/histRecord"

if not fenceHolds(KEYS[1], ARGV[1], ARGV[2]) then return {-10} end
if redis.call("EXISTS", KEYS[2]) == 0 then return {1, 1, "nogroup"} end
local earliest = tonumber(redis.call("HGET", KEYS[2], "earliest_seq") or "1")
local now, maxAge, keep, budget = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local dry = ARGV[8] == "1"
local last = tonumber(redis.call("GET", KEYS[3]) or "0")

-- the floor the rules ask for (records with seq < target go)
local target, more = earliest, 0
if keep > 0 and last - keep + 1 > target then target = last - keep + 1 end
if maxAge > 0 then
  local cutoff = now - maxAge
  local page = redis.call("ZRANGEBYSCORE", KEYS[4], "-inf", "+inf", "WITHSCORES", "LIMIT", 0, budget)
  local ageTarget = nil
  for i = 1, #page, 2 do
    local at = tonumber(histGet(page[i], HIST.CREATED_AT) or "0")
    if at >= cutoff then ageTarget = tonumber(page[i + 1]); break end
  end
  if ageTarget == nil then
    -- every entry read is past the age: the floor goes past the last of them, or past `last`
    if #page >= 2 * budget then ageTarget = tonumber(page[#page]) + 1; more = 1
    elseif #page > 0 then ageTarget = last + 1
    else ageTarget = target end
  end
  if ageTarget > target then target = ageTarget end
end
if target > last + 1 then target = last + 1 end

-- never past a record waiting for dispatch
if target > earliest then
  if tonumber(redis.call("HGET", KEYS[8], ARGV[3]) or "0") > 0 then return {1, earliest, "pending"} end
  if redis.call("ZCARD", KEYS[6]) > budget or redis.call("HLEN", KEYS[7]) > budget then return {1, earliest, "pending"} end
  for _, s in ipairs(redis.call("ZRANGE", KEYS[6], 0, -1)) do
    if tonumber(s) < target then target = tonumber(s) end
  end
  for _, s in ipairs(redis.call("HKEYS", KEYS[7])) do
    if tonumber(s) < target then target = tonumber(s) end
  end
end

-- at most `budget` history entries per call
if target > earliest then
  local nth = redis.call("ZRANGEBYSCORE", KEYS[4], "-inf", "(" .. target, "WITHSCORES", "LIMIT", budget, 1)
  if #nth > 0 then target = tonumber(nth[2]); more = 1 end
end

local histRemoved, idxRemoved, idemRemoved = 0, 0, 0
if target > earliest then
  if dry then
    histRemoved = redis.call("ZCOUNT", KEYS[4], "-inf", "(" .. target)
    idxRemoved = redis.call("ZCOUNT", KEYS[5], "-inf", "(" .. target)
  else
    histRemoved = redis.call("ZREMRANGEBYSCORE", KEYS[4], "-inf", "(" .. target)
    idxRemoved = redis.call("ZREMRANGEBYSCORE", KEYS[5], "-inf", "(" .. target)
    redis.call("HSET", KEYS[2], "earliest_seq", target)
  end
end

-- one page of the idempotency index: ids of seqs below the floor go
local floor = math.max(target, earliest)
if not dry and floor > 1 then
  local cursor = redis.call("HGET", KEYS[2], "idem_trim_cursor") or "0"
  local scan = redis.call("HSCAN", KEYS[9], cursor, "COUNT", budget)
  local drop = {}
  local kv = scan[2]
  for i = 1, #kv, 2 do
    local seq = tonumber(string.match(kv[i + 1], "^(%d+)") or "0")
    if seq < floor then drop[#drop + 1] = kv[i] end
  end
  if #drop > 0 then idemRemoved = redis.call("HDEL", KEYS[9], unpack(drop)) end
  redis.call("HSET", KEYS[2], "idem_trim_cursor", scan[1])
end

local after = earliest
if target > earliest then after = target end
return {0, earliest, after, histRemoved, idxRemoved, idemRemoved, more}
