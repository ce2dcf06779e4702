/**
 * SESSION_DELTA versions across a move of a partition (spec 002 §5.1, docs/conversation-list.md
 * "the low-latency path", docs/cluster.md): two engine runtimes, nodes of one cluster on a real
 * redis-server with real leases. Node a, alone, owns every partition and sends a watcher live
 * frames ahead of what is stored; node b joins, the heartbeats move the user's conversation's
 * partition to b (read from its lease in Redis), and b (its log read, then its low-latency path,
 * then its flush) sends frames to a watcher of its own. Node a never flushed. Every frame either
 * watcher saw after the move is above every frame seen before it — computed here from the raw
 * frames — and the client that followed both streams applied all of b's.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import {
  assignUnits, EngineRuntime, hrwScore, KeySpace, newUuid, RedisHashAuthority, RedisStore, SessionDeltaApplier, unitLeaseKey, uuidToHex,
  type ApplyOutcome, type SessionFrame, type Uuid,
} from "../../core/index.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

const PARTITIONS = 8;
const WINDOW_MS = 60_000;

/** Waits for `ok` (at most tries × 20 ms: a bound on waiting, not an assertion on time). */
async function until(ok: () => boolean | Promise<boolean>, what: string, tries = 500): Promise<void> {
  for (let i = 0; i < tries && !(await ok()); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(await ok(), what);
}

describe("live versions across a move of the user's partition to another node", { timeout: 120_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;
  const nodes: EngineRuntime[] = [];
  const clock = { now: 1_000_000 };
  const keyPrefix = `lv${randomUUID().slice(0, 8)}`;
  const keys = new KeySpace(keyPrefix);

  const node = (nodeId: string) => new EngineRuntime({
    store,
    keyPrefix,
    dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: PARTITIONS },
    authority: new RedisHashAuthority(store, keys),
    projection: { background: false },
    relayIntervalMs: 0,
    conversationList: { now: () => clock.now, compactor: { background: false, windowMs: WINDOW_MS } },
    // long intervals: the test drives every heartbeat with tick()
    cluster: { nodeId, address: "", version: "test", leaseTtlMs: 60_000, heartbeatIntervalMs: 30_000 },
  });

  before(async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  });
  after(async () => {
    for (const n of nodes.reverse()) await n.stop();
    await store?.close();
    await redis?.stop();
  });

  it("every frame after the move is above every frame before it; the client drops none", async () => {
    const a = node("a");
    nodes.push(a);
    await a.start();
    const tenant = newUuid();
    const [owner, user] = [newUuid(), newUuid()];
    // a group on a partition that moves to b once b joins (rendezvous hashing over {a, b})
    const toB = new Set(assignUnits(PARTITIONS, ["a", "b"], hrwScore("partition")).flatMap((o, p) => (o === "b" ? [p] : [])));
    let found: Uuid | null = null;
    for (let i = 0; i < 64 && found === null; i++) {
      const { group: g } = await a.conversations.createGroup({ tenant, owner, members: [user] });
      if (toB.has(a.dispatchLog.partitionOf(tenant, g))) found = g;
    }
    assert.ok(found !== null, "a group on a partition that moves");
    const group: Uuid = found;
    const partition = a.dispatchLog.partitionOf(tenant, group);
    const leaseOwner = async () => {
      const key = unitLeaseKey(keys, "partition", partition);
      return (await store.clientForKey(key).hget(key, "owner")) ?? "";
    };
    assert.equal(await leaseOwner(), "a");

    const relayAll = async () => { for (const n of nodes) await n.relay.drainAll(); };
    const stored = async () => {
      const k = a.conversationList.service.listKeys(tenant, user);
      const raw = await store.clientFor(k.tag).hget(k.rows, uuidToHex(group));
      return raw === null ? null : { unread: Number(raw.split("|")[12]), version: Number(raw.split("|")[18]) };
    };
    await a.conversations.send({ tenant, group, sender: owner, text: "stored" });
    await relayAll();
    await a.conversationList.compactor.poll();
    clock.now += WINDOW_MS;
    await a.conversationList.compactor.flushIfDue();
    assert.equal((await stored())?.unread, 1);

    // one client, one applier, following a's stream and then b's; every frame recorded raw
    const applier = new SessionDeltaApplier();
    const seen: { phase: "before" | "after"; node: string; frame: SessionFrame; outcome: ApplyOutcome }[] = [];
    let phase: "before" | "after" = "before";
    const watcher = (name: string) => (f: SessionFrame) => seen.push({ phase, node: name, frame: f, outcome: applier.apply(f) });
    const stopA = await a.sessionView.watch(tenant, user, watcher("a"));
    const SENDS = 3;
    for (let i = 0; i < SENDS; i++) {
      await a.conversations.send({ tenant, group, sender: owner, text: `on a ${i}` });
      await relayAll();
      await until(() => applier.rows.get(group)?.unread === 2 + i, `a's live frame of send ${i}`);
    }
    const storedBefore = await stored();
    assert.equal(storedBefore?.unread, 1, "a stored none of its live sends");

    // b joins; the heartbeats move the partition (a gives it up without a flush, b takes it)
    const b = node("b");
    nodes.push(b);
    await b.start();
    await a.cluster!.tick();
    await b.cluster!.tick();
    assert.equal(await leaseOwner(), "b", "the partition's lease moved to b");
    phase = "after";
    const stopB = await b.sessionView.watch(tenant, user, watcher("b"));
    // b's log read takes the partition from the stored checkpoint: a's live sends come again
    await b.conversationList.compactor.poll();
    for (let i = 0; i < 2; i++) {
      await a.conversations.send({ tenant, group, sender: owner, text: `after ${i}` });
      await relayAll();
    }
    // (whichever node relayed them: b holds them from its own relay's hand-off or, as its
    // background poll would, from the log)
    await until(async () => {
      await b.conversationList.compactor.poll();
      return applier.rows.get(group)?.unread === 1 + SENDS + 2;
    }, "b's live frames reached the client");
    clock.now += WINDOW_MS;
    await b.conversationList.compactor.flushIfDue();
    await until(async () => (await stored())?.unread === 1 + SENDS + 2 && (applier.rows.get(group)?.version ?? 0) >= (await stored())!.version, "b's flush stored the row and its frame arrived");
    stopA();
    stopB();

    const beforeMove = seen.filter((s) => s.phase === "before").map((s) => s.frame.version);
    const afterMove = seen.filter((s) => s.phase === "after");
    assert.ok(beforeMove.length >= 1 + 2 * SENDS && afterMove.some((s) => s.node === "b" && s.frame.kind === "delta"), `frames: ${beforeMove.length} before, ${afterMove.length} after`);
    const maxBefore = Math.max(...beforeMove);
    for (const s of afterMove) assert.ok(s.frame.version > maxBefore, `node ${s.node} sent a ${s.frame.kind} frame at ${s.frame.version} after the move, not above ${maxBefore}`);
    assert.deepEqual(afterMove.filter((s) => s.node === "b" && s.outcome !== "applied").map((s) => [s.frame.kind, s.frame.version, s.outcome]), [], "the client dropped none of b's frames");
  });
});
