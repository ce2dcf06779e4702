--[[
  One step of a fanout job (issue 22): the next chunk of the audience of the job's message at seq
  S, reading at most `count` members, so that the step holds Redis for about a millisecond whatever
  the size of the group (REDIS_CALL_MEMBER_BUDGET). Reads only; the relay appends the chunk to the
  dispatch log, then saves the job's progress (saveFanoutProgress, fenced).

  A group message: `HSCAN grpmembers cursor COUNT count`, keeping each member whose visible
  interval contains S: joinedAt < S and (leftAt absent or S < leftAt) (ADR-0021: the intervals are
  the visibility authority). This is the audience frozen at S's version: a member who joined after
  S has joinedAt >= S (joinedAt = J - 1 for the join event at seq J > S), a member who left after S
  has leftAt > S, and the initial members have joinedAt 0. The one difference is a user whose
  interval a rejoin after S replaced (they were a member at S, left, and joined again): they are
  left out, and S lies outside their visible interval anyway, so history and unread hide it from
  them. HSCAN returns every member present for the whole scan at least once (a rehash may repeat
  some: the log is at-least-once and its consumers are idempotent per (user, conversation, seq));
  members added during the scan have joinedAt >= S and are filtered out.
  A control message: its explicit audience, copied into the job by markCommitted; the cursor is an
  offset into it (in users), a chunk its next `count` users.

  KEYS[1] grpmembers   hash: user hex -> "joinedAt|leftAt|state"
  KEYS[2] hist         zset: the conversation history
  KEYS[3] fanoutState  hash: job -> "version|cursor|chunk"; job.."|audience" -> explicit audience;
                       job.."|pushed" -> "1" when the seq's members record carried its pushes

  ARGV[1] job "tenantHex|conversationHex|seq"
  ARGV[2] count: the most members (or audience users) this step reads

  Returns {nextCursor, recipients, entry, version, cursor, chunk, pushed}: the cursor after this
  step ("0": the audience is done), the chunk's recipients (concatenated 32-hex ids, maybe none),
  S's history entry ("" if history lost it), the version the job was recorded at, the cursor and
  chunk number this step started from (saveFanoutProgress compares them), and "1" when the seq's
  members record already carried its pushes to devices ("0" otherwise). {} when the job is gone.
]]
--- @include "includes/parseMember"

local job = ARGV[1]
local count = tonumber(ARGV[2])
local state = redis.call("HGET", KEYS[3], job)
if not state then return {} end
local version, cursor, chunk = string.match(state, "^(%d+)|(%d+)|(%d+)$")
local seq = tonumber(string.match(job, "|(%d+)$"))
local entry = redis.call("ZRANGEBYSCORE", KEYS[2], seq, seq)[1] or ""

local audience = redis.call("HGET", KEYS[3], job .. "|audience")
local next, out = "0", {}
if audience then
  local from = tonumber(cursor)
  local total = #audience / 32
  local to = math.min(from + count, total)
  out[1] = string.sub(audience, from * 32 + 1, to * 32)
  if to < total then next = tostring(to) end
else
  local page = redis.call("HSCAN", KEYS[1], cursor, "COUNT", count)
  next = page[1]
  local fields = page[2]
  for i = 1, #fields, 2 do
    local joinedAt, leftAt = parseMember(fields[i + 1])
    if joinedAt ~= nil and joinedAt < seq and (leftAt == nil or seq < leftAt) then out[#out + 1] = fields[i] end
  end
end
local pushed = redis.call("HEXISTS", KEYS[3], job .. "|pushed") == 1 and "1" or "0"
return {next, table.concat(out), entry, version, cursor, chunk, pushed}
