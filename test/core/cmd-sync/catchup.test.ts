/**
 * The catch-up scan and recovery (core/cmd-sync/catchup.ts) on a real Redis, driven round by round:
 * paging through many commits of one millisecond, a full buffer holding the cursor back until the
 * entries fit, the flush point (fenced, never lowered, never past what is durable or pending), and
 * the recovery of a slot taken over from its flush point, for that slot's users only. The pending
 * buffer is the real CmdPendingUpdater over the real Redis state; the test records what was pushed
 * by wrapping its pushIntent.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  buildConversationIntent, CmdCatchUp, CmdLog, cmdChannelKeys, cmdFlushPointKey, CmdPendingUpdater, KeySpace, newUuid, RedisCmdStateStore, RedisStore,
  slotOfUser, unitLeaseKey, userTag, type ConversationIntent, type Fence, type Uuid,
} from "../../../core/index.js";
import { startRedis, type RedisServer } from "../../harness/redis.js";

const SOLO: Fence = { owner: "", token: 0 };

describe("CMD catch-up scan on one Redis", { timeout: 180_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;

  before(async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  });
  after(async () => {
    await store?.close();
    await redis?.stop();
  });

  function setup(opts: { owned?: (slot: number) => boolean; maxPending?: number; pageSize?: number; idleMs?: number } = {}) {
    const keys = new KeySpace(`cu${newUuid().slice(0, 8)}`);
    const log = new CmdLog(store, keys);
    const states = new RedisCmdStateStore(store, keys);
    const owned = opts.owned ?? (() => true);
    const pending = new CmdPendingUpdater({ store: states, dataDir: null, slotOf: slotOfUser, fenceOf: (s) => (owned(s) ? SOLO : null), flushIntervalMs: 0, maxPending: opts.maxPending ?? 100_000, log: () => {} });
    const pushed: ConversationIntent[] = [];
    const recording = {
      pushIntent: (i: ConversationIntent) => {
        const ok = pending.pushIntent(i);
        if (ok) pushed.push(i);
        return ok;
      },
      flush: () => pending.flush(),
      oldestPendingAt: (s: number) => pending.oldestPendingAt(s),
    };
    const scan = new CmdCatchUp({
      store, keys, log, pending: recording, buildIntent: (m) => buildConversationIntent(m), ownsSlot: owned, fenceOf: (s) => (owned(s) ? SOLO : null),
      ownedSlots: () => Array.from({ length: 256 }, (_, s) => s).filter(owned), pageSize: opts.pageSize ?? 500, flushPointIntervalMs: 0, flushPointIdleMs: opts.idleMs ?? 0, say: () => {},
    });
    return { keys, log, states, pending, pushed, scan };
  }

  const send = (log: CmdLog, tenant: Uuid, channelId: string, to: Uuid[]) =>
    log.commit({ tenant, channelId, channelType: 1, from: null, to, noPersist: false, payload: new Uint8Array([1]) });

  test("pages through commits that share one millisecond: every one pushed, none skipped", async () => {
    const { log, keys, pushed, scan } = setup({ pageSize: 3 });
    await scan.prime();
    const tenant = newUuid();
    const users = Array.from({ length: 10 }, () => newUuid());
    for (const [i, u] of users.entries()) await send(log, tenant, `same-${i}`, [u]);
    // one bucket per channel: put every index entry of the test at one score
    for (let i = 0; i < users.length; i++) {
      const k = cmdChannelKeys(keys, tenant, { channelId: `same-${i}____cmd`, channelType: 1 });
      const client = store.clientFor(k.tag);
      const score = Number(await client.zscore(k.recent, `${k.recentRef}1`));
      await client.zadd(k.recent, "XX", Math.floor(score / 1000) * 1000, `${k.recentRef}1`);
    }
    await scan.round();
    assert.deepEqual(pushed.map((p) => [...p.userReadSeqs.keys()][0]).sort(), [...users].sort());
    pushed.length = 0;
    await scan.round();
    assert.deepEqual(pushed, [], "a second round pushes nothing new");
  });

  test("a full buffer holds the cursor at the refused commit; once there is room the scan continues from it", async () => {
    const { log, pending, pushed, scan, keys } = setup({ maxPending: 2 });
    await scan.prime();
    const tenant = newUuid();
    const users = Array.from({ length: 5 }, () => newUuid());
    for (const u of users) await send(log, tenant, "full", [u]);
    await scan.round(); // pushes 2, the third is refused; the round's flush point flushes them (room again)
    assert.equal(pushed.length, 2);
    const fps = await Promise.all(users.map(async (u) => Number(await store.clientFor(userTag(slotOfUser(tenant, u))).get(cmdFlushPointKey(keys, slotOfUser(tenant, u))) ?? 0)));
    const third = (await log.load(tenant, { channelId: "full____cmd", channelType: 1 }, 2, 1))[0]!;
    assert.ok(fps.every((f) => f < third.timestampMs), "no flush point passes the refused commit");
    for (let i = 0; i < 5 && pushed.length < 5; i++) {
      await scan.round();
      await pending.flush();
    }
    assert.deepEqual(pushed.map((p) => [...p.userReadSeqs.keys()][0]), users, "every commit pushed, in order");
  });

  test("flush points: T = min(cursor, oldest pending) − overlap after a flush, fenced, never lowered", async () => {
    const { keys, scan } = setup();
    await scan.prime();
    await scan.round();
    const slot = 7;
    const key = cmdFlushPointKey(keys, slot);
    const client = store.clientFor(userTag(slot));
    const first = Number(await client.get(key));
    const [secs] = await client.time();
    assert.ok(first > Number(secs) * 1000 - 60_000 && first <= Number(secs) * 1000, "the cursor's Redis time less the overlap");
    // a lease taken by a node: the solo fence (token 0) no longer writes
    await client.hset(unitLeaseKey(keys, "slot", slot), "owner", "n9", "token", 4);
    await new Promise((r) => setTimeout(r, 20));
    await scan.round();
    assert.equal(Number(await client.get(key)), first, "fenced: not raised");
    await client.set(key, String(first + 10_000_000));
    await client.del(unitLeaseKey(keys, "slot", slot));
    await scan.round();
    assert.equal(Number(await client.get(key)), first + 10_000_000, "never lowered");
  });

  test("an idle slot's flush point is not rewritten every interval; a slot the scan pushed for is", async () => {
    const { keys, log, scan } = setup({ idleMs: 3_600_000 });
    await scan.prime();
    await scan.round();
    const tenant = newUuid();
    const u = newUuid();
    const busy = slotOfUser(tenant, u);
    const idle = (busy + 1) % 256;
    const fp = async (s: number) => Number(await store.clientFor(userTag(s)).get(cmdFlushPointKey(keys, s)));
    const [busy0, idle0] = [await fp(busy), await fp(idle)];
    await new Promise((r) => setTimeout(r, 30));
    await send(log, tenant, "busy", [u]);
    await scan.round();
    assert.equal(await fp(idle), idle0, "idle: unchanged");
    assert.ok(await fp(busy) > busy0, "pushed for: raised");
  });

  test("a slot taken over is rebuilt from its flush point, for that slot's users only", async () => {
    let mine = new Set<number>();
    const tenant = newUuid();
    const [a, b] = ((): [Uuid, Uuid] => {
      for (;;) {
        const x = newUuid();
        const y = newUuid();
        if (slotOfUser(tenant, x) !== slotOfUser(tenant, y)) return [x, y];
      }
    })();
    const { log, pushed, scan, keys } = setup({ owned: (s) => mine.has(s) });
    await scan.prime(); // owns nothing: starts at now
    await send(log, tenant, "r1", [a, b]);
    await send(log, tenant, "r2", [a, b]);
    await scan.round();
    assert.deepEqual(pushed, [], "nothing owned, nothing pushed");
    // the previous owner of a's slot had flushed up to before both commits
    const sa = slotOfUser(tenant, a);
    await store.clientFor(userTag(sa)).set(cmdFlushPointKey(keys, sa), String(Date.now() - 3_600_000));
    mine = new Set([sa]);
    scan.slotAcquired(sa);
    assert.deepEqual(scan.recoveringSlots(), [sa]);
    await scan.round();
    assert.deepEqual(scan.recoveringSlots(), []);
    assert.deepEqual((pushed as ConversationIntent[]).map((p) => [p.channel.channelId, [...p.userReadSeqs.keys()]]).sort(), [["r1____cmd", [a]], ["r2____cmd", [a]]]);
  });
});
