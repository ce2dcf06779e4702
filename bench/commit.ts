/**
 * bench/commit — from one run on one private redis-server:
 *   1. group sends committed/s through core (Engine.send), next to a baseline measured in the same
 *      run: ioredis EVALSHA of a minimal INCR+ZADD script at the same concurrency (the physical
 *      limit of "allocate a seq and write the entry" on this Redis). Target: ≥ 0.5×.
 *   2. membership changes/s through core (plan read + one Lua), next to the same baseline.
 *   3. Redis memory of a 10,000-member group after 100 membership changes, summed over the group's
 *      keys (MEMORY USAGE … SAMPLES 0), next to a SET of its current members alone. Target ≤ 2×.
 *      Measured with the relay keeping up and with the relay stalled (every delta retained).
 *   4. redis.ack_replicas (issue 26): group sends/s and membership changes/s on a master with one
 *      replica (a second redis-server, replicaof), acknowledged after WAIT 1 (ack_replicas 1)
 *      against the same workload on the same master without WAIT (ack_replicas 0), in the same run.
 *   5. the message-type registry (issue 29): sends of a declared custom type (the tenant's registry
 *      snapshot looked up and applied on each send, the entry stamped with its version) against
 *      sends of an ordinary text/plain message of the same payload, same groups, in the same run;
 *      each round runs plain, custom, custom, plain, so the two plain runs give the noise (spread).
 * Rounds alternate baseline and core so that machine noise hits both alike; medians are printed.
 * Usage: node dist/bench/commit.js [--json] [--ops N] [--rounds R] [--ack-only] [--registry-only] (--ack-only: part 4 alone; --registry-only: part 5 alone)
 */
import { Redis } from "ioredis";
import {
  ConversationService, encodeHistoryRest, MessageTypeRegistry, OutboxRelay, parseDeclaration, RedisStore, RedisStreamsDispatchLog, registry, uuidToHex, type Uuid,
} from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { newUuid } from "../core/index.js";
import { flag } from "./args.js";

const args = process.argv.slice(2);
const JSON_OUT = args.includes("--json");
const OPS = flag("--ops", 20000);
const ROUNDS = flag("--rounds", 3);
const CONCURRENCY = 64;
const ACK_ONLY = args.includes("--ack-only");
const REGISTRY_ONLY = args.includes("--registry-only");
/** Part 4's wait for the replica (redis.ack_timeout's default). */
const ACK_TIMEOUT_MS = 1000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function runConcurrent(total: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (;;) {
      const i = next++;
      if (i >= total) return;
      await op(i);
    }
  }));
  return total / (Number(process.hrtime.bigint() - start) / 1e9);
}

const BASELINE_LUA = `
local seq = redis.call("INCR", KEYS[1])
redis.call("ZADD", KEYS[2], seq, seq .. "|" .. ARGV[1])
return seq`;

