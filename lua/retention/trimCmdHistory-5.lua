--[[
  One bounded step of a CMD channel's retention trim (issue 26: "CMD history trimmed once every
  recipient has acknowledged past it or its retention passed"), at the channel's commit bucket
  owner (fenced by the bucket's relay lease, like trimConversation). The channel's history
  (cmdhist, score seq, member "seq|messageIdHex|timestampMs|…") loses the entries the rules no
  longer keep — older than max_age_ms (the entry's commit time, Redis TIME) OR followed by more
  than keep_count seqs; 0 turns a rule off — and those at or below acked_through, the highest seq
  up to which every recipient of every entry has acknowledged (the caller reads it from the CMD
  state; 0: none). The seq counter is never touched (a channel's seqs never repeat).

  The idempotency index (client_msg_no -> "seq|timestampMs|messageIdHex") follows the RULES only:
  the idempotency window of a CMD channel is its retention, also for a message every recipient
  acknowledged at once (a retry of it is answered as the duplicate it is, from the value). One
  step walks one HSCAN page of it and drops the values the count rule or the age rule (by the
  value's own commit time) no longer keeps; a value of the old form ("seq" alone, no time) goes
  with its history entry, as before. At most `budget` history entries are removed (or read, for
  the age rule) per call; `more` = 1 says the rules or the acknowledgements want more. Readers need
  no floor: a CMD sync loads the entries after a read seq, and what is gone is simply not there.

  KEYS[1] lease     hash: the bucket's relay lease (owner, token) — docs/cluster.md
  KEYS[2] cmdseq    string: the channel's last seq
  KEYS[3] cmdhist   zset: the channel's history
  KEYS[4] cmdidem   hash: client_msg_no -> "seq|timestampMs|messageIdHex" (or "seq")
  KEYS[5] cmdtrim   hash (the bucket's): channel ref -> the idempotency scan's cursor
  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3] channel ref "tenantHex|type|channelId"
  ARGV[4] now, ms (Redis TIME's clock: the caller reads it)
  ARGV[5] max_age_ms (0: no age rule)
  ARGV[6] keep_count (0: no count rule)
  ARGV[7] budget: the most history entries one call removes or reads
  ARGV[8] dry run: 1 computes and counts, writes nothing
  ARGV[9] acked_through (0: none)
  Returns {0, histRemoved, idemRemoved, more, histLeft, idemLeft}
          {-10}  the bucket's lease names another owner or a newer token (fenced: nothing written)
]]
--- @include "includes/fenceHolds"
if not fenceHolds(KEYS[1], ARGV[1], ARGV[2]) then return {-10} end
local now, maxAge, keep, budget = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local dry = ARGV[8] == "1"
local acked = tonumber(ARGV[9] or "0")
local last = tonumber(redis.call("GET", KEYS[2]) or "0")
local head = redis.call("ZRANGE", KEYS[3], 0, 0, "WITHSCORES")
local first = last + 1
if #head > 0 then first = tonumber(head[2]) end
-- the floor the rules ask for: entries with seq < target go
local target, more = first, 0
local keepFrom = 0
if keep > 0 then keepFrom = last - keep + 1 end
if keepFrom > target then target = keepFrom end
local cutoff = now - maxAge
if maxAge > 0 then
  local page = redis.call("ZRANGE", KEYS[3], 0, budget - 1, "WITHSCORES")
  local ageTarget = nil
  for i = 1, #page, 2 do
    local at = tonumber(string.match(page[i], "^[^|]*|[^|]*|(%d+)") or "0")
    if at >= cutoff then ageTarget = tonumber(page[i + 1]); break end
  end
  if ageTarget == nil then
    -- every entry read is past the age: past the last of them, or past `last` when that was all
    if #page >= 2 * budget then ageTarget = tonumber(page[#page]) + 1; more = 1
    else ageTarget = last + 1 end
  end
  if ageTarget > target then target = ageTarget end
end
-- and what every recipient acknowledged
if acked + 1 > target then target = acked + 1 end
if target > last + 1 then target = last + 1 end
-- at most `budget` history entries per call
if target > first then
  local nth = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", "(" .. target, "WITHSCORES", "LIMIT", budget, 1)
  if #nth > 0 then target = tonumber(nth[2]); more = 1 end
end
local histRemoved, idemRemoved = 0, 0
if target > first then
  if dry then histRemoved = redis.call("ZCOUNT", KEYS[3], "-inf", "(" .. target)
  else histRemoved = redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", "(" .. target) end
end
-- one page of the idempotency index, by the rules (a value's own time for the age rule); a value
-- of the old form goes with its history entry
local floor = math.max(target, first)
if not dry and (keep > 0 or maxAge > 0 or floor > 1) then
  local cursor = redis.call("HGET", KEYS[5], ARGV[3]) or "0"
  local scan = redis.call("HSCAN", KEYS[4], cursor, "COUNT", budget)
  local drop = {}
  local kv = scan[2]
  for i = 1, #kv, 2 do
    local s, at = string.match(kv[i + 1], "^(%d+)|(%d+)|")
    local gone
    if s then
      s, at = tonumber(s), tonumber(at)
      gone = (keep > 0 and s < keepFrom) or (maxAge > 0 and at < cutoff)
    else
      gone = tonumber(kv[i + 1]) < floor
    end
    if gone then drop[#drop + 1] = kv[i] end
  end
  if #drop > 0 then idemRemoved = redis.call("HDEL", KEYS[4], unpack(drop)) end
  if scan[1] == "0" then redis.call("HDEL", KEYS[5], ARGV[3]) else redis.call("HSET", KEYS[5], ARGV[3], scan[1]) end
end
return {0, histRemoved, idemRemoved, more, redis.call("ZCARD", KEYS[3]), redis.call("HLEN", KEYS[4])}
