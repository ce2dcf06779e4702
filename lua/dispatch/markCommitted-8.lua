--[[
  Marks commits COMMITTED once the relay has appended them to the dispatch log, or handed them to
  a durable fanout job (issue 22): "COMMITTED" is "in the dispatch log or in a fanout job". Drops
  the commit record, the outbox entry and the vpending entry; a seq handed to a job gets the job
  in the same step (the bucket's job queue, its state, its conversation's pending count), so
  nothing is ever in neither place. Then retires every version delta that no undispatched message
  needs any more (all of them when nothing is pending): a job expands its audience from the member
  intervals (expandAudience), never from deltas.

  KEYS[1] commits        hash: seq -> "R|version|audience" — RECORDED control messages
  KEYS[2] outbox         list: the bucket's outbox
  KEYS[3] vpending       zset: score version, member seq — RECORDED group messages
  KEYS[4] grpdeltas      hash: version -> "op|targets"
  KEYS[5] lease          hash: the bucket's relay lease (owner, token) — docs/cluster.md
  KEYS[6] fanoutJobs     list: the bucket's fanout jobs "tenantHex|conversationHex|seq", in order
  KEYS[7] fanoutState    hash: job -> "version|cursor|chunk" (the next expandAudience step);
                         job.."|audience" -> a control message's explicit audience (concatenated ids);
                         job.."|pushed" -> "1": the relay appended the seq's members record, so the
                         job's chunks carry no pushes to devices (issue 27)
  KEYS[8] fanoutPending  hash: "tenantHex|conversationHex" -> jobs pending for the conversation

  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3] outbox ref "tenantHex|conversationHex"
  ARGV[4] n: how many of the seqs that follow were appended to the log
  ARGV[5..4+n] seqs appended to the dispatch log
  ARGV[5+n..] seqs handed to fanout jobs (loadForDispatch said "F" or "M"), in seq order; "S|m"
              for a seq whose members record the relay appended

  Returns {marked, queued}: the number of seqs that were still RECORDED (in commits or vpending),
  and how many fanout jobs were queued; or {-10} when the bucket's lease names another owner or a
  newer token (fenced: nothing written).
]]
--- @include "includes/fenceHolds"
if not fenceHolds(KEYS[5], ARGV[1], ARGV[2]) then return {-10} end
local ref = ARGV[3]
local n = tonumber(ARGV[4])
local marked, queued = 0, 0
for i = 5, #ARGV do
  local seq, pushed = ARGV[i], false
  if i > 4 + n and string.sub(seq, -2) == "|m" then
    seq, pushed = string.sub(seq, 1, -3), true
  end
  if i > 4 + n then
    -- to a fanout job: the version (and a control message's audience) move into the job
    local job = ref .. "|" .. seq
    local rec = redis.call("HGET", KEYS[1], seq)
    local version, audience = nil, nil
    if rec then
      version, audience = string.match(rec, "^R|(%d+)|(.*)$")
    else
      version = redis.call("ZSCORE", KEYS[3], seq)
    end
    if version then
      redis.call("RPUSH", KEYS[6], job)
      redis.call("HSET", KEYS[7], job, version .. "|0|0")
      if audience then redis.call("HSET", KEYS[7], job .. "|audience", audience) end
      if pushed then redis.call("HSET", KEYS[7], job .. "|pushed", "1") end
      redis.call("HINCRBY", KEYS[8], ref, 1)
      queued = queued + 1
    end
  end
  marked = marked + redis.call("HDEL", KEYS[1], seq) + redis.call("ZREM", KEYS[3], seq)
  redis.call("LREM", KEYS[2], 1, ref .. "|" .. seq)
end
local oldest = redis.call("ZRANGE", KEYS[3], 0, 0, "WITHSCORES")
if #oldest == 0 then
  redis.call("DEL", KEYS[4])
else
  -- a message frozen at version v needs deltas v+1 .. current; everything at or below v goes
  local floor = tonumber(oldest[2])
  for _, k in ipairs(redis.call("HKEYS", KEYS[4])) do
    if tonumber(k) <= floor then redis.call("HDEL", KEYS[4], k) end
  end
end
return {marked, queued}