async function main() {
  const server = await startRedis();
  const store = new RedisStore({ kind: "instances", addrs: [server.addr] });
  const engine = new ConversationService(store, { keyPrefix: "bench" });
  const raw = new Redis({ host: server.host, port: server.port });
  raw.defineCommand("baselineCommit", { numberOfKeys: 2, lua: BASELINE_LUA });
  const log = new RedisStreamsDispatchLog(store, engine.keys, { clusterId: "bench", topicId: "dispatch", partitionCount: 8 });
  await log.ensureIdentity();
  const relay = new OutboxRelay(store, engine.keys, log);
  const out: Record<string, unknown> = { ops: OPS, rounds: ROUNDS, concurrency: CONCURRENCY, redis: (await raw.info("server")).match(/redis_version:(\S+)/)?.[1] };

  try {
    const tenant = newUuid();
    // the same entry size as a core send of this text
    const text = "benchmark message of a typical size, about sixty bytes long..";
    const sample = encodeHistoryRest({ messageId: newUuid(), senderId: newUuid(), kind: "normal", countsUnread: true, createdAt: Date.now(), contentType: "text/plain", payload: Buffer.from(text) });

    /**
     * One workload: CONCURRENCY senders in flight spread over `groupCount` groups, so that
     * CONCURRENCY / groupCount sends of one group are in flight at once (what group commit can
     * batch). The baseline writes the same number of conversations' keys.
     */
    const workload = async (groupCount: number) => {
      const groups: { group: Uuid; owner: Uuid }[] = [];
      for (let g = 0; g < groupCount; g++) {
        const owner = newUuid();
        const { group } = await engine.createGroup({ tenant, owner, members: Array.from({ length: 20 }, () => newUuid()) });
        groups.push({ group, owner });
      }
      const baseline = (i: number) => {
        const k = engine.conversationKeys(tenant, groups[i % groupCount]!.group);
        return (raw as unknown as { baselineCommit: (a: string, b: string, c: string) => Promise<number> })
          .baselineCommit(`${k.cseq}:baseline`, `${k.hist}:baseline`, sample);
      };
      const send = (i: number) => {
        const g = groups[i % groupCount]!;
        return engine.send({ tenant, group: g.group, sender: g.owner, text });
      };
      await runConcurrent(2000, CONCURRENCY, baseline);
      await runConcurrent(2000, CONCURRENCY, send);
      await relay.drainAll();
      const baseRates: number[] = [];
      const sendRates: number[] = [];
      const relayRates: number[] = [];
      const batches = async () => {
        const h = (await registry.getMetricsAsJSON()).find((m) => m.name === "qim_writer_commit_batch_size")!;
        const v = (suffix: string) => Number((h.values as { metricName?: string; value: number }[]).find((x) => x.metricName === `qim_writer_commit_batch_size_${suffix}`)?.value ?? 0);
        return { sum: v("sum"), count: v("count") };
      };
      const b0 = await batches();
      for (let r = 0; r < ROUNDS; r++) {
        baseRates.push(await runConcurrent(OPS, CONCURRENCY, baseline));
        sendRates.push(await runConcurrent(OPS, CONCURRENCY, send));
        const t0 = process.hrtime.bigint();
        const n = await relay.drainAll();
        relayRates.push(n / (Number(process.hrtime.bigint() - t0) / 1e9));
      }
      const b1 = await batches();
      return {
        groups: groupCount,
        inFlightPerGroup: CONCURRENCY / groupCount,
        baselineOpsPerSec: Math.round(median(baseRates)),
        sendsPerSec: Math.round(median(sendRates)),
        ratio: +(median(sendRates) / median(baseRates)).toFixed(3),
        meanBatch: +((b1.sum - b0.sum) / (b1.count - b0.count)).toFixed(2),
        relayCommitsPerSec: Math.round(median(relayRates)),
      };
    };
    out.sends = [await workload(CONCURRENCY), await workload(16), await workload(4)];

    // membership changes: each worker toggles one user of its own in a group of its own (the
    // contended case is the acceptance test's business; this measures the cost of one change)
    const users = Array.from({ length: CONCURRENCY }, () => newUuid());
    const ownGroups: Uuid[] = [];
    for (let w = 0; w < CONCURRENCY; w++) ownGroups.push((await engine.createGroup({ tenant, owner: newUuid(), members: Array.from({ length: 20 }, () => newUuid()) })).group);
    const memberRates: number[] = [];
    const memberBase: number[] = [];
    const changes = Math.max(2000, Math.floor(OPS / 4));
    for (let r = 0; r < ROUNDS; r++) {
      memberBase.push(await runConcurrent(changes, CONCURRENCY, (i) => (raw as unknown as { baselineCommit: (a: string, b: string, c: string) => Promise<number> })
        .baselineCommit(`bench:{b000}:cseq:${i % CONCURRENCY}`, `bench:{b000}:hist:${i % CONCURRENCY}`, sample)));
      const active = new Set<number>();
      let next = 0;
      const start = process.hrtime.bigint();
      await Promise.all(users.map(async (u, w) => {
        for (;;) {
          const i = next++;
          if (i >= changes) return;
          const group = ownGroups[w]!;
          if (active.has(w)) { await engine.removeMembers({ tenant, group, users: [u] }); active.delete(w); }
          else { await engine.addMembers({ tenant, group, users: [u] }); active.add(w); }
        }
      }));
      memberRates.push(changes / (Number(process.hrtime.bigint() - start) / 1e9));
      await relay.drainAll();
    }
    out.membershipChangesPerSec = Math.round(median(memberRates));
    out.membershipBaselineOpsPerSec = Math.round(median(memberBase));
    out.membershipRatio = +(median(memberRates) / median(memberBase)).toFixed(3);

    // memory of a 10,000-member group after 100 membership changes
    const memory = async (relayKeepsUp: boolean) => {
      const owner = newUuid();
      const initial = Array.from({ length: 9999 }, () => newUuid());
      const { group } = await engine.createGroup({ tenant, owner, members: initial });
      const present = new Set([owner, ...initial]);
      const newcomers = Array.from({ length: 50 }, () => newUuid());
      for (let i = 0; i < 100; i++) {
        // a message pending at every version, so that a stalled relay needs every delta
        await engine.send({ tenant, group, sender: owner, text });
        if (i % 2 === 0) { const u = newcomers[i / 2]!; await engine.addMembers({ tenant, group, users: [u] }); present.add(u); }
        else { const u = initial[i]!; await engine.removeMembers({ tenant, group, users: [u] }); present.delete(u); }
        if (relayKeepsUp) await relay.drainAll();
      }
      const k = engine.conversationKeys(tenant, group);
      const keys = [k.grpmeta, k.grpmembers, k.grpdeltas, k.vpending, k.cseq, k.hist, k.commits, k.idem, k.readseq, k.unreadidx];
      const usage = async () => {
        let sum = 0;
        for (const key of keys) sum += Number((await raw.call("MEMORY", "USAGE", key, "SAMPLES", "0")) ?? 0);
        return sum;
      };
      const groupBytes = await usage();
      const deltas = await raw.hlen(k.grpdeltas);
      const ref = `${k.grpmeta}:reference-member-set`;
      const ids = [...present].map(uuidToHex);
      for (let i = 0; i < ids.length; i += 1000) await raw.sadd(ref, ...ids.slice(i, i + 1000));
      const setBytes = Number(await raw.call("MEMORY", "USAGE", ref, "SAMPLES", "0"));
      await raw.del(ref);
      let afterDrain: number | undefined;
      if (!relayKeepsUp) { await relay.drainAll(); afterDrain = await usage(); }
      return { members: present.size, groupBytes, memberSetBytes: setBytes, ratio: +(groupBytes / setBytes).toFixed(3), deltasRetained: deltas,
        ...(afterDrain !== undefined ? { groupBytesAfterRelayDrained: afterDrain, ratioAfterRelayDrained: +(afterDrain / setBytes).toFixed(3) } : {}) };
    };
    out.memoryRelayKeepsUp = await memory(true);
    out.memoryRelayStalled = await memory(false);
    out.ack = await ackCost(server.addr, text);
    out.registry = await registryCost(server.addr, text);
  } finally {
    raw.disconnect();
    await store.close();
    await server.stop();
  }

  if (JSON_OUT) { console.log(JSON.stringify(out, null, 2)); return; }
  const m1 = out.memoryRelayKeepsUp as Record<string, number>;
  const m2 = out.memoryRelayStalled as Record<string, number>;
  console.log(`redis ${String(out.redis)}, ${CONCURRENCY} in flight, ${OPS} ops × ${ROUNDS} rounds (medians)`);
  for (const w of out.sends as Record<string, number>[]) {
    console.log(`group sends, ${String(w.groups).padStart(2)} groups × ${String(w.inFlightPerGroup).padStart(2)} in flight: core ${String(w.sendsPerSec).padStart(6)} msg/s vs baseline EVALSHA INCR+ZADD ${String(w.baselineOpsPerSec).padStart(6)} ops/s = ratio ${String(w.ratio)} (target ≥ 0.5); mean batch ${String(w.meanBatch)}; relay ${String(w.relayCommitsPerSec)} commits/s`);
  }
  console.log(`core membership changes      ${String(out.membershipChangesPerSec).padStart(8)} changes/s  ratio ${String(out.membershipRatio)} vs baseline ${String(out.membershipBaselineOpsPerSec)} ops/s`);
  console.log(`10k-member group, 100 changes, relay keeping up: ${m1.groupBytes} B vs member set ${m1.memberSetBytes} B = ${m1.ratio}× (target ≤ 2), deltas retained ${m1.deltasRetained}`);
  console.log(`10k-member group, 100 changes, relay stalled:    ${m2.groupBytes} B vs member set ${m2.memberSetBytes} B = ${m2.ratio}×, deltas retained ${m2.deltasRetained}; after the relay drains ${m2.groupBytesAfterRelayDrained} B = ${m2.ratioAfterRelayDrained}×`);
  console.log(ackLine(out.ack as Record<string, number>));
  console.log(registryLine(out.registry as Record<string, number>));
}

