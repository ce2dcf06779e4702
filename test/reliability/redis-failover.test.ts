/**
 * Reliability: a Redis Cluster master SIGKILLed under send and membership load, its replica
 * promoted (issue 26, "A Redis Cluster master failover").
 *
 * A 3-master Cluster with one replica each (cluster-node-timeout 1000 ms). The engine runs in
 * this process, driving the real Cluster: the conversation service's commit path (group commit,
 * Lua commit scripts), the outbox relay and the session projection, as the node runs them. The
 * claim under test is about the store — what a master's death does to writes the engine already
 * acknowledged, and whether the store's own fencing (idempotency index, seq counter, checkpoint
 * compare-and-set) still holds after the promoted replica takes over — so the engine's process
 * boundary adds nothing to it; the load's clients keep their ledger of acknowledgements in
 * the same process, and the checker reads the store afresh through a client of its own.
 *
 * Mid-load the replica of the master serving most of the load's groups falls behind (SIGSTOP,
 * then 32 MiB written to its master: more than the loopback socket buffers, so the master's next
 * writes wait in its own output buffer); 700 ms later the master is SIGKILLed and the replica
 * resumed. On loopback a replica is otherwise less than a millisecond behind, and a plain kill
 * under this load lost nothing in the runs made: the lag makes the window asynchronous
 * replication leaves open wide enough to be seen every run. The test waits until the replica is
 * promoted, lets the old master rejoin as its replica, lets the load end and the background
 * catch up (bounded). Then, independently of the engine's code, over every group's
 * whole history:
 * - lost: acknowledged sends whose client message id is not in the idempotency index at the seq
 *   acknowledged, or whose history entry there is not the acknowledged message; acknowledged
 *   membership events without their control message (op and users) at their seq and their
 *   idempotency id there;
 * - fencing: no seq holds two history entries, no message id is in history twice, no two
 *   idempotency entries point at one seq; and checkpoints: no partition checkpoint was ever seen
 *   to move back (sampled every 20 ms during the whole run, and once after). With ack_replicas 0 a
 *   checkpoint on the dead master can move back (its last advances were not replicated either):
 *   printed, not asserted; with ack_replicas 1 its advances wait for the replica too, so none
 *   moves back below a value seen while the replica could confirm it (asserted; one first seen
 *   while the replica was SIGSTOPped was never acknowledged, and is only counted).
 *
 * Two runs: redis.ack_replicas 0 (the default: asynchronous replication loses the writes
 * acknowledged while the replica was behind; the count is printed, and asserted above zero so
 * that the other run's zero says something) and 1 (every ack waits for WAIT 1: zero lost,
 * asserted). Fencing is asserted in both.
 *
 *   node scripts/run-tests.mjs reliability/redis-failover      QIM_SEED=<n> replays the load's choices
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import {
  checkpointKey,
  ConversationService,
  decodeHistoryEntry,
  OutboxRelay,
  opCode,
  ProjectionStack,
  RedisHashAuthority,
  RedisStore,
  RedisStreamsDispatchLog,
  uuidToHex,
  type TopologyConfig,
} from "../../core/index.js";
import { startRedisCluster, type RedisClusterHandle } from "../harness/redis.js";
import { buildLoadWorld, Ledger, runLoad, seededRng, sleep, type World } from "./common.js";

const CFG = { groups: 6, churn: 8, sendersPerGroup: 3, sendsPerWorker: 150, changesPerGroup: 40, killAt: 0.35 };
const PARTITIONS = 4;
/** What an ack may wait for a replica in the ack_replicas 1 run (loopback: a replica answers in well under a millisecond). */
const ACK_TIMEOUT_MS = 500;
/** Written to the victim while its replica is stopped: more than loopback's socket buffers hold (a few MiB each way). */
const LAG_BALLAST_BYTES = 32 << 20;
/** How long the load runs with the replica behind before its master is killed. */
const LAG_MS = 700;

interface FailoverReport {
  acked: { sends: number; changes: number };
  lost: { sends: string[]; changes: string[] };
  fencing: string[];
  checkpointsMovedBack: string[];
  unacked: number;
  failedCalls: number;
  waitedMs: number;
  settled: boolean;
}

