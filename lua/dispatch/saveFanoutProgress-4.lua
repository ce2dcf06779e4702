--[[
  Saves a fanout job's progress after the relay appended the chunk that expandAudience gave it
  (issue 22): fenced by the bucket's relay lease, and a compare-and-set on the step it started
  from. A crash between the append and this save makes the next step expand and append the same
  chunk again (at-least-once; consumers are idempotent per (user, conversation, seq)). When the
  audience is done (next cursor "0") the job leaves the queue and its conversation's pending count
  drops by one in the same step (the count's field goes at 0), so the conversation's next seqs are
  dispatched directly again.

  KEYS[1] lease          hash: the bucket's relay lease (owner, token) — docs/cluster.md
  KEYS[2] fanoutJobs     list: the bucket's fanout jobs, in order (the job is its head)
  KEYS[3] fanoutState    hash: job -> "version|cursor|chunk"; job.."|audience"; job.."|pushed"
  KEYS[4] fanoutPending  hash: "tenantHex|conversationHex" -> jobs pending

  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3] job "tenantHex|conversationHex|seq"
  ARGV[4] cursor the step started from
  ARGV[5] chunk number the step started from
  ARGV[6] next cursor ("0": done)
  ARGV[7] next chunk number

  Returns 1: saved, the job goes on; 2: the job is done and left the queue; 0: the job is not at
  that step any more (not the head, gone, or moved on: nothing written); -10: fenced (nothing
  written).
]]
--- @include "includes/fenceHolds"
if not fenceHolds(KEYS[1], ARGV[1], ARGV[2]) then return -10 end
local job = ARGV[3]
if redis.call("LINDEX", KEYS[2], 0) ~= job then return 0 end
local state = redis.call("HGET", KEYS[3], job)
if not state then return 0 end
local version, cursor, chunk = string.match(state, "^(%d+)|(%d+)|(%d+)$")
if cursor ~= ARGV[4] or chunk ~= ARGV[5] then return 0 end
if ARGV[6] ~= "0" then
  redis.call("HSET", KEYS[3], job, version .. "|" .. ARGV[6] .. "|" .. ARGV[7])
  return 1
end
redis.call("LPOP", KEYS[2])
redis.call("HDEL", KEYS[3], job, job .. "|audience", job .. "|pushed")
local ref = string.match(job, "^(.*)|%d+$")
if redis.call("HINCRBY", KEYS[4], ref, -1) <= 0 then redis.call("HDEL", KEYS[4], ref) end
return 2