function registryLine(r: Record<string, number>): string {
  return `registry applied (a declared custom type) vs text/plain, same payload and groups: ${r.customSendsPerSec} vs ${r.plainSendsPerSec} msg/s = ratio ${r.ratio}; `
    + `spread of two plain runs in a round: ${r.spreadPct}% (${CONCURRENCY} in flight over ${r.groups} groups, ${OPS} ops × ${ROUNDS} rounds, medians)`;
}

/** --registry-only: part 5 alone, on a private redis-server. */
async function registryMain(): Promise<void> {
  const server = await startRedis();
  try {
    const r = await registryCost(server.addr, "benchmark message of a typical size, about sixty bytes long..");
    console.log(JSON_OUT ? JSON.stringify({ ops: OPS, rounds: ROUNDS, concurrency: CONCURRENCY, registry: r }, null, 2) : registryLine(r));
  } finally {
    await server.stop();
  }
}

/** Part 5: the send path with the registry applied, against the same sends of an ordinary message. */
async function registryCost(addr: string, text: string): Promise<Record<string, number>> {
  const store = new RedisStore({ kind: "instances", addrs: [addr] });
  try {
    let types: MessageTypeRegistry | null = null;
    const engine = new ConversationService(store, { keyPrefix: "benchreg", messageTypes: (t) => types!.current(t) });
    types = new MessageTypeRegistry(store, engine.keys);
    const tenant = newUuid();
    await types.apply({ tenant, put: [parseDeclaration({ custom_type: "bench.note.v1", preview_template: "[note]" }, "bench")], delete: [] });
    const groups = 16;
    const gs: { group: Uuid; owner: Uuid }[] = [];
    for (let g = 0; g < groups; g++) {
      const owner = newUuid();
      gs.push({ group: (await engine.createGroup({ tenant, owner, members: Array.from({ length: 20 }, () => newUuid()) })).group, owner });
    }
    const payload = Buffer.from(text);
    const sender = (contentType: string) => (i: number) => { const g = gs[i % groups]!; return engine.send({ tenant, group: g.group, sender: g.owner, payload, contentType }); };
    const plain = sender("text/plain");
    const custom = sender(process.env.QIM_BENCH_SAME ? "text/plain" : "bench.note.v1");
    await runConcurrent(2000, CONCURRENCY, plain);
    await runConcurrent(2000, CONCURRENCY, custom);
    const plainRates: number[] = [];
    const customRates: number[] = [];
    const spreads: number[] = [];
    // plain, custom, custom, plain: a trend over the round (the zsets grow) weighs on both alike
    for (let r = 0; r < ROUNDS; r++) {
      const a = await runConcurrent(OPS, CONCURRENCY, plain);
      const c1 = await runConcurrent(OPS, CONCURRENCY, custom);
      const c2 = await runConcurrent(OPS, CONCURRENCY, custom);
      const b = await runConcurrent(OPS, CONCURRENCY, plain);
      plainRates.push((a + b) / 2);
      customRates.push((c1 + c2) / 2);
      spreads.push(Math.abs(a - b) / ((a + b) / 2));
    }
    return {
      groups, plainSendsPerSec: Math.round(median(plainRates)), customSendsPerSec: Math.round(median(customRates)),
      ratio: +(median(customRates) / median(plainRates)).toFixed(3), spreadPct: +(100 * median(spreads)).toFixed(1),
    };
  } finally {
    await store.close();
  }
}

