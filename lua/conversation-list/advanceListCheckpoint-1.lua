--[[
  Compare-and-set of the conversation-list consumer's checkpoint of one dispatch-log partition
  (spec 002 §2.1: it moves only after the rows of every record before it were flushed).

  KEYS[1] checkpoint  string: "offset|streamId" of the next record to read

  ARGV[1] expected value ("" = none yet)
  ARGV[2] new value

  Returns 1 when it moved, 0 when another consumer moved it first.
]]
local cur = redis.call("GET", KEYS[1]) or ""
if cur ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[2])
return 1