/** The independent check over every group's history against the ledger (see the header). */
async function check(store: RedisStore, engine: ConversationService, world: World, ledger: Ledger): Promise<Pick<FailoverReport, "lost" | "fencing">> {
  const lost = { sends: [] as string[], changes: [] as string[] };
  const fencing: string[] = [];
  for (const { tenant, group } of world.specs) {
    const k = engine.conversationKeys(tenant, group);
    const client = store.clientFor(k.tag);
    const [flat, idem] = await Promise.all([client.zrange(k.hist, "0", "-1", "WITHSCORES"), client.hgetall(k.idem)]);
    const hist = new Map<number, string>();
    const messageIds = new Set<string>();
    for (let i = 0; i < flat.length; i += 2) {
      const seq = Number(flat[i + 1]);
      if (hist.has(seq)) fencing.push(`group ${group}: two history entries at seq ${seq}`);
      hist.set(seq, flat[i]!);
      const id = decodeHistoryEntry(flat[i]!).messageId;
      if (messageIds.has(id)) fencing.push(`group ${group}: message id ${id} twice in history`);
      messageIds.add(id);
    }
    const seqOf = (entry: string | undefined) => (entry === undefined ? null : Number(entry.split("|")[0]));
    const idemSeqs = Object.values(idem).map((e) => seqOf(e)!);
    if (new Set(idemSeqs).size !== idemSeqs.length) fencing.push(`group ${group}: two idempotency entries point at one seq`);

    for (const a of ledger.sends.filter((x) => x.group === group)) {
      const at = seqOf(idem[uuidToHex(a.clientMessageId)]);
      const entry = hist.get(a.seq);
      const rec = entry === undefined ? null : decodeHistoryEntry(entry);
      if (at !== a.seq || !rec || rec.kind !== "normal" || (a.messageId !== null && rec.messageId !== a.messageId)) {
        lost.sends.push(`${group} seq ${a.seq}: index says ${at ?? "absent"}, history holds ${rec ? `${rec.kind} ${rec.messageId}` : "nothing"}, acked ${a.messageId}`);
      }
    }
    for (const c of ledger.changes.filter((x) => x.group === group)) {
      const entry = hist.get(c.seq);
      const ev = entry === undefined ? undefined : decodeHistoryEntry(entry).membership;
      const sameUsers = ev !== undefined && [...ev.users].sort().join(",") === [...c.changed].sort().join(",");
      if (!ev || ev.op !== opCode(c.op) || !sameUsers || seqOf(idem[c.idempotencyId]) !== c.seq) {
        lost.changes.push(`${group} seq ${c.seq}: ${c.op} of ${c.changed.length} user(s) ${ev ? `found op ${ev.op}` : "not found"}, index says ${seqOf(idem[c.idempotencyId]) ?? "absent"}`);
      }
    }
  }
  return { lost, fencing };
}

/**
 * Reads every partition's checkpoint offset every 20 ms until stopped; a value below one seen before
 * is a move back. A value first seen once the replica could no longer confirm anything (from
 * `unconfirmable()`, called just before the replica is SIGSTOPped, to the end) is provisional: its
 * advance ran on the master, but its WAIT cannot have been confirmed, so the write was never
 * acknowledged and losing it is no violation (the consumer's advance failed UNAVAILABLE and is
 * done again). Moves back below such a value are kept apart (`unacknowledged`); the projection's
 * advances during the replica's stop made one in an earlier full-suite run ("checkpoint 252 after 294").
 */
function watchCheckpoints(store: RedisStore, engine: ConversationService, topicId: string): {
  unconfirmable: () => void; confirmable: () => void; stop: () => Promise<{ acknowledged: string[]; unacknowledged: string[] }>;
} {
  /** Per partition: the highest value seen while confirmable, and the highest seen at all. */
  const confirmed = new Map<number, number>();
  const seen = new Map<number, number>();
  const acknowledged: string[] = [];
  const unacknowledged: string[] = [];
  let provisional = false;
  let running = true;
  const readAll = async () => {
    for (let p = 0; p < PARTITIONS; p++) {
      const key = checkpointKey(engine.keys, topicId, p);
      const pos = await store.clientForKey(key).hget(key, "pos").catch(() => undefined);
      if (pos === undefined || pos === null) continue;
      const offset = Number(pos.slice(0, pos.indexOf("|")));
      const max = seen.get(p) ?? -1;
      const sure = confirmed.get(p) ?? -1;
      if (offset < sure) acknowledged.push(`partition ${p}: checkpoint ${offset} after ${sure}`);
      else if (offset < max) unacknowledged.push(`partition ${p}: checkpoint ${offset} after ${max} (first seen while the replica was stopped)`);
      seen.set(p, Math.max(max, offset));
      if (!provisional) confirmed.set(p, Math.max(sure, offset));
    }
  };
  const loop = (async () => {
    while (running) {
      await readAll();
      await sleep(20);
    }
  })();
  return {
    unconfirmable: () => { provisional = true; },
    /** The old master rejoined as the new one's replica: advances are confirmed again from now on. */
    confirmable: () => { provisional = false; },
    stop: async () => {
      running = false;
      await loop;
      await readAll();
      return { acknowledged, unacknowledged };
    },
  };
}

