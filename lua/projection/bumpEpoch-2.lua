--[[
  Bumps session_projection:epoch (ADR-0021 §4) and records why, in one atomic step, so the epoch
  and its log never disagree. Both keys carry the {g000} tag.

  KEYS[1] session_projection:epoch       string: the epoch (0 before the first bump)
  KEYS[2] session_projection:epoch_log   list: JSON bumps, newest first

  ARGV[1] reason
  ARGV[2] by (principal, or "projection" for the consumer's own audit)
  ARGV[3] now (ms)
  ARGV[4] bumps kept in the log

  Returns the new epoch.
]]
local e = redis.call("INCR", KEYS[1])
redis.call("LPUSH", KEYS[2], cjson.encode({epoch = e, reason = ARGV[1], by = ARGV[2], at = tonumber(ARGV[3])}))
redis.call("LTRIM", KEYS[2], 0, tonumber(ARGV[4]) - 1)
return e
