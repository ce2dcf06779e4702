--[[
  One user's call mark (spec 003 §5, issue 28): which call the user is in, so that a second INVITE
  finds them busy. The mark is "callId|peerHex|groupHex|state" with state O (calling out, ringing),
  R (ringing in) or A (answered), and it expires on its own: a ring after rtc_ring_timeout, an
  answered call after RTC_CALL_MAX_MS (a client that died mid-call does not hold its user busy).
  One key, so one call on any Redis topology; a call's two users are two calls of this script.

  A call is named by its id AND the peer ("callId|peerHex"): the id is the caller's choice, so a
  third member who learned it (or picked it) matches no mark of either user and can neither ring
  into the call nor end it.

  KEYS[1] rtccall  string: the user's mark
  ARGV[1] op: "ring" (set when none; the same call again is fine), "answer" (the same call: state A,
          the longer expiry), "end" (the same call: delete)
  ARGV[2] the call as this user's mark names it: "callId|peerHex"   ARGV[3] the mark to set (ring)
  ARGV[4] its expiry, ms

  Returns {0} done   {1} nothing to do (ring: the same call was set already; end: not this call)
          {-25, callId} ring: the user is in another call   {-26} answer: the user is not in this call
]]
local op, call = ARGV[1], ARGV[2]
local cur = redis.call("GET", KEYS[1])
local curCall = cur and string.match(cur, "^([^|]+|[^|]+)|") or nil
if op == "ring" then
  if curCall == call then return { 1 } end
  if cur then return { -25, string.match(curCall, "^[^|]+") } end
  redis.call("SET", KEYS[1], ARGV[3], "PX", ARGV[4])
  return { 0 }
elseif op == "answer" then
  if curCall ~= call then return { -26 } end
  local rest = string.match(cur, "^(.*)|%a$")
  redis.call("SET", KEYS[1], rest .. "|A", "PX", ARGV[4])
  return { 0 }
elseif op == "end" then
  if curCall ~= call then return { 1 } end
  redis.call("DEL", KEYS[1])
  return { 0 }
end
return redis.error_reply("ERR callState: unknown op " .. tostring(op))
