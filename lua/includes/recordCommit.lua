-- recordCommit(histKey, idemKey, outboxKey, seq, histRest, idemId, outboxRef)
-- The part of reserve_and_record (ADR-0021 §2) every commit shares: the history entry at score
-- seq, the idempotency index and the bucket's outbox entry. The caller writes the commit record
-- itself (a group message: its frozen version in vpending; a control message: its explicit
-- audience in commits). The outbox relay later moves the commit to COMMITTED. histRest is the
-- entry without its seq (includes/histRecord).
--- @include "includes/histRecord"
local function recordCommit(histKey, idemKey, outboxKey, seq, histRest, idemId, outboxRef)
  redis.call("ZADD", histKey, seq, histStamp(seq, histRest))
  redis.call("HSET", idemKey, idemId, seq)
  redis.call("RPUSH", outboxKey, outboxRef .. "|" .. seq)
end