function ackLine(a: Record<string, number>): string {
  return `redis.ack_replicas 1 (WAIT 1 after each commit, one replica) vs 0 on the same master: sends ${a.ackedSendsPerSec} vs ${a.sendsPerSec} msg/s = ratio ${a.sendRatio}; `
    + `membership changes ${a.ackedChangesPerSec} vs ${a.changesPerSec} changes/s = ratio ${a.changeRatio} (${CONCURRENCY} in flight over ${a.groups} groups, ${OPS} ops × ${ROUNDS} rounds, medians)`;
}

/** --ack-only: part 4 alone, on a private master of its own. */
async function ackMain(): Promise<void> {
  const server = await startRedis();
  try {
    const ack = await ackCost(server.addr, "benchmark message of a typical size, about sixty bytes long..");
    console.log(JSON_OUT ? JSON.stringify({ ops: OPS, rounds: ROUNDS, concurrency: CONCURRENCY, ack }, null, 2) : ackLine(ack));
  } finally {
    await server.stop();
  }
}

/**
 * Part 4: the cost of redis.ack_replicas 1. A replica of the bench's master (replicaof); two
 * stores on that master, one whose topology asks for WAIT 1 after each commit; the same send and
 * membership workloads through each, rounds alternating.
 */
async function ackCost(master: string, text: string): Promise<Record<string, number>> {
  const [host, port] = master.split(":");
  const replica = await startRedis({ extraArgs: ["--replicaof", host!, port!] });
  const plain = new RedisStore({ kind: "instances", addrs: [master] });
  const acked = new RedisStore({ kind: "instances", addrs: [master], ack: { replicas: 1, timeoutMs: ACK_TIMEOUT_MS } });
  try {
    for (let i = 0; i < 200 && !/master_link_status:up/.test(await replica.command(["INFO", "replication"])); i++) await new Promise((r) => setTimeout(r, 50));
    const tenant = newUuid();
    const groups = 16;
    const setUp = async (store: RedisStore, prefix: string) => {
      const engine = new ConversationService(store, { keyPrefix: prefix });
      const gs: { group: Uuid; owner: Uuid }[] = [];
      for (let g = 0; g < groups; g++) {
        const owner = newUuid();
        gs.push({ group: (await engine.createGroup({ tenant, owner, members: Array.from({ length: 20 }, () => newUuid()) })).group, owner });
      }
      const send = (i: number) => { const g = gs[i % groups]!; return engine.send({ tenant, group: g.group, sender: g.owner, text }); };
      const users = Array.from({ length: CONCURRENCY }, () => newUuid());
      const own: Uuid[] = [];
      for (let w = 0; w < CONCURRENCY; w++) own.push((await engine.createGroup({ tenant, owner: newUuid() })).group);
      const active = new Set<number>();
      // change i toggles user w = i mod CONCURRENCY in group w, after w's previous change
      const chains: Promise<unknown>[] = users.map(() => Promise.resolve());
      const change = (i: number) => {
        const w = i % CONCURRENCY;
        const next = chains[w]!.then(async () => {
          if (active.has(w)) { active.delete(w); await engine.removeMembers({ tenant, group: own[w]!, users: [users[w]!] }); }
          else { active.add(w); await engine.addMembers({ tenant, group: own[w]!, users: [users[w]!] }); }
        });
        chains[w] = next;
        return next;
      };
      return { send, change };
    };
    const p = await setUp(plain, "benchack0");
    const a = await setUp(acked, "benchack1");
    await runConcurrent(2000, CONCURRENCY, p.send);
    await runConcurrent(2000, CONCURRENCY, a.send);
    const rates = { s0: [] as number[], s1: [] as number[], c0: [] as number[], c1: [] as number[] };
    const changes = Math.max(2000, Math.floor(OPS / 4));
    for (let r = 0; r < ROUNDS; r++) {
      rates.s0.push(await runConcurrent(OPS, CONCURRENCY, p.send));
      rates.s1.push(await runConcurrent(OPS, CONCURRENCY, a.send));
      rates.c0.push(await runConcurrent(changes, CONCURRENCY, p.change));
      rates.c1.push(await runConcurrent(changes, CONCURRENCY, a.change));
    }
    return {
      groups,
      sendsPerSec: Math.round(median(rates.s0)),
      ackedSendsPerSec: Math.round(median(rates.s1)),
      sendRatio: +(median(rates.s1) / median(rates.s0)).toFixed(3),
      changesPerSec: Math.round(median(rates.c0)),
      ackedChangesPerSec: Math.round(median(rates.c1)),
      changeRatio: +(median(rates.c1) / median(rates.c0)).toFixed(3),
    };
  } finally {
    await plain.close();
    await acked.close();
    await replica.stop();
  }
}

(ACK_ONLY ? ackMain() : REGISTRY_ONLY ? registryMain() : main()).catch((err) => { console.error(err); process.exit(1); });