async function failoverRun(ackReplicas: number, say: (line: string) => void): Promise<FailoverReport> {
  const rng = seededRng();
  say(`ack_replicas ${ackReplicas}: seed ${rng.seed} (replay with QIM_SEED=${rng.seed})`);
  const cluster: RedisClusterHandle = await startRedisCluster(3, {}, { replicas: 1, nodeTimeoutMs: 1000 });
  const topology: TopologyConfig = { kind: "cluster", seeds: cluster.seeds, ...(ackReplicas > 0 ? { ack: { replicas: ackReplicas, timeoutMs: ACK_TIMEOUT_MS } } : {}) };
  const storeErrors: string[] = [];
  const store = new RedisStore(topology, { commandTimeoutMs: 5000, connectTimeoutMs: 3000, onError: (e) => storeErrors.push(e.message) });
  // the checker's and the sampler's own connections: nothing of the engine's
  const own = new RedisStore({ kind: "cluster", seeds: cluster.seeds }, { commandTimeoutMs: 5000, connectTimeoutMs: 3000, onError: () => {} });
  let relay: OutboxRelay | undefined;
  const engine = new ConversationService(store, { keyPrefix: `f${randomUUID().slice(0, 8)}`, onCommit: (b) => relay?.kick(b) });
  const dispatch = { clusterId: "test", topicId: "dispatch", partitionCount: PARTITIONS };
  const log = new RedisStreamsDispatchLog(store, engine.keys, dispatch);
  const background: string[] = [];
  const stack = new ProjectionStack({ store, keys: engine.keys, conversations: engine, log, authority: new RedisHashAuthority(store, engine.keys) }, {
    projector: { pollIntervalMs: 50 }, registration: { intervalMs: 50 }, retentionMs: 0,
    log: (l) => background.push(l), onError: (e) => background.push(`error: ${(e as Error).message}`),
  });
  try {
    await log.ensureIdentity();
    await stack.start();
    relay = new OutboxRelay(store, engine.keys, log, { onAppended: stack.lowLatency, onError: (e) => background.push(`relay error: ${(e as Error).message}`) });
    relay.start(100);
    const checkpoints = watchCheckpoints(own, engine, dispatch.topicId);

    const world = await buildLoadWorld(engine, rng, CFG.groups, CFG.churn, log);
    // the victim: the master that serves the most groups of the load
    const byMaster = new Map<string, number>();
    const masters = new Map<string, Awaited<ReturnType<RedisClusterHandle["masterOf"]>>>();
    for (const s of world.specs) {
      const m = await cluster.masterOf(engine.conversationKeys(s.tenant, s.group).cseq);
      masters.set(m.addr, m);
      byMaster.set(m.addr, (byMaster.get(m.addr) ?? 0) + 1);
    }
    const [victimAddr, victimGroups] = [...byMaster].sort((a, b) => b[1] - a[1])[0]!;
    const victim = masters.get(victimAddr)!;

    const ledger = new Ledger();
    const planned = CFG.groups * (CFG.sendersPerGroup * CFG.sendsPerWorker + CFG.changesPerGroup);
    const load = runLoad(engine, world, ledger, rng, { sendersPerGroup: CFG.sendersPerGroup, sendsPerWorker: CFG.sendsPerWorker, changesPerGroup: CFG.changesPerGroup, attempts: 6 });
    let loadDone = false;
    void load.finally(() => { loadDone = true; });
    for (let i = 0; i < 3000 && !loadDone && ledger.acknowledged + ledger.failedCalls < CFG.killAt * planned; i++) await sleep(10);
    assert.ok(!loadDone, "the load was still running at the kill");
    // the replica falls behind: SIGSTOPped, then a value larger than the loopback socket buffers
    // written to its master, so that what the master writes next waits in its own output buffer
    // for the replica, and dies with it
    const [replica] = await cluster.replicasOf(victim);
    assert.ok(replica, "the victim has a replica");
    let lagTag = "";
    for (let i = 0; lagTag === "" && i < 1000; i++) if ((await cluster.masterOf(`{lag${i}}`)) === victim) lagTag = `{lag${i}}`;
    checkpoints.unconfirmable();
    process.kill(replica.pid, "SIGSTOP");
    const ackedAtStop = ledger.acknowledged;
    await own.clients()[0]!.set(`${lagTag}:ballast`, Buffer.alloc(LAG_BALLAST_BYTES, 120));
    await sleep(LAG_MS);
    const ackedAtKill = ledger.acknowledged;
    const { promoted, waitedMs } = await cluster.killMaster(victim, { afterKill: () => process.kill(replica.pid, "SIGCONT") });
    assert.equal(promoted, replica);
    say(`ack_replicas ${ackReplicas}: replica ${replica.addr} SIGSTOPped after ${ackedAtStop} acks, ${LAG_BALLAST_BYTES >> 20} MiB ballast, ${LAG_MS} ms later `
      + `SIGKILL of its master ${victim.addr} (${victimGroups} of ${CFG.groups} groups) after ${ackedAtKill} acks; the replica resumed and was promoted after ${waitedMs} ms`);
    // the old master comes back as the new one's replica (with ack_replicas 1 its slots accept
    // acknowledged writes again only then)
    await cluster.rejoin(victim);
    checkpoints.confirmable();
    await load;
    assert.deepEqual(ledger.unexpected, [], "no call failed with anything but a store failure or an expected refusal");

    let settled = false;
    for (let i = 0; i < 400 && !settled; i++) {
      const status = await stack.status().catch(() => null);
      settled = status !== null && status.failure === null && status.partitions.every((p) => p.lag === 0) && status.pendingPerInstance.every((p) => p.depth === 0);
      if (!settled) await sleep(25);
    }
    await relay.stop();
    await stack.stop();
    const { acknowledged: checkpointsMovedBack, unacknowledged: unackedMovedBack } = await checkpoints.stop();
    const { lost, fencing } = await check(own, engine, world, ledger);
    const report: FailoverReport = {
      acked: { sends: ledger.sends.length, changes: ledger.changes.length },
      lost, fencing, checkpointsMovedBack,
      unacked: ledger.unackedSends.length + ledger.unackedChanges,
      failedCalls: ledger.failedCalls,
      waitedMs,
      settled,
    };
    say(`ack_replicas ${ackReplicas}: acknowledged ${report.acked.sends} sends and ${report.acked.changes} membership events; `
      + `LOST ${lost.sends.length} acknowledged sends and ${lost.changes.length} acknowledged membership events; `
      + `${report.unacked} calls unacknowledged after ${report.failedCalls} failed attempts; `
      + `fencing violations ${fencing.length}; checkpoints moved back ${checkpointsMovedBack.length} (and ${unackedMovedBack.length} below a value first seen while the replica was stopped: never acknowledged); background settled: ${settled}`);
    for (const l of [...lost.sends, ...lost.changes].slice(0, 10)) say(`  lost: ${l}`);
    for (const l of background.filter((b) => /refuse|stopped|error/.test(b)).slice(0, 5)) say(`  background: ${l}`);
    return report;
  } finally {
    await relay?.stop().catch(() => undefined);
    await stack.stop().catch(() => undefined);
    await store.close();
    await own.close();
    await cluster.stop();
  }
}

