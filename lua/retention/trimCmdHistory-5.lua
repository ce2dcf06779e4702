--[[
  One bounded step of a CMD channel's retention trim (issue 26: "CMD history trimmed once its
  retention passed"), at the channel's commit bucket owner (fenced by the bucket's relay lease,
  like trimConversation). The channel's history (cmdhist, score seq, member
  "seq|messageIdHex|timestampMs|…") loses the entries the rule no longer keeps: older than
  max_age_ms (the entry's commit time, Redis TIME) OR followed by more than keep_count seqs; 0
  turns a rule off. The seq counter is never touched (a channel's seqs never repeat). One step
  also walks one HSCAN page of the idempotency index (client_msg_no -> seq) and drops the
  client_msg_nos of trimmed seqs: the idempotency window of a CMD channel is its retention. At
  most `budget` history entries are removed (or read, for the age rule) per call; `more` = 1 says
  the rule wants more. Readers need no floor: a CMD sync loads the entries after a read seq, and
  what is gone is simply not there.

  KEYS[1] lease     hash: the bucket's relay lease (owner, token) — docs/cluster.md
  KEYS[2] cmdseq    string: the channel's last seq
  KEYS[3] cmdhist   zset: the channel's history
  KEYS[4] cmdidem   hash: client_msg_no -> seq
  KEYS[5] cmdtrim   hash (the bucket's): channel ref -> the idempotency scan's cursor
  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3] channel ref "tenantHex|type|channelId"
  ARGV[4] now, ms (Redis TIME's clock: the caller reads it)
  ARGV[5] max_age_ms (0: no age rule)
  ARGV[6] keep_count (0: no count rule)
  ARGV[7] budget: the most history entries one call removes or reads
  ARGV[8] dry run: 1 computes and counts, writes nothing
  Returns {0, histRemoved, idemRemoved, more, histLeft, idemLeft}
          {-10}  the bucket's lease names another owner or a newer token (fenced: nothing written)
]]
--- @include "includes/fenceHolds"
if not fenceHolds(KEYS[1], ARGV[1], ARGV[2]) then return {-10} end
local now, maxAge, keep, budget = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local dry = ARGV[8] == "1"
local last = tonumber(redis.call("GET", KEYS[2]) or "0")
local head = redis.call("ZRANGE", KEYS[3], 0, 0, "WITHSCORES")
local first = last + 1
if #head > 0 then first = tonumber(head[2]) end
-- the floor the rules ask for: entries with seq < target go
local target, more = first, 0
if keep > 0 and last - keep + 1 > target then target = last - keep + 1 end
if maxAge > 0 then
  local cutoff = now - maxAge
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
-- one page of the idempotency index: client_msg_nos of seqs below what is kept go
local floor = math.max(target, first)
if not dry and floor > 1 then
  local cursor = redis.call("HGET", KEYS[5], ARGV[3]) or "0"
  local scan = redis.call("HSCAN", KEYS[4], cursor, "COUNT", budget)
  local drop = {}
  local kv = scan[2]
  for i = 1, #kv, 2 do
    if tonumber(kv[i + 1]) < floor then drop[#drop + 1] = kv[i] end
  end
  if #drop > 0 then idemRemoved = redis.call("HDEL", KEYS[4], unpack(drop)) end
  if scan[1] == "0" then redis.call("HDEL", KEYS[5], ARGV[3]) else redis.call("HSET", KEYS[5], ARGV[3], scan[1]) end
end
return {0, histRemoved, idemRemoved, more, redis.call("ZCARD", KEYS[3]), redis.call("HLEN", KEYS[4])}
