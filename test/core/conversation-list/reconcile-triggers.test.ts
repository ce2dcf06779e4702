/**
 * The reconcile triggers of spec 002 §3.4 and the background unread audit, on a real redis-server:
 * a checkpoint rollback (the list consumer's checkpoint behind a really trimmed dispatch stream)
 * reconciles the partition's users in the background; the login entry point is bounded per user;
 * a session projection rebuild (MAILBOX_DIRTY) reconciles the user; the sampler finds a drift
 * written into a stored row, sets unread_drift_ratio and corrects it. Expected unread, mentions
 * and ratios are counted here from the messages the test sent, never taken from the engine.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  listCheckpointKey, newUuid, registry, UNREAD_AUDIT_IDLE_MS, UnreadAuditSampler, uuidToHex, type Uuid,
} from "../../../core/index.js";
import { useList, type ListFixture } from "./fixture.js";

/** A stored row's fields read here (row layout of docs/conversation-list.md): unread is field 13, mentions 16. */
async function storedRow(fx: ListFixture, tenant: Uuid, user: Uuid, group: Uuid): Promise<{ unread: number; mentions: number } | null> {
  const k = fx.engine.conversationList.service.listKeys(tenant, user);
  const raw = await fx.store.clientFor(k.tag).hget(k.rows, uuidToHex(group));
  if (raw === null) return null;
  const f = raw.split("|");
  return { unread: Number(f[12]), mentions: Number(f[15]) };
}

/** Writes a wrong cached unread into the stored row (what a lost update leaves). */
async function corrupt(fx: ListFixture, tenant: Uuid, user: Uuid, group: Uuid, unread: number): Promise<void> {
  const k = fx.engine.conversationList.service.listKeys(tenant, user);
  const client = fx.store.clientFor(k.tag);
  const f = (await client.hget(k.rows, uuidToHex(group)))!.split("|");
  f[12] = String(unread);
  await client.hset(k.rows, uuidToHex(group), f.join("|"));
}

async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = await registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

