-- fenceHolds(leaseKey, owner, token) -> true when the unit's lease (hash: owner, token) names
-- exactly this owner and fencing token. No lease reads as owner "" token 0: a runtime without a
-- cluster writes with ("", 0), accepted only while no node ever took the unit. Both must match,
-- not only "token not newer": should a Redis failover lose a lease write, two nodes could hold the
-- same number, but never with the same owner (docs/cluster.md).
local function fenceHolds(leaseKey, owner, token)
  local l = redis.call("HMGET", leaseKey, "owner", "token")
  return (l[1] or "") == owner and tonumber(l[2] or "0") == tonumber(token)
end