describe("reliability: a Redis Cluster master SIGKILLed under load, its replica promoted", { timeout: 300_000 }, () => {
  const say = (line: string) => console.log(`# ${line}`);

  it("redis.ack_replicas 0 (default): acknowledged writes the lagging replica never received are lost and counted; no duplicate append", async () => {
    const r = await failoverRun(0, say);
    assert.ok(r.acked.sends > 0 && r.acked.changes > 0, "the load was acknowledged");
    assert.ok(r.lost.sends.length + r.lost.changes.length > 0, "the checker sees the acknowledged writes the replica never received");
    assert.deepEqual(r.fencing, [], "no duplicate append");
    // a checkpoint on the dead master moves back when its last advances were not replicated (seen
    // in some runs: "partition 1: checkpoint 271 after 319"); the records are projected again
    // (ZADD GT), so it is printed here, and asserted absent with ack_replicas 1
  });

  it("redis.ack_replicas 1: the same failover loses no acknowledged write, and fencing holds", async () => {
    const r = await failoverRun(1, say);
    assert.ok(r.acked.sends > 0 && r.acked.changes > 0, "the load was acknowledged");
    assert.deepEqual(r.lost, { sends: [], changes: [] }, "every acknowledged send and membership event is in the store");
    assert.deepEqual(r.fencing, [], "no duplicate append");
    assert.deepEqual(r.checkpointsMovedBack, [], "no checkpoint moved back");
  });
});