describe("reconcile triggers", () => {
  const fx = useList("single", { reconcileMinIntervalMs: 400 });

  test("checkpoint rollback: records trimmed before the consumer read them → the partition's users are reconciled in the background to the definition", async () => {
    const tenant = fx.tenant();
    const [owner, u, v] = [newUuid(), newUuid(), newUuid()];
    const c = fx.engine.conversations;
    const list = fx.engine.conversationList;
    const { group } = await c.createGroup({ tenant, owner, members: [u, v] });
    await c.send({ tenant, group, sender: owner, text: "1" });
    await c.send({ tenant, group, sender: owner, text: "2" });
    await fx.settle();
    assert.deepEqual(await storedRow(fx, tenant, u, group), { unread: 2, mentions: 0 });
    const lostBefore = await counter("qim_conversation_list_checkpoint_lost_total");
    const rollbackBefore = await counter("qim_conversation_list_reconcile_total", { trigger: "rollback" });

    // the consumer is down (no low-latency hand-off either) while three records reach the log…
    await list.compactor.stop();
    await c.send({ tenant, group, sender: owner, text: "3" });
    await c.send({ tenant, group, sender: v, text: "4" });
    await c.send({ tenant, group, sender: owner, text: "5", mentions: [u] });
    await fx.engine.relay.drainAll();
    // …and retention drops them (a real XTRIM MINID) before it comes back
    const dropped = (await fx.engine.dispatchLog.trim(Date.now() + 1)).reduce((a, b) => a + b, 0);
    assert.ok(dropped >= 5, `the trim dropped the records (${dropped})`);
    const partition = fx.engine.dispatchLog.partitionOf(tenant, group);
    const w = await fx.engine.dispatchLog.watermarks(partition);
    assert.equal(w.low, w.high, "nothing of the partition is left");
    await list.compactor.start();
    await c.send({ tenant, group, sender: owner, text: "6" });
    await fx.settle();

    assert.ok((await counter("qim_conversation_list_checkpoint_lost_total")) > lostBefore, "the consumer saw its checkpoint behind the low watermark");
    assert.ok(list.rollback.pending().includes(partition), "the partition waits for its reconcile");
    // the window applied only record 6 to rows at head 2: the cache is wrong until the reconcile
    assert.deepEqual(await storedRow(fx, tenant, u, group), { unread: 3, mentions: 0 });

    await list.rollback.drain();
    assert.deepEqual(list.rollback.pending(), []);
    const sweep = list.rollback.done.at(-1)!;
    assert.ok(sweep.partitions.includes(partition));
    assert.ok(sweep.usersReconciled >= 3, `owner, u and v reconciled (${sweep.usersReconciled})`);
    assert.ok((await counter("qim_conversation_list_reconcile_total", { trigger: "rollback" })) - rollbackBefore >= 3);

    // by hand, seqs 1…6: owner sent 1, 2, 3, 5, 6; v sent 4; 5 mentions u
    //   u: six from others, one mention; v: five (not 4); owner: one (4)
    assert.deepEqual(await storedRow(fx, tenant, u, group), { unread: 6, mentions: 1 });
    assert.deepEqual(await storedRow(fx, tenant, v, group), { unread: 5, mentions: 0 });
    assert.deepEqual(await storedRow(fx, tenant, owner, group), { unread: 1, mentions: 0 });
    const badge = await list.service.badge(tenant, u);
    assert.deepEqual([badge.totalUnread, badge.totalMention], [6, 1], "the badge recomputed in full (§4)");
    assert.equal((await list.service.badge(tenant, owner)).totalUnread, 1);
  });

  test("a missing checkpoint while the log's low watermark is above 0 is a loss too", async () => {
    const tenant = fx.tenant();
    const [owner, u] = [newUuid(), newUuid()];
    const c = fx.engine.conversations;
    const list = fx.engine.conversationList;
    const { group } = await c.createGroup({ tenant, owner, members: [u] });
    await c.send({ tenant, group, sender: owner, text: "1" });
    await fx.settle();
    await list.compactor.stop();
    await c.send({ tenant, group, sender: owner, text: "2" });
    await fx.engine.relay.drainAll();
    await fx.engine.dispatchLog.trim(Date.now() + 1);
    const partition = fx.engine.dispatchLog.partitionOf(tenant, group);
    assert.ok(list.compactor.checkpoints()[partition]!.stored !== null);
    const ck = listCheckpointKey(fx.engine.keys, fx.engine.dispatchLog.identity.topicId, partition);
    await fx.store.clientForKey(ck).del(ck);
    await list.compactor.start();
    assert.ok(list.rollback.pending().includes(partition));
    await list.rollback.drain();
    assert.deepEqual(await storedRow(fx, tenant, u, group), { unread: 2, mentions: 0 }, "two messages from the owner");
  });

  test("login: 200 concurrent logins of one user reconcile once, every caller reads the reconciled row; again only after the bound", async () => {
    const tenant = fx.tenant();
    const [owner, u] = [newUuid(), newUuid()];
    const c = fx.engine.conversations;
    const list = fx.engine.conversationList.service;
    const { group } = await c.createGroup({ tenant, owner, members: [u] });
    for (let i = 0; i < 3; i++) await c.send({ tenant, group, sender: owner, text: String(i) });
    await fx.settle();
    await corrupt(fx, tenant, u, group, 9);
    const ran = await counter("qim_conversation_list_reconcile_total", { trigger: "login" });
    const limited = await counter("qim_conversation_list_reconcile_rate_limited_total", { trigger: "login" });

    const storm = await Promise.all(Array.from({ length: 200 }, async () => {
      const r = await list.reconcileOnLogin(tenant, u);
      return { reconciled: r.reconciled, unread: (await storedRow(fx, tenant, u, group))!.unread };
    }));
    assert.equal(storm.filter((r) => r.reconciled).length, 1, "one reconcile for the storm");
    assert.deepEqual(new Set(storm.map((r) => r.unread)), new Set([3]), "every caller reads the reconciled row");
    assert.equal((await counter("qim_conversation_list_reconcile_total", { trigger: "login" })) - ran, 1);
    assert.equal((await counter("qim_conversation_list_reconcile_rate_limited_total", { trigger: "login" })) - limited, 199);

    // within the bound: nothing runs, the drift stays
    await corrupt(fx, tenant, u, group, 9);
    assert.equal((await list.reconcileOnLogin(tenant, u)).reconciled, false);
    assert.equal((await storedRow(fx, tenant, u, group))!.unread, 9);
    // past it (400 ms in this fixture): the next login reconciles
    await new Promise((r) => setTimeout(r, 450));
    const again = await list.reconcileOnLogin(tenant, u);
    assert.equal(again.reconciled, true);
    assert.equal(again.result!.drift.rows, 1);
    assert.equal(again.result!.drift.unread, 6);
    assert.equal((await storedRow(fx, tenant, u, group))!.unread, 3);
    assert.equal((await list.badge(tenant, u)).totalUnread, 3);
  });

  test("MAILBOX_DIRTY: the user's session projection rebuilt after an epoch bump reconciles their list", async () => {
    const tenant = fx.tenant();
    const [owner, u] = [newUuid(), newUuid()];
    const c = fx.engine.conversations;
    const { group } = await c.createGroup({ tenant, owner, members: [u] });
    for (let i = 0; i < 4; i++) await c.send({ tenant, group, sender: owner, text: String(i) });
    await fx.settle();
    await fx.engine.projection.registration.drainAll();
    await corrupt(fx, tenant, u, group, 1);
    const ran = await counter("qim_conversation_list_reconcile_total", { trigger: "mailbox_dirty" });
    await fx.engine.projection.epoch.bump("test", "reconcile-triggers");
    const pulled = await fx.engine.projection.sessions.listSessions({ tenant, user: u });
    assert.equal(pulled.rebuilt, true);
    const deadline = Date.now() + 5000;
    while ((await storedRow(fx, tenant, u, group))!.unread !== 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal((await storedRow(fx, tenant, u, group))!.unread, 4, "four messages from the owner");
    assert.equal((await counter("qim_conversation_list_reconcile_total", { trigger: "mailbox_dirty" })) - ran, 1);
  });
});

describe("background unread audit", () => {
  const fx = useList("single");

  test("finds a drift written into an idle row, sets unread_drift_ratio to drifted/sampled of the pass, bounded per tick, and corrects it", async () => {
    const tenant = fx.tenant();
    const [owner, u, v, w] = [newUuid(), newUuid(), newUuid(), newUuid()];
    const c = fx.engine.conversations;
    const list = fx.engine.conversationList.service;
    assert.equal(fx.engine.unreadAudit.intervalMs, 0, "the fixture steps the runtime's sampler itself");
    const { group } = await c.createGroup({ tenant, owner, members: [u, v, w] });
    for (let i = 0; i < 3; i++) await c.send({ tenant, group, sender: owner, text: String(i) });
    await fx.settle();
    await c.markRead({ tenant, group, user: w, seq: 3 });
    await corrupt(fx, tenant, u, group, 7);
    // rows by hand: owner 0 unread (not a candidate), u 7 (cached; 3 by definition), v 3, w 0 (read all)
    // → with every candidate sampled: 2 sampled, 1 drifted, ratio 1/2
    const sampler = new UnreadAuditSampler(fx.store, fx.engine.keys, list, { intervalMs: 0, sampleRate: 1, rowsPerTick: 1, now: () => fx.clock.now });

    fx.clock.now = fx.msgClock.now + 1; // not idle yet: nothing is a candidate
    let pass = null;
    for (let i = 0; i < 20 && pass === null; i++) pass = await sampler.tick();
    assert.deepEqual([pass!.candidates, pass!.sampled, pass!.drifted], [0, 0, 0]);
    assert.equal((await storedRow(fx, tenant, u, group))!.unread, 7);

    fx.clock.now = fx.msgClock.now + UNREAD_AUDIT_IDLE_MS;
    let ticks = 0;
    pass = null;
    while (pass === null && ticks < 20) {
      pass = await sampler.tick();
      ticks++;
    }
    assert.ok(ticks >= 4, `one row per tick: four users' hashes take at least four ticks (${ticks})`);
    assert.deepEqual([pass!.rowsExamined, pass!.candidates, pass!.sampled, pass!.drifted, pass!.usersReconciled], [4, 2, 2, 1, 1]);
    const gauge = await registry.getSingleMetric("unread_drift_ratio")!.get();
    assert.equal(gauge.values[0]?.value, 1 / 2);
    assert.deepEqual(await storedRow(fx, tenant, u, group), { unread: 3, mentions: 0 }, "corrected by a reconcile");
    assert.equal((await list.badge(tenant, u)).totalUnread, 3);

    // the next pass finds nothing
    pass = null;
    for (let i = 0; i < 20 && pass === null; i++) pass = await sampler.tick();
    assert.deepEqual([pass!.sampled, pass!.drifted], [2, 0]);
    assert.equal((await registry.getSingleMetric("unread_drift_ratio")!.get()).values[0]?.value, 0);

    // sampling: at rate 1/2 the scripted draws take v's row and skip u's (SCAN order decides which
    // comes first, so both draws are below for one and above for the other: count only)
    await corrupt(fx, tenant, u, group, 8);
    const draws = [0.9, 0.1];
    const half = new UnreadAuditSampler(fx.store, fx.engine.keys, list, { intervalMs: 0, sampleRate: 0.5, correct: false, random: () => draws.shift() ?? 0.9, now: () => fx.clock.now });
    pass = null;
    for (let i = 0; i < 20 && pass === null; i++) pass = await half.tick();
    assert.deepEqual([pass!.candidates, pass!.sampled, pass!.usersReconciled], [2, 1, 0]);
    assert.equal((await storedRow(fx, tenant, u, group))!.unread, 8, "correct: false leaves the drift");
  });
});
