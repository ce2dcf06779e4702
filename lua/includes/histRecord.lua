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
-- script allocates the seq and stamps it in front. Every function here takes an entry or a rest:
--   histGet(s, name)      one header field (nil: absent), the cheap read
--   histHeader(s)         { seq, version, fields, other, bodyAt }: every header field, no body
--   histDecode(s)         the header's and body: the whole record
--   histEncode(rec)       the entry (a rest when rec.seq is nil) in the current version
--   histStamp(seq, rest)  the entry a writer's rest becomes at seq
--   histContent(rest)     a message's content for its idempotency digest
-- They are local functions, not a table of them: an include's top level runs on every call of
-- its script, and the commit path pays for each table it builds.

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
  REGISTRY_VERSION = "rv", -- a custom type's message (issue 29): the registry version its send applied
  SCHEMA_VERSION = "sv", -- a custom type's message: the type's schema_version
  TIMELINE_VISIBLE = "tl", -- timeline_visible: 0 when clients keep it out of the timeline; absent: visible
  ORDER = "ord",         -- affects_session_order: 0 when the record does not move its conversation; absent: it does
  STATE = "st",          -- the message's state (spec 003 §2.3): R recalled, E edited; absent: as sent
  RECALL_EVENT_SEQ = "rcs", -- recall_event_conversation_seq: set only once the recall event is in the log
  EDIT_EVENT_SEQ = "ecs", -- the seq of the last edit event applied
  TARGET_SEQ = "tgt",    -- an anchor_target event's target_conversation_seq
  TARGET_SENDER_ID = "tfrom", -- target_sender_id (spec 002 §3.5)
  TARGET_COUNTS_UNREAD = "tcu", -- target_flags.counts_unread, 1 or 0
  TARGET_MENTIONS = "tmen", -- the target's mentioned users; absent: none
  TARGET_MESSAGE_ID = "tid", -- the target's message_id
}
local HIST_VERSION = 2
-- the order encode writes the known fields in (the fields it does not know follow)
local HIST_ORDER = {
  HIST.MESSAGE_ID, HIST.SENDER_ID, HIST.KIND, HIST.COUNTS_UNREAD, HIST.CREATED_AT, HIST.CONTENT_TYPE, HIST.MENTIONS,
  HIST.REGISTRY_VERSION, HIST.SCHEMA_VERSION, HIST.TIMELINE_VISIBLE, HIST.ORDER, HIST.STATE, HIST.RECALL_EVENT_SEQ, HIST.EDIT_EVENT_SEQ,
  HIST.TARGET_SEQ, HIST.TARGET_SENDER_ID, HIST.TARGET_COUNTS_UNREAD, HIST.TARGET_MENTIONS, HIST.TARGET_MESSAGE_ID,
}
-- Both encoders write the six fields every record has first, in HIST_ORDER: one match reads them
-- (the commit path's cost), any other header field is read one by one. (An include's top level
-- runs on every call of its script: one concatenation, no loop.)
local HIST_LEAD_PATTERN = "^(%d*)|?v(%d+)|" .. HIST.MESSAGE_ID .. "=([^|\n]*)|" .. HIST.SENDER_ID .. "=([^|\n]*)|"
  .. HIST.KIND .. "=([^|\n]*)|" .. HIST.COUNTS_UNREAD .. "=([^|\n]*)|" .. HIST.CREATED_AT .. "=([^|\n]*)|"
  .. HIST.CONTENT_TYPE .. "=([^|\n]*)()"
-- The fields version 1 holds before its body are HIST_ORDER's first HIST_LEAD, in that order.
local HIST_LEAD = 6

-- Whether this code knows the field (read only for fields after the lead: mentions and newer ones).
local function histKnown(name)
  for _, known in ipairs(HIST_ORDER) do if known == name then return true end end
  return false
end

-- A new version is made only for a change this code would misread: refuse it, never guess.
local function histNewer(version, s)
  if tonumber(version) > HIST_VERSION then
    error("histRecord: entry version " .. version .. " is newer than this code reads (" .. HIST_VERSION .. "): " .. string.sub(s, 1, 80))
  end
end

