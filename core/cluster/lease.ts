import type { KeySpace } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import type { Fence, UnitKind } from "./gate.js";
import { unitLeaseKey } from "./keys.js";

/**
 * A unit's lease as Redis holds it now: owner "" and token 0 when no node ever took it (what a
 * runtime without a cluster writes with). One HMGET on the unit's own tag.
 */
export async function readLease(store: RedisStore, keys: KeySpace, kind: UnitKind, unit: number): Promise<Fence> {
  const key = unitLeaseKey(keys, kind, unit);
  const [owner, token] = await store.clientForKey(key).hmget(key, "owner", "token");
  return { owner: owner ?? "", token: Number(token ?? 0) };
}

/** Whether the unit's lease names exactly this fence (as lua/includes/fenceHolds checks inside a script). */
export async function leaseHolds(store: RedisStore, keys: KeySpace, kind: UnitKind, unit: number, fence: Fence): Promise<boolean> {
  const lease = await readLease(store, keys, kind, unit);
  return lease.owner === fence.owner && lease.token === fence.token;
}
