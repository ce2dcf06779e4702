--[[
  A consumer's read of one dispatch log partition (RedisStreamsDispatchLog.readFrom): its
  watermarks and up to `count` records after a position, in one atomic step (a trim cannot slip
  between the two). XINFO STREAM answers the first and the last record whole besides the numbers;
  only the numbers and the first record's id leave this script: the consumers read every partition
  several times a second, mostly to find nothing new.

  KEYS[1] stream   the partition's stream

  ARGV[1] start    XRANGE start ("-", or "(" .. the id of the last record read)
  ARGV[2] count    the most records (0: the watermarks only)
  ARGV[3..] known  pairs id, conversation seq of records the caller holds already (the ones its
                   own process appended): a record with that id and that seq (field "s") comes back
                   as the bare id, not {id, fields} — a consumer on the node that appended it reads
                   its body from memory, not again over the wire. The seq guards against an id
                   reused by another record (a failover to a replica that lacked it, whose clock is
                   behind): that one comes whole

  Returns {exists, length, entries-added, last-generated-id, first record's id ("" none), records}
  with the records as XRANGE gives them (a known one as its id alone); {0, 0, 0, "0-0", "", {}}
  when the stream does not exist.
]]
local info = redis.pcall("XINFO", "STREAM", KEYS[1])
if type(info) ~= "table" or info.err then
  return {0, 0, 0, "0-0", "", {}}
end
local length, added, last, first = 0, 0, "0-0", ""
for i = 1, #info, 2 do
  local k = info[i]
  if k == "length" then length = info[i + 1]
  elseif k == "entries-added" then added = info[i + 1]
  elseif k == "last-generated-id" then last = info[i + 1]
  elseif k == "first-entry" and type(info[i + 1]) == "table" then first = info[i + 1][1]
  end
end
local count = tonumber(ARGV[2])
local records = {}
if count > 0 then
  records = redis.call("XRANGE", KEYS[1], ARGV[1], "+", "COUNT", count)
  if #ARGV > 2 then
    local known = {}
    for i = 3, #ARGV - 1, 2 do known[ARGV[i]] = ARGV[i + 1] end
    for i = 1, #records do
      local seq = known[records[i][1]]
      if seq then
        local fields = records[i][2]
        for j = 1, #fields - 1, 2 do
          if fields[j] == "s" then
            if fields[j + 1] == seq then records[i] = records[i][1] end
            break
          end
        end
      end
    end
  end
end
return {1, length, added, last, first, records}
