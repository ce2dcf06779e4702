--[[
  Commits one durable CMD message (spec 001, issue 13; docs/cmd-sync-log.md) in one atomic step on
  the channel's commit bucket: idempotency look-up by client_msg_no -> the audience (the explicit
  list, or the source group's ACTIVE members read here, so frozen at the moment the seq is
  allocated: a member added later receives from the next seq on, WuKongIM #527) -> INCR the
  channel's seq -> history entry with the frozen recipients and Redis TIME -> the bucket's
  recent-commit index, trimmed by age.

  KEYS[1] cmdseq      string: the channel's seq counter
  KEYS[2] cmdhist     zset: score seq, member "seq|messageIdHex|timestampMs|flags|fromHex|clientMsgNoB64|recipientsHex|payloadB64"
  KEYS[3] cmdidem     hash: client_msg_no -> "seq|timestampMs|messageIdHex" (a value written before
                      issue 26's acknowledged trim is "seq" alone): the commit time lets retention
                      keep a client_msg_no for the channel's age rule after its history entry went
  KEYS[4] cmdrecent   zset (the bucket's): score commit ms, member "tenantHex|type|channelId|seq"
  KEYS[5] grpmembers  hash of the source group (user hex -> "joinedAt|leftAt|state"); for a
                      request-scoped send any key of the same tag, never read
  KEYS[6] grpmeta     hash of the source group (dissolved_at: issue 24; member_count: its ACTIVE
                      members); for a request-scoped send any key of the same tag, never read

  ARGV[1] mode: "g" group-sourced, "r" request-scoped
  ARGV[2] client_msg_no (the idempotency key, as given)
  ARGV[3] the rest of the entry after its seq and timestamp, without recipients and payload:
          "messageIdHex", ARGV[4] flags, ARGV[5] fromHex ("" = system), ARGV[6] clientMsgNoB64
  ARGV[7] payload base64
  ARGV[8] the channel's cmdrecent prefix "tenantHex|type|channelId|"
  ARGV[9] retention of cmdrecent in ms (entries older than TIME - retention are trimmed)
  ARGV[10] the most recipients a message may have
  ARGV[11] request-scoped: the recipients, 32-hex ids concatenated, sorted, distinct ("" for "g")

  Returns
    {0, seq, timestampMs, recipientsHex}   committed
    {1, seq, entry, idem}                   this client_msg_no was committed before: its entry ("" when
                                            retention removed it: every recipient had acknowledged
                                            it) and its idempotency value; nothing written
    {-3}                                    group-sourced and no such group: nothing written
    {-13, count}                            more recipients than ARGV[10]: nothing written
    {-15, J}                                group-sourced and the group was dissolved at J: nothing
                                            written (nothing goes to a group after its dissolve event)
]]
local existing = redis.call("HGET", KEYS[3], ARGV[2])
if existing then
  local at = tonumber(string.match(existing, "^(%d+)"))
  local entry = redis.call("ZRANGEBYSCORE", KEYS[2], at, at)[1]
  return {1, at, entry or "", existing}
end

local recipients = ARGV[11]
if ARGV[1] == "g" then
  local dissolvedAt = redis.call("HGET", KEYS[6], "dissolved_at")
  if dissolvedAt then return {-15, tonumber(dissolvedAt)} end
  -- the cap first, from the group's count (one HGET): a group past it is refused before its member
  -- table is read, so this script never reads more than ARGV[10] current members (issue 22: a
  -- million-member group's table read in one script blocked Redis for seconds). The table also
  -- holds former members (their intervals), which the read below passes over.
  local count = redis.call("HGET", KEYS[6], "member_count")
  if not count then return {-3} end
  if tonumber(count) > tonumber(ARGV[10]) then return {-13, tonumber(count)} end
  local all = redis.call("HGETALL", KEYS[5])
  local active = {}
  for i = 1, #all, 2 do
    if string.sub(all[i + 1], -2) == "|A" then active[#active + 1] = all[i] end
  end
  if #active > tonumber(ARGV[10]) then return {-13, #active} end
  table.sort(active)
  recipients = table.concat(active)
end

local t = redis.call("TIME")
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seq = redis.call("INCR", KEYS[1])
redis.call("ZADD", KEYS[2], seq, seq .. "|" .. ARGV[3] .. "|" .. ms .. "|" .. ARGV[4] .. "|" .. ARGV[5] .. "|" .. ARGV[6] .. "|" .. recipients .. "|" .. ARGV[7])
redis.call("HSET", KEYS[3], ARGV[2], seq .. "|" .. ms .. "|" .. ARGV[3])
redis.call("ZADD", KEYS[4], ms, ARGV[8] .. seq)
redis.call("ZREMRANGEBYSCORE", KEYS[4], "-inf", "(" .. (ms - tonumber(ARGV[9])))
return {0, seq, ms, recipients}
