--[[
  One change of a tenant's message-type registry (issue 29, spec 003 §3): puts and deletes of
  declarations, applied together with one version step, or not at all. A node that reads the
  registry (HGETALL) sees one version whole, never part of a change.

  KEYS[1] typereg  hash: "v" -> version; "t:" .. custom_type -> declaration (canonical JSON)

  ARGV[1] the version the caller read ("" any: no compare)
  ARGV[2] the most types the tenant may hold (REGISTRY_MAX_TYPES)
  ARGV[3..] pairs: custom_type, declaration ("" deletes it)

  A put equal to the stored declaration and a delete of an absent type change nothing; when
  nothing of the change changes anything the version stays (an idempotent re-apply).

  Returns {0, version, changed (1/0), types after}
          {-18, current version}   REGISTRY_VERSION_MOVED: nothing written
          {-19, types after}       REGISTRY_FULL: nothing written
]]
if #ARGV < 2 or (#ARGV - 2) % 2 ~= 0 then return redis.error_reply("ERR applyTypes: ARGV is expected version, max, then pairs") end
local version = tonumber(redis.call("HGET", KEYS[1], "v") or "0")
if ARGV[1] ~= "" and tonumber(ARGV[1]) ~= version then return { -18, version } end

local count = redis.call("HLEN", KEYS[1]) - (version > 0 and 1 or 0)
local puts, dels = {}, {}
for i = 3, #ARGV, 2 do
  local field, decl = "t:" .. ARGV[i], ARGV[i + 1]
  local stored = redis.call("HGET", KEYS[1], field)
  if decl == "" then
    if stored then dels[#dels + 1] = field; count = count - 1 end
  elseif stored ~= decl then
    puts[#puts + 1] = field; puts[#puts + 1] = decl
    if not stored then count = count + 1 end
  end
end
if count > tonumber(ARGV[2]) then return { -19, count } end
if #puts == 0 and #dels == 0 then return { 0, version, 0, count } end
if #puts > 0 then redis.call("HSET", KEYS[1], unpack(puts)) end
if #dels > 0 then redis.call("HDEL", KEYS[1], unpack(dels)) end
redis.call("HSET", KEYS[1], "v", version + 1)
return { 0, version + 1, 1, count }
