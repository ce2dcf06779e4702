/**
 * The CMD sync core's tests on a real topology: one redis-server (or Redis Cluster) per file, a
 * key prefix of its own per test, users picked by slot, and a slot's lease taken by "another
 * owner" the way a cluster node takes it (the lease hash on the slot's own tag).
 */
import { after, before } from "node:test";
import {
  callScript, KeySpace, newUuid, RedisCmdStateStore, RedisStore, slotOfUser, unitLeaseKey, type Fence, type Uuid,
} from "../../../core/index.js";
import { startTopology, type TestTopology, type TopologyKind } from "../../harness/redis.js";

export const SOLO: Fence = { owner: "", token: 0 };

export interface CmdFixture {
  topology: TestTopology;
  store: RedisStore;
  /** A fresh key space and state store (keys of one test only). */
  fresh(): { space: KeySpace; states: RedisCmdStateStore };
}

export function useCmdRedis(kind: TopologyKind = "single"): CmdFixture {
  const fx = {} as CmdFixture;
  before(async () => {
    fx.topology = await startTopology(kind);
    fx.store = new RedisStore(fx.topology.config);
    fx.fresh = () => {
      const space = new KeySpace(`cmd${newUuid().slice(0, 8)}`);
      return { space, states: new RedisCmdStateStore(fx.store, space) };
    };
  });
  after(async () => {
    await fx.store?.close();
    await fx.topology?.stop();
  });
  return fx;
}

/** A user of `tenant` whose slot is not in `avoid`. */
export function userOutside(tenant: Uuid, avoid: readonly number[]): Uuid {
  for (;;) {
    const u = newUuid();
    if (!avoid.includes(slotOfUser(tenant, u))) return u;
  }
}

/** `n` users of `tenant` in one slot. */
export function usersInSlot(tenant: Uuid, n: number, slot = slotOfUser(tenant, newUuid())): Uuid[] {
  const out: Uuid[] = [];
  while (out.length < n) {
    const u = newUuid();
    if (slotOfUser(tenant, u) === slot) out.push(u);
  }
  return out;
}

/**
 * Another node takes the slot's lease as a cluster node does (the acquireUnit script, from no
 * owner): writes fenced with SOLO are refused from then on. Returns node-b's fence.
 */
export async function takeLease(store: RedisStore, space: KeySpace, slot: number): Promise<Fence> {
  const key = unitLeaseKey(space, "slot", slot);
  const reply = await callScript(store.clientForKey(key), "acquireUnit", [key], ["", "0", "node-b"]);
  if (Number(reply[0]) !== 0) {
    // node-b holds it already (two users of one slot): its fence as it stands
    if (String(reply[1]) === "node-b") return { owner: "node-b", token: Number(reply[2]) };
    throw new Error(`acquireUnit refused: ${JSON.stringify(reply)}`);
  }
  return { owner: "node-b", token: Number(reply[1]) };
}

export async function releaseLease(store: RedisStore, space: KeySpace, slot: number): Promise<void> {
  const key = unitLeaseKey(space, "slot", slot);
  await store.clientForKey(key).del(key);
}
