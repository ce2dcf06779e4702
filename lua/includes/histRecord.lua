-- histRecord: THE layout of a history entry (a member of a conversation's `hist` zset, score =
-- its conversation_seq), read and written through this include by every script and through
-- core/conversation/history.ts by every TypeScript reader (docs/architecture.md "The message
-- record"). Version 2, written since issue 25:
--
--   seq "|v2" { "|" name "=" value } "\n" body
--
-- a header of named fields, then the opaque body (the base64 payload) after the first "\n".
-- A reader finds the end of the header and never walks the body, however large (a 1,000-user
-- join event's body is ~21 KB); a field is added by naming it in HIST below (and in
-- history.ts), with no other script touched. Header values never hold "|", "=" or "\n" (hex
-- ids, numbers, flags, a content type), so a value needs no escaping; encode refuses one that
-- would. A field a reader does not know survives its decode + encode (a later rewrite of the
-- entry, e.g. a recall, keeps what a newer writer added).
--
-- Version 1 (before issue 25, positional, still read; never rewritten except by a
-- read-modify-write, which writes version 2):
--   seq|messageId|sender|kind|countsUnread|createdAt|contentType|body[|mentions]
--
-- A writer (TypeScript) encodes the entry without its seq (a "rest": "v2|…"); the committing
-- script allocates the seq and stamps it in front. Every function here takes an entry or a rest.

-- The header fields (spec names in the comments). history.ts HIST_FIELD holds the same names
-- (test/lua/histRecord.test.ts compares them).
local HIST = {
  MESSAGE_ID = "id",     -- message_id, 32 hex
  SENDER_ID = "from",    -- sender_id, 32 hex
  KIND = "kind",         -- N normal, C control
  COUNTS_UNREAD = "cu",  -- counts_unread, 1 or 0
  CREATED_AT = "at",     -- created_at, ms
  CONTENT_TYPE = "ct",   -- content_type
  MENTIONS = "men",      -- the mentioned users, concatenated 32-hex ids (spec 002 §3.2); absent: none
}
local HIST_VERSION = 2
-- the order encode writes the known fields in (the fields it does not know follow)
local HIST_ORDER = { HIST.MESSAGE_ID, HIST.SENDER_ID, HIST.KIND, HIST.COUNTS_UNREAD, HIST.CREATED_AT, HIST.CONTENT_TYPE, HIST.MENTIONS }
-- version 1: the fields before the body, in their positions after the seq
local HIST_V1 = { HIST.MESSAGE_ID, HIST.SENDER_ID, HIST.KIND, HIST.COUNTS_UNREAD, HIST.CREATED_AT, HIST.CONTENT_TYPE }

local histRecord = {}

-- The parts of an entry or rest: seq (nil for a rest), version, the header's named fields as
-- (name -> value, names in the order read), and the body's first index; header only (the body
-- is not read) unless `tail`: a version 1 entry's mentions follow its body.
local function histParts(s, tail)
  local seq, version, at = string.match(s, "^(%d*)|?v(%d+)()")
  local fields, names = {}, {}
  if version then
    local nl = string.find(s, "\n", at, true) or (#s + 1)
    for name, value in string.gmatch(string.sub(s, at, nl - 1), "|([^=|]+)=([^|]*)") do
      fields[name] = value; names[#names + 1] = name
    end
    return tonumber(seq), tonumber(version), fields, names, nl + 1
  end
  -- version 1: a rest's first field is its 32-hex message id, an entry's its (shorter) seq
  local p = 1
  if string.find(s, "|", 1, true) ~= 33 then
    seq = string.match(s, "^(%d+)|")
    if not seq then return nil end
    p = #seq + 2
  else
    seq = nil
  end
  for i = 1, #HIST_V1 do
    local bar = string.find(s, "|", p, true)
    if not bar then return nil end
    fields[HIST_V1[i]] = string.sub(s, p, bar - 1); names[i] = HIST_V1[i]
    p = bar + 1
  end
  if tail then
    local bar = string.find(s, "|", p, true)
    if bar then fields[HIST.MENTIONS] = string.sub(s, bar + 1); names[#names + 1] = HIST.MENTIONS end
  end
  return tonumber(seq), 1, fields, names, p
end

-- One header field of an entry or rest (nil when absent), reading the header only. A version 1
-- entry's mentions sit after its body: reading them finds the body's end (one plain search).
function histRecord.get(s, name)
  local version, at = string.match(s, "^%d*|?v(%d+)()")
  if version then
    local nl = string.find(s, "\n", at, true) or (#s + 1)
    return string.match(string.sub(s, at, nl - 1), "|" .. name .. "=([^|]*)")
  end
  local _, _, fields = histParts(s, name == HIST.MENTIONS)
  return fields and fields[name]
end

-- The header of an entry or rest as a record without its body: { seq, version, fields, names }
-- (nil when s is no history entry).
function histRecord.header(s)
  local seq, version, fields, names = histParts(s, true)
  if not version then return nil end
  return { seq = seq, version = version, fields = fields, names = names }
end

-- The whole record: the header's and body = the opaque body (a copy of it: use header when the
-- body is not needed).
function histRecord.decode(s)
  local seq, version, fields, names, bodyAt = histParts(s, true)
  if not version then return nil end
  local body
  if version == 1 then
    body = string.sub(s, bodyAt, (string.find(s, "|", bodyAt, true) or (#s + 1)) - 1)
  else
    body = string.sub(s, bodyAt)
  end
  return { seq = seq, version = version, fields = fields, names = names, body = body }
end

local function histCheck(name, value)
  if not string.find(name, "^[%w_]+$") or string.find(value, "[|=\n]") then
    error("histRecord: field " .. name .. " cannot hold " .. value)
  end
end

-- The entry of a record (a rest when rec.seq is nil), always in the current version: the known
-- fields in HIST_ORDER, then the others in the order they were read (rec.names), then any the
-- caller added, by name. Fields set to nil are left out.
function histRecord.encode(rec)
  local out = { rec.seq and (rec.seq .. "|v" .. HIST_VERSION) or ("v" .. HIST_VERSION) }
  local done = {}
  local function put(name)
    local value = rec.fields[name]
    if value == nil or done[name] then return end
    value = tostring(value)
    histCheck(name, value)
    done[name] = true
    out[#out + 1] = name .. "=" .. value
  end
  for _, name in ipairs(HIST_ORDER) do put(name) end
  for _, name in ipairs(rec.names or {}) do put(name) end
  local added = {}
  for name in pairs(rec.fields) do if not done[name] then added[#added + 1] = name end end
  table.sort(added)
  for _, name in ipairs(added) do put(name) end
  return table.concat(out, "|") .. "\n" .. (rec.body or "")
end

-- The entry a writer's rest becomes at seq (encode's fast path for a record encoded without
-- its seq: the body is not decoded again).
function histRecord.stamp(seq, rest)
  return seq .. "|" .. rest
end

-- The content of a message for its idempotency digest (commitMessages, issue 24): the record
-- without message id and created_at, which the writer mints anew on every attempt. For version 1
-- the text the code before issue 25 hashed ("sender|kind|countsUnread|contentType|body[|mentions]");
-- version 2 builds the same text from the named fields, then appends every other field by name,
-- so a retry across the upgrade still matches and a field added later is part of the content.
function histRecord.content(rest)
  local _, version, fields, names, bodyAt = histParts(rest, false)
  if version == 1 then
    return (string.gsub(rest, "^[^|]*|([^|]*|[^|]*|[^|]*|)[^|]*|", "%1", 1))
  end
  local out = { fields[HIST.SENDER_ID] or "", fields[HIST.KIND] or "", fields[HIST.COUNTS_UNREAD] or "", fields[HIST.CONTENT_TYPE] or "", string.sub(rest, bodyAt) }
  local mentions = fields[HIST.MENTIONS]
  if mentions and mentions ~= "" then out[#out + 1] = mentions end
  local skip = { [HIST.MESSAGE_ID] = true, [HIST.SENDER_ID] = true, [HIST.KIND] = true, [HIST.COUNTS_UNREAD] = true,
    [HIST.CREATED_AT] = true, [HIST.CONTENT_TYPE] = true, [HIST.MENTIONS] = true }
  local other = {}
  for _, name in ipairs(names) do if not skip[name] then other[#other + 1] = name end end
  table.sort(other)
  for _, name in ipairs(other) do out[#out + 1] = name .. "=" .. fields[name] end
  return table.concat(out, "|")
end
