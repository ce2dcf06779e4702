--[[
  A user's view of one group conversation: the head within the visible bound and the
  definitional unread of spec 002 §3.1:
    unread = |{ m : base < m.seq <= head.seq, m.sender != u, m.counts_unread }|
    base   = max(read_seq, joined_at, hidden_before, deleted_before); for a user who left, the
             upper bound is left_at - 1.
  The head is the newest record above the visible floor max(joined_at, hidden_before,
  deleted_before) that moves the conversation (includes/activityHead: not a recall or edit event);
  unread counts up to the newest record of all: after a clear or a delete (spec 002 §7) nothing at or below the watermark is
  shown, and the unread counts from it. Control messages never count (counts_unread = 0).
  Bounded recompute (spec 002 §3.3): when the newest visible seq - base exceeds the cap,
  unread = cap and exact = 0 (the rule on the span every path of the list applies). The counting
  records come from the unread index (includes/unreadRange), not from the history entries (issue 22).

  KEYS[1] grpmembers  hash: user hex -> "joinedAt|leftAt|state"
  KEYS[2] hist        zset: the conversation history
  KEYS[3] readseq     hash: user hex -> read_conversation_seq
  KEYS[4] grpmeta     hash: unread_index_from (the first seq the unread index holds), dissolved_at
                      (issue 24: the bound of a dissolved group)
  KEYS[5] unreadidx   zset: score seq, member "seq|sender|mentions" of every counting record

  ARGV[1] user (32 hex)
  ARGV[2] cap (unread_precise_limit, 200)
  ARGV[3] hidden_before_conversation_seq of the user (clear; 0 none)
  ARGV[4] deleted_before_conversation_seq of the user (delete; 0 none)

  Returns {0, joinedAt, leftAt (-1), state, readSeq, headEntry ("" when none), unread, exact}
          {-5}  not visible: never a member, or no such group
]]
--- @include "includes/parseMember"
--- @include "includes/visibleBounds"
--- @include "includes/unreadRange"
--- @include "includes/activityHead"

local user = ARGV[1]
local joinedAt, upper, leftAt, state = visibleBounds(KEYS[1], KEYS[4], user)
if not joinedAt then return {-5} end
local readSeq = tonumber(redis.call("HGET", KEYS[3], user) or "0")
local base = math.max(readSeq, joinedAt, tonumber(ARGV[3] or "0"), tonumber(ARGV[4] or "0"))
local visibleFloor = math.max(joinedAt, tonumber(ARGV[3] or "0"), tonumber(ARGV[4] or "0"))
local latest, headEntry = activityHead(KEYS[2], upper, visibleFloor)
local headSeq = latest or visibleFloor
local unread, exact = 0, 1
if headSeq - base > tonumber(ARGV[2]) then
  unread, exact = tonumber(ARGV[2]), 0
else
  unread = unreadRange(KEYS[4], KEYS[2], KEYS[5], user, base, headSeq)
end
return {0, joinedAt, leftAt or -1, state, readSeq, headEntry, unread, exact}
