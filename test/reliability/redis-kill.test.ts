/**
 * Reliability, fault 1: redis-server SIGKILLed during a mixed load (issue 6, "Faults").
 *
 * One redis-server with AOF `appendfsync always` — a reply is sent only after its write is
 * fsynced, so an acknowledged commit must survive a kill -9. Concurrently: senders in several
 * groups, a membership worker per group, and the relay + session projection running in the
 * background as the admin server runs them (relay `onAppended: stack.lowLatency`, Redis-hash
 * authority). Mid-load the server is killed; calls in flight fail (unacknowledged: lost or
 * present, both allowed) and the clients retry some of them with the same idempotency key; the
 * server is restarted on the same data; nothing is restarted on the engine side — its ioredis
 * clients reconnect and the relay, projector and registration task resume by themselves.
 *
 * Then, over the whole history (see verifyGroups for the exact statements): history exactly once
 * per acknowledged commit; dispatch log at least once with identical duplicates (the relay
 * appends before it marks, consumers dedupe by (conversation, seq)); one control message per
 * acknowledged membership change; member table = replay of the events; checkConversation clean;
 * the projection holds every recipient's conversation; the rebuild drill reports ok.
 *
 *   node scripts/run-tests.mjs reliability/redis-kill          (CI: one kill)
 *   QIM_SOAK=1 node scripts/run-tests.mjs reliability/redis-kill   (more load, four kills)
 *   QIM_SEED=<n> replays the load's random choices (the kill moments follow the load's progress).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import {
  bucketTag,
  COMMIT_BUCKET_COUNT,
  ConversationService,
  OutboxRelay,
  ProjectionStack,
  RedisHashAuthority,
  RedisStore,
  RedisStreamsDispatchLog,
} from "../../core/index.js";
import { startRedis } from "../harness/redis.js";
import { buildLoadWorld, Ledger, readWholeLog, runLoad, seededRng, sleep, SOAK, verifyCheckpoints, verifyGroups, verifyProjection } from "./common.js";
import { fanoutKeys, outboxKey } from "../../core/index.js";

const CFG = SOAK
  ? { groups: 8, churn: 12, sendersPerGroup: 3, sendsPerWorker: 300, changesPerGroup: 150, kills: [0.2, 0.4, 0.6, 0.8] }
  : { groups: 4, churn: 8, sendersPerGroup: 2, sendsPerWorker: 60, changesPerGroup: 25, kills: [0.4] };

describe("reliability: redis-server kill -9 during a mixed load", { timeout: SOAK ? 900_000 : 120_000 }, () => {
  it("loses no acknowledged operation, duplicates none, and every invariant holds over the whole history", async (t) => {
    const rng = seededRng();
    const say = (line: string) => { t.diagnostic(line); console.log(`# ${line}`); };
    say(`seed ${rng.seed} (replay with QIM_SEED=${rng.seed})${SOAK ? ", soak mode" : ""}`);

    const redis = await startRedis({ appendonly: true, appendfsync: "always" });
    const storeErrors: string[] = [];
    const store = new RedisStore({ kind: "instances", addrs: [redis.addr] }, { commandTimeoutMs: 5000, connectTimeoutMs: 3000, onError: (e) => storeErrors.push(e.message) });
    let relay: OutboxRelay | undefined;
    const engine = new ConversationService(store, { keyPrefix: `r${randomUUID().slice(0, 8)}`, onCommit: (b) => relay?.kick(b) });
    const log = new RedisStreamsDispatchLog(store, engine.keys, { clusterId: "test", topicId: "dispatch", partitionCount: 4 });
    const authority = new RedisHashAuthority(store, engine.keys);
    const background: string[] = [];
    const stack = new ProjectionStack({ store, keys: engine.keys, conversations: engine, log, authority }, {
      projector: { pollIntervalMs: 50 }, registration: { intervalMs: 50 }, retentionMs: 0,
      log: (l) => background.push(l), onError: (e) => background.push(`error: ${(e as Error).message}`),
    });
    try {
      await log.ensureIdentity();
      await stack.start();
      relay = new OutboxRelay(store, engine.keys, log, { onAppended: stack.lowLatency, onError: (e) => background.push(`relay error: ${(e as Error).message}`) });
      relay.start(100);

      const world = await buildLoadWorld(engine, rng, CFG.groups, CFG.churn, log);
      const ledger = new Ledger();
      const planned = CFG.groups * (CFG.sendersPerGroup * CFG.sendsPerWorker + CFG.changesPerGroup);
      const load = runLoad(engine, world, ledger, rng, { sendersPerGroup: CFG.sendersPerGroup, sendsPerWorker: CFG.sendsPerWorker, changesPerGroup: CFG.changesPerGroup });
      let loadDone = false;
      void load.finally(() => { loadDone = true; });

      // the faults: kill -9 once the load has reached each fraction, restart once calls have failed
      const kills: { at: number; failedDuring: number }[] = [];
      for (const fraction of CFG.kills) {
        for (let i = 0; i < 2000 && !loadDone && ledger.acknowledged + ledger.failedCalls < fraction * planned; i++) await sleep(10);
        if (loadDone) break;
        const failedBefore = ledger.failedCalls;
        const at = ledger.acknowledged;
        await redis.kill9();
        // down until a few calls failed (bounded), so that some are unacknowledged
        for (let i = 0; i < 100 && ledger.failedCalls - failedBefore < 3; i++) await sleep(20);
        await redis.restart();
        kills.push({ at, failedDuring: ledger.failedCalls - failedBefore });
      }
      await load;
      assert.equal(kills.length, CFG.kills.length, "every kill happened mid-load");
      assert.deepEqual(ledger.unexpected, [], "no call failed with anything but a store failure or an expected refusal");

      // the background relay, projector and registration task recover by themselves (bounded polls)
      let settled = false;
      for (let i = 0; i < 600 && !settled; i++) {
        const [status, outbox] = await Promise.all([stack.status(), Promise.all(Array.from({ length: COMMIT_BUCKET_COUNT }, async (_, b) =>
          (await store.clientFor(bucketTag(b)).llen(outboxKey(engine.keys, b))) + (await store.clientFor(bucketTag(b)).llen(fanoutKeys(engine.keys, b).fanoutJobs))))]);
        settled = outbox.every((n) => n === 0) && status.failure === null
          && status.partitions.every((p) => p.verdict === "OK" && p.lag === 0) && status.pendingPerInstance.every((p) => p.depth === 0);
        if (!settled) await sleep(25);
      }
      assert.ok(settled, `the background relay and projection caught up by themselves after the restart(s): ${background.slice(-5).join(" | ")}`);
      await relay.stop();
      await stack.stop();
      // the explicit drains of the brief find nothing left
      const relayed = await relay.drainAll();
      const projected = await stack.projector.catchUp();
      const registered = await stack.registration.drainAll();

      const wholeLog = await readWholeLog(log);
      const report = await verifyGroups(engine, log, world.specs, ledger, wholeLog);
      const projection = await verifyProjection(engine, world.tenant, world.users, wholeLog);
      const checkpoints = await verifyCheckpoints(engine, log, wholeLog);
      const drill = await stack.drill.run({ users: world.users.map((user) => ({ tenant: world.tenant, user })), wipe: "projection", by: "test" });
      const violations = [...report.violations, ...projection, ...checkpoints.violations, ...drill.differences.map((d) => `drill: ${JSON.stringify(d)}`)];

      say(`redis kill -9 ×${kills.length} (at ${kills.map((k) => `${k.at} acks, ${k.failedDuring} calls failed while down`).join("; ")})`);
      say(`operations: ${ledger.acknowledged} acknowledged (${ledger.sends.length} sends, ${ledger.changes.length} membership events, ${ledger.noopChanges} no-op changes, ${ledger.refusedSends.length} refused sends), `
        + `${ledger.failedCalls} failed calls, ${ledger.ackedAfterRetry} acknowledged on a retry, lost-unacknowledged ${ledger.unackedSends.length} sends (${report.unackedSendsPresent} present, ${report.unackedSendsAbsent} absent) + ${ledger.unackedChanges} changes`);
      say(`checked: ${report.groups} groups, ${report.historyEntries} history entries (${report.messages} messages, ${report.events} events), ${report.dispatchRecords} dispatch records (${report.duplicateDispatches} at-least-once duplicates), `
        + `${world.users.length} users' projections, ${checkpoints.partitions.length} checkpoints, drill over ${drill.users} users / ${drill.conversationsBefore} conversations; after settling the drains found ${relayed}/${projected}/${registered}`);
      say(`violations: ${violations.length}`);
      assert.deepEqual(violations.slice(0, 20), []);
      assert.equal(drill.ok, true);
      assert.equal(relayed, 0, "nothing left in any outbox once settled");
      assert.ok(ledger.sends.length > 0 && ledger.changes.length > 0);
      assert.ok(background.every((l) => !/refuse|stopped on partition/.test(l)), `the projection never refused or stopped: ${background.filter((l) => /refuse|stopped/.test(l)).join(" | ")}`);
    } finally {
      await relay?.stop();
      await stack.stop();
      await store.close();
      await redis.stop();
    }
  });
});
