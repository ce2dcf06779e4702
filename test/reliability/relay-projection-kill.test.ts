/**
 * Reliability, fault 2: the outbox relay and the projection consumer (with the registration
 * task) SIGKILLed at random points and restarted, while this process keeps committing messages
 * and membership changes (issue 6, "Faults").
 *
 * The relay and the projection run in a child process (relay-projection-child.ts) on a
 * three-instance topology; each round starts it, SIGKILLs it after a delay drawn from a seeded
 * PRNG (sometimes during its start-up, mostly while it relays and projects), and checks with the
 * child dead, before the next one starts: every seq no longer RECORDED is in the log (nothing is
 * marked COMMITTED before it was appended), every partition's checkpoint is at most its high
 * watermark, stores the stream id of the record before its offset, and is not ahead of what was
 * written — every record before it has all its recipients' conversations in `convs`. Rounds
 * alternate at random between the relay handing appends to the low-latency path (as the admin
 * server does) and not (so that only the durable consumer writes the projection and the
 * checkpoint check has teeth). A final child drains everything; then: no committed message
 * missing from the dispatch log (at least once, identical duplicates), every checkpoint at the
 * high watermark, every recipient's conversation in the projection and nothing else, the store
 * invariants of verifyGroups, and the rebuild drill reports ok.
 *
 *   node scripts/run-tests.mjs reliability/relay-projection-kill
 *   QIM_SOAK=1 node scripts/run-tests.mjs reliability/relay-projection-kill   (more rounds)
 *   QIM_SEED=<n> replays the kill delays and the load's choices (the seed is printed).
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { ConversationService, ProjectionStack, RedisHashAuthority, RedisStore, RedisStreamsDispatchLog, type DispatchIdentity } from "../../core/index.js";
import { startTopology } from "../harness/redis.js";
import { buildLoadWorld, Ledger, readWholeLog, runLoad, seededRng, sleep, SOAK, verifyCheckpoints, verifyGroups, verifyMarkedAreLogged, verifyProjection } from "./common.js";

const CFG = SOAK
  ? { rounds: 60, groups: 6, churn: 10, pauseMs: [20, 80] as [number, number] }
  : { rounds: 7, groups: 4, churn: 8, pauseMs: [10, 40] as [number, number] };

const CHILD = fileURLToPath(new URL("./relay-projection-child.js", import.meta.url));

interface Child {
  proc: ChildProcess;
  ready: Promise<boolean>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: () => string;
  stderr: () => string;
}

function startChild(config: object): Child {
  const proc = spawn(process.execPath, [CHILD, JSON.stringify(config)], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  let markReady: (v: boolean) => void = () => {};
  const ready = new Promise<boolean>((resolve) => { markReady = resolve; });
  proc.stdout!.on("data", (d: Buffer) => { out += d.toString(); if (out.includes("ready\n")) markReady(true); });
  proc.stderr!.on("data", (d: Buffer) => { err += d.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on("exit", (code, signal) => { markReady(false); resolve({ code, signal }); }));
  return { proc, ready, exited, stdout: () => out, stderr: () => err };
}

describe("reliability: relay and projection consumer SIGKILLed at random points", { timeout: SOAK ? 1_800_000 : 120_000 }, () => {
  it("nothing committed is missing from the log, no checkpoint runs ahead, and the projection and drill agree", async (t) => {
    const rng = seededRng();
    const say = (line: string) => { t.diagnostic(line); console.log(`# ${line}`); };
    say(`seed ${rng.seed} (replay with QIM_SEED=${rng.seed})${SOAK ? ", soak mode" : ""}`);

    const topology = await startTopology("multi");
    const store = new RedisStore(topology.config);
    const engine = new ConversationService(store, { keyPrefix: `k${randomUUID().slice(0, 8)}` });
    const dispatch: DispatchIdentity = { clusterId: "test", topicId: "dispatch", partitionCount: 4 };
    const log = new RedisStreamsDispatchLog(store, engine.keys, dispatch);
    let live: Child | undefined;
    try {
      await log.ensureIdentity();
      const world = await buildLoadWorld(engine, rng, CFG.groups, CFG.churn, log);
      const ledger = new Ledger();
      let stop = false;
      const load = runLoad(engine, world, ledger, rng, {
        sendersPerGroup: 2, sendsPerWorker: Number.MAX_SAFE_INTEGER, changesPerGroup: Number.MAX_SAFE_INTEGER, stop: () => stop, pauseMs: CFG.pauseMs,
      });

      const violations: string[] = [];
      const childErrors: string[] = [];
      const rounds: string[] = [];
      const base = { topology: topology.config, keyPrefix: engine.keys.prefix, dispatch };
      for (let r = 0; r < CFG.rounds; r++) {
        const lowLatency = rng.chance(0.5);
        const duringStartup = rng.chance(0.25);
        const delay = duringStartup ? rng.int(0, 1500) : rng.int(20, 1500);
        live = startChild({ ...base, lowLatency, mode: "run" });
        const ready = duringStartup ? false : await live.ready;
        if (!duringStartup) assert.ok(ready, `round ${r}: the child started (stderr: ${live.stderr()})`);
        await sleep(delay);
        live.proc.kill("SIGKILL");
        const { signal, code } = await live.exited;
        childErrors.push(...live.stderr().split("\n").filter((l) => l.startsWith("error:")).map((l) => `round ${r}: ${l}`));
        if (signal !== "SIGKILL") violations.push(`round ${r}: the child exited by itself (code ${code}): ${live.stderr()}`);
        live = undefined;
        // with the child dead: no checkpoint beyond the high watermark or ahead of the projection
        const wholeLog = await readWholeLog(log);
        const cp = await verifyCheckpoints(engine, log, wholeLog);
        violations.push(...cp.violations.map((v) => `after the kill of round ${r}: ${v}`));
        const marked = await verifyMarkedAreLogged(engine, world.specs, wholeLog);
        violations.push(...marked.violations.map((v) => `after the kill of round ${r}: ${v}`));
        const p = cp.partitions;
        rounds.push(`${r}:${lowLatency ? "LL" : "D"}${duringStartup ? "/startup" : ""}+${delay}ms cp=${p.map((x) => x.checkpoint ?? "-").join(",")} high=${p.map((x) => x.high).join(",")} marked=${marked.marked} recorded=${marked.recorded}`);
      }
      stop = true;
      await load;
      assert.deepEqual(ledger.unexpected, [], "no call failed with anything but an expected refusal");

      // a final child relays, projects and registers everything
      live = startChild({ ...base, lowLatency: false, mode: "drain" });
      const end = await live.exited;
      assert.equal(end.code, 0, `the draining child finished: ${live.stderr()}`);
      const drained = JSON.parse(live.stdout().trim()) as { relayed: number; projected: number; registered: number };
      childErrors.push(...live.stderr().split("\n").filter((l) => l.startsWith("error:")));
      live = undefined;

      const wholeLog = await readWholeLog(log);
      const report = await verifyGroups(engine, log, world.specs, ledger, wholeLog);
      violations.push(...report.violations);
      violations.push(...await verifyProjection(engine, world.tenant, world.users, wholeLog));
      const cp = await verifyCheckpoints(engine, log, wholeLog);
      violations.push(...cp.violations);
      for (const p of cp.partitions) if (p.checkpoint !== p.high) violations.push(`partition ${p.partition}: checkpoint ${p.checkpoint} after the final drain, high watermark ${p.high}`);

      const stack = new ProjectionStack({ store, keys: engine.keys, conversations: engine, log, authority: new RedisHashAuthority(store, engine.keys) }, { background: false, retentionMs: 0 });
      const started = await stack.start();
      for (const a of started.audits) if (a.verdict !== "OK" || a.lag !== 0) violations.push(`start-up audit of partition ${a.partition}: ${a.verdict} lag ${a.lag} (${a.detail})`);
      const pending = await stack.registration.depthPerInstance();
      if (pending.some((p) => p.depth > 0)) violations.push(`registrations still pending: ${JSON.stringify(pending)}`);
      const drill = await stack.drill.run({ users: world.users.map((user) => ({ tenant: world.tenant, user })), wipe: "projection", by: "test" });
      violations.push(...drill.differences.map((d) => `drill: ${JSON.stringify(d)}`));
      await stack.stop();

      say(`rounds (LL = low-latency path on, D = durable consumer only; kill delay; checkpoints and high watermarks per partition after the kill, seqs marked COMMITTED / still RECORDED): ${rounds.join("  ")}`);
      say(`operations: ${ledger.acknowledged} acknowledged (${ledger.sends.length} sends, ${ledger.changes.length} membership events, ${ledger.noopChanges} no-op changes, ${ledger.refusedSends.length} refused sends); `
        + `${CFG.rounds} SIGKILLs; the final drain relayed ${drained.relayed} outbox entries, projected ${drained.projected} records, registered ${drained.registered}`);
      say(`checked: ${report.historyEntries} history entries, ${report.dispatchRecords} dispatch records (${report.duplicateDispatches} at-least-once duplicates), ${world.users.length} users' projections, `
        + `${cp.partitions.length} checkpoints after each of ${CFG.rounds} kills and at the end, drill over ${drill.users} users / ${drill.conversationsBefore} conversations`);
      say(`violations: ${violations.length}; child errors: ${childErrors.length}`);
      assert.deepEqual(violations.slice(0, 20), []);
      assert.deepEqual(childErrors.slice(0, 10), []);
      assert.equal(drill.ok, true);
    } finally {
      if (live) {
        live.proc.kill("SIGKILL");
        await live.exited;
      }
      await store.close();
      await topology.stop();
    }
  });
});
