-- recordCommit(histKey, commitsKey, idemKey, outboxKey, seq, histRest, commitRecord, idemId, outboxRef)
-- Writes a commit in state RECORDED (the reserve_and_record step of ADR-0021 §2): the history
-- entry at score seq, the commit record (what the relay needs to dispatch it), the idempotency
-- index and the bucket's outbox entry. The outbox relay later moves it to COMMITTED.
local function recordCommit(histKey, commitsKey, idemKey, outboxKey, seq, histRest, commitRecord, idemId, outboxRef)
  redis.call("ZADD", histKey, seq, seq .. "|" .. histRest)
  redis.call("HSET", commitsKey, seq, commitRecord)
  redis.call("HSET", idemKey, idemId, seq)
  redis.call("RPUSH", outboxKey, outboxRef .. "|" .. seq)
end
