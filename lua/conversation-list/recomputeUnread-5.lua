--[[
  The definitional row of one (user, conversation) from the authority (spec 002 §3.1, §3.3): the
  bounded recompute of the three-state update (§3.2 (c)), of reconcile (§3.4), of the rebuild
  (J-6) and of the unread audit. Reads only; the caller writes the row on the user's tag.
    base   = max(read_seq, hidden_before, joined_at, deleted_before)
    unread = |{ m : base < m.seq <= head.seq, m.sender != u, m.counts_unread }|
    head   = the newest record the user may see: joined_at < seq, and seq < left_at after a leave
  mentions: the counting messages of that range whose mention list (field mentions) names u, with the
  first one's seq. When head - base exceeds the cap (unread_precise_limit) unread = cap and
  exact = 0, and mentions are counted over the newest `cap` records only.
  The counting records are read from the unread index (includes/unreadRange), not from the
  history entries, which a 1,000-user join event makes ~21 KB each (issue 22): the work is at most
  `cap` index members of a few dozen bytes, plus the one head entry, whatever the history holds
  (only a range below unread_index_from, history older than the index, still reads entries).

  KEYS[1] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[2] hist        zset: the conversation history
  KEYS[3] readseq     hash: user hex -> read_conversation_seq
  KEYS[4] grpmeta     hash: unread_index_from (the first seq the unread index holds), dissolved_at
                      (issue 24: the bound of a dissolved group)
  KEYS[5] unreadidx   zset: score seq, member "seq|sender|mentions" of every counting record

  ARGV[1] user (32 hex)
  ARGV[2] hidden_before_conversation_seq
  ARGV[3] deleted_before_conversation_seq
  ARGV[4] cap (unread_precise_limit, 200)

  Returns {0, joinedAt, leftAt (-1), state, readSeq, headSeq, headMessageId ("" none),
           headCreatedAt (0 none), unread, exact, mentions, mentionFirst (-1 none), activitySeq (0 none)}
  headSeq is the newest visible record (what unread counts up to); headMessageId, headCreatedAt and
  activitySeq are the newest one that moves the conversation (includes/activityHead: a recall or
  edit event does not).
          {-5}  not visible: never a member, or no such group
]]
--- @include "includes/parseMember"
--- @include "includes/histRecord"
--- @include "includes/visibleBounds"
--- @include "includes/unreadRange"
--- @include "includes/activityHead"

local user = ARGV[1]
local cap = tonumber(ARGV[4])
local joinedAt, upper, leftAt, state = visibleBounds(KEYS[1], KEYS[4], user)
if not joinedAt then return {-5} end
local readSeq = tonumber(redis.call("HGET", KEYS[3], user) or "0")
local latest, headEntry, activitySeq = activityHead(KEYS[2], upper, joinedAt)
local headSeq, headId, headAt = latest or joinedAt, "", 0
if headEntry ~= "" then
  local f = histHeader(headEntry).fields
  headId = f[HIST.MESSAGE_ID]; headAt = tonumber(f[HIST.CREATED_AT])
end
local base = math.max(readSeq, joinedAt, tonumber(ARGV[2]), tonumber(ARGV[3]))
local exact, from = 1, base
if headSeq - base > cap then exact, from = 0, headSeq - cap end
local unread, mcount, mfirst = unreadRange(KEYS[4], KEYS[2], KEYS[5], user, from, headSeq)
if exact == 0 then unread = cap end
return {0, joinedAt, leftAt or -1, state, readSeq, headSeq, headId, headAt, unread, exact, mcount, mfirst, activitySeq or 0}