-- The parts of an entry or rest: seq (nil for a rest), version, the header's named fields
-- (name -> value), the names of those this code does not know in the order read (nil: none), and
-- the body's first index; header only (the body is not read) unless `tail`: a version 1 entry's
-- mentions follow its body. Each field is one anchored match that stops at "|" or "\n".
local function histParts(s, tail)
  local fields, other
  local seq, version, f1, f2, f3, f4, f5, f6, at = string.match(s, HIST_LEAD_PATTERN)
  if seq then
    -- one constructor: the table is made at its size once, not grown field by field
    fields = { [HIST.MESSAGE_ID] = f1, [HIST.SENDER_ID] = f2, [HIST.KIND] = f3, [HIST.COUNTS_UNREAD] = f4, [HIST.CREATED_AT] = f5, [HIST.CONTENT_TYPE] = f6 }
  else
    fields = {}
    seq, version, at = string.match(s, "^(%d*)|?v(%d+)()")
  end
  if version then
    histNewer(version, s)
    local nl = string.find(s, "\n", at, true) or (#s + 1)
    while at < nl do
      local name, value, nxt = string.match(s, "^|([^=|\n]+)=([^|\n]*)()", at)
      if not name then return nil end
      fields[name] = value
      if not histKnown(name) then
        other = other or {}
        other[#other + 1] = name
      end
      at = nxt
    end
    return tonumber(seq), tonumber(version), fields, other, nl + 1
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
  for i = 1, HIST_LEAD do
    local bar = string.find(s, "|", p, true)
    if not bar then return nil end
    fields[HIST_ORDER[i]] = string.sub(s, p, bar - 1)
    p = bar + 1
  end
  if tail then
    local bar = string.find(s, "|", p, true)
    if bar then fields[HIST.MENTIONS] = string.sub(s, bar + 1) end
  end
  return tonumber(seq), 1, fields, nil, p
end

-- One header field of an entry or rest (nil when absent), reading the header only. A version 1
-- entry's mentions sit after its body: reading them finds the body's end (one plain search).
local function histGet(s, name)
  local version, at = string.match(s, "^%d*|?v(%d+)()")
  if version then
    histNewer(version, s)
    local nl = string.find(s, "\n", at, true) or (#s + 1)
    return string.match(string.sub(s, at, nl - 1), "|" .. name .. "=([^|]*)")
  end
  local _, _, fields = histParts(s, name == HIST.MENTIONS)
  return fields and fields[name]
end

-- The header of an entry or rest as a record without its body: { seq, version, fields, other
-- (the names of the fields this code does not know, in the order read; nil: none), bodyAt (where
-- the body starts) } (nil when s is no history entry).
local function histHeader(s)
  local seq, version, fields, other, bodyAt = histParts(s, true)
  if not version then return nil end
  return { seq = seq, version = version, fields = fields, other = other, bodyAt = bodyAt }
end

-- The whole record: the header's and body = the opaque body (a copy of it: use header when the
-- body is not needed).
local function histDecode(s)
  local seq, version, fields, other, bodyAt = histParts(s, true)
  if not version then return nil end
  local body
  if version == 1 then
    body = string.sub(s, bodyAt, (string.find(s, "|", bodyAt, true) or (#s + 1)) - 1)
  else
    body = string.sub(s, bodyAt)
  end
  return { seq = seq, version = version, fields = fields, other = other, body = body }
end

local function histCheck(name, value)
  if not string.find(name, "^[%w_]+$") or string.find(value, "[|=\n]") then
    error("histRecord: field " .. name .. " cannot hold " .. value)
  end
end

-- The entry of a record (a rest when rec.seq is nil), always in the current version: the known
-- fields in HIST_ORDER, then the others in the order they were read (rec.other), then any the
-- caller added, by name. Fields set to nil are left out.
local function histEncode(rec)
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
  for _, name in ipairs(rec.other or {}) do put(name) end
  local added = {}
  for name in pairs(rec.fields) do if not done[name] then added[#added + 1] = name end end
  table.sort(added)
  for _, name in ipairs(added) do put(name) end
  return table.concat(out, "|") .. "\n" .. (rec.body or "")
end

-- The entry a writer's rest becomes at seq (encode's fast path for a record encoded without
-- its seq: the body is not decoded again).
local function histStamp(seq, rest)
  return seq .. "|" .. rest
end

-- The content of a message for its idempotency digest (commitMessages, issue 24): the record
-- without message id and created_at, which the writer mints anew on every attempt. For version 1
-- the text the code before issue 25 hashed ("sender|kind|countsUnread|contentType|body[|mentions]");
-- version 2 builds the same text from the named fields, then appends every other field by name,
-- so a retry across the upgrade still matches and a field added later is part of the content.
-- What the tenant's registry decides (issue 29: counts_unread of a custom type's message, and the
-- registry and schema versions, which are known fields and so never part of it) is not the sender's
-- content: a retry that crosses a registry change is the same message (its first commit stands).
-- head: the rest's header when the caller has it (else it is read here).
local function histContent(rest, head)
  head = head or histHeader(rest)
  if head.version == 1 then
    return (string.gsub(rest, "^[^|]*|([^|]*|[^|]*|[^|]*|)[^|]*|", "%1", 1))
  end
  local f = head.fields
  local cu = f[HIST.REGISTRY_VERSION] and "" or (f[HIST.COUNTS_UNREAD] or "")
  local text = (f[HIST.SENDER_ID] or "") .. "|" .. (f[HIST.KIND] or "") .. "|" .. cu .. "|"
    .. (f[HIST.CONTENT_TYPE] or "") .. "|" .. string.sub(rest, head.bodyAt)
  local mentions = f[HIST.MENTIONS]
  if mentions and mentions ~= "" then text = text .. "|" .. mentions end
  if head.other then
    local other = { unpack(head.other) }
    table.sort(other)
    for _, name in ipairs(other) do text = text .. "|" .. name .. "=" .. f[name] end
  end
  return text
end
