--[[
  Records that a user's session list was rebuilt at a projection epoch (ADR-0021 §4). The mark
  only moves forward: a slower rebuild at an older epoch must not undo a newer one.

  KEYS[1] epoch_marks   hash: tenantHex:userHex -> epoch

  ARGV[1] user ref "tenantHex:userHex"
  ARGV[2] epoch

  Returns the mark after the call.
]]
local m = tonumber(redis.call("HGET", KEYS[1], ARGV[1]) or "0")
local e = tonumber(ARGV[2])
if e > m then
  redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
  return e
end
return m
