/**
 * bench/cluster — the engine cluster (issue 11) with real server processes on one private
 * redis-server, in one run:
 *   1. Aggregate send throughput through 1 node and through 3 nodes (the same clients, the same
 *      concurrency, sends spread over the nodes), as a ratio of the 1-node run of the same run;
 *      dispatch lag per record: its stream id (the append time, Redis's clock) minus the message's
 *      created_at, median and p99.
 *   2. Duplicate appends per 10k commits over both runs, from the whole dispatch log.
 *   3. kill -9 of one of 3 nodes, K times: the time from the kill (Redis TIME just before it) to
 *      every unit owned again by a live node, by the lease records' own `since` (Redis TIME).
 *      Median over the kills.
 * Every node has a node certificate of its own, so that its NodeService runs and a commit on a
 * bucket another node owns is kicked to that owner (the production set-up); `--no-node-rpc`
 * starts them without one (`node.listen off`): such commits wait for the owner's sweep.
 * Usage: node dist/bench/cluster.js [--seconds S] [--concurrency C] [--kills K] [--no-node-rpc] [--json]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { connectAdmin, type AdminClient } from "../admin-api/client.js";
import {
  ROOM_UNIT_COUNT, COMMIT_BUCKET_COUNT, decodeHistoryEntry, fanoutKeys, KeySpace, newUuid, outboxKey, RedisStore, RedisStreamsDispatchLog, unitLeaseKey,
  type DispatchIdentity, type UnitKind, type Uuid,
} from "../core/index.js";
import { issueNodeCert } from "../certs/pki.js";
import { writeTestPki, type TestPkiFiles } from "../test/certs/fixture.js";
import { freePort, startRedis } from "../test/harness/redis.js";
import { readWholeLog } from "../test/reliability/common.js";
import { startServerProcess, type ServerProcess } from "../test/reliability/server-process.js";
import { flag } from "./args.js";

const args = process.argv.slice(2);
const SECONDS = flag("--seconds", 10);
const CONCURRENCY = flag("--concurrency", 24);
const KILLS = flag("--kills", 3);
const JSON_ONLY = args.includes("--json");
const NODE_RPC = !args.includes("--no-node-rpc");
const LEASE_TTL_MS = 3000;
const HEARTBEAT_MS = 1000;
const IDENTITY: DispatchIdentity = { clusterId: "qim", topicId: "dispatch", partitionCount: 8 };
const UNITS: Record<UnitKind, number> = { relay: COMMIT_BUCKET_COUNT, partition: IDENTITY.partitionCount, slot: COMMIT_BUCKET_COUNT, room: ROOM_UNIT_COUNT };
const say = (line: string) => { if (!JSON_ONLY) process.stderr.write(`${line}\n`); };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;

interface Node {
  id: string;
  port: number;
  auditLog: string;
  proc: ServerProcess | null;
  client: AdminClient | null;
}

const dir = mkdtempSync(path.join(os.tmpdir(), "qim-bench-cluster-"));
const pki: TestPkiFiles = await writeTestPki(path.join(dir, "pki"));
const redis = await startRedis();
const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
const keys = new KeySpace("qim");
const log = new RedisStreamsDispatchLog(store, keys, IDENTITY);
const nodes: Node[] = [];
for (let i = 1; i <= 3; i++) nodes.push({ id: `n${i}`, port: await freePort(), auditLog: path.join(dir, `n${i}`, "audit.log"), proc: null, client: null });

/** The node's own certificate (role node, CN its id), issued by the bench's CA; the node service's flags. */
function nodeRpcArgs(n: Node): string[] {
  if (!NODE_RPC) return ["--node-listen", "off"];
  const certDir = path.join(dir, "node-certs");
  mkdirSync(certDir, { recursive: true });
  const ca = { certPem: readFileSync(pki.ca.certPath, "utf8"), keyPem: readFileSync(pki.ca.keyPath, "utf8") };
  const cert = issueNodeCert(ca, { nodeId: n.id, hosts: ["localhost", "127.0.0.1"] });
  const certPath = path.join(certDir, `${n.id}.crt`);
  const keyPath = path.join(certDir, `${n.id}.key`);
  writeFileSync(certPath, cert.certPem);
  writeFileSync(keyPath, cert.keyPem, { mode: 0o600 });
  return ["--node-listen", "127.0.0.1:0", "--node-tls-cert", certPath, "--node-tls-key", keyPath];
}

async function start(n: Node): Promise<void> {
  n.proc = await startServerProcess({
    redisAddr: redis.addr, pki, auditLog: n.auditLog, port: n.port,
    extraArgs: ["--node-id", n.id, "--cluster-lease-ttl", `${LEASE_TTL_MS}ms`, "--cluster-heartbeat-interval", `${HEARTBEAT_MS}ms`, ...nodeRpcArgs(n)],
  });
  n.client = connectAdmin({
    endpoint: n.proc.endpoint, caPem: readFileSync(pki.ca.certPath, "utf8"), certPem: readFileSync(pki.admin.certPath, "utf8"), keyPem: readFileSync(pki.admin.keyPath, "utf8"),
  });
}

async function stop(n: Node, signal: "SIGTERM" | "SIGKILL"): Promise<void> {
  n.client?.close();
  n.client = null;
  if (signal === "SIGKILL") {
    n.proc!.signal("SIGKILL");
    await n.proc!.exited;
  } else {
    await n.proc!.stop();
  }
  n.proc = null;
}

async function leases(kind: UnitKind): Promise<{ owner: string; since: number }[]> {
  return Promise.all(Array.from({ length: UNITS[kind] }, async (_, u) => {
    const key = unitLeaseKey(keys, kind, u);
    const [owner, since] = await store.clientForKey(key).hmget(key, "owner", "since");
    return { owner: owner ?? "", since: Number(since ?? 0) };
  }));
}

/** Waits until every unit is owned by one of `ids`; returns the newest `since` (Redis TIME ms). */
async function ownedBy(ids: string[]): Promise<number> {
  for (;;) {
    const all = (await Promise.all((["relay", "partition", "slot"] as UnitKind[]).map(leases))).flat();
    if (all.every((l) => ids.includes(l.owner))) return Math.max(...all.map((l) => l.since));
    await sleep(100);
  }
}

async function redisNow(): Promise<number> {
  const [s, us] = await store.clientForKey(unitLeaseKey(keys, "relay", 0)).time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

async function settled(): Promise<void> {
  for (;;) {
    const buckets = Array.from({ length: COMMIT_BUCKET_COUNT }, (_, b) => b);
    const outbox = (await store.listLengths([...buckets.map((b) => outboxKey(keys, b)), ...buckets.map((b) => fanoutKeys(keys, b).fanoutJobs)])).reduce((a, x) => a + x, 0);
    if (outbox === 0) return;
    await sleep(100);
  }
}

const tenant = newUuid();
const groups: { group: Uuid; members: Uuid[] }[] = [];

/** Sends for SECONDS through the live nodes, CONCURRENCY at a time; returns sends per second. */
async function load(live: Node[]): Promise<{ sends: number; perSecond: number }> {
  let sends = 0;
  let i = 0;
  const until = Date.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, w) => {
    while (Date.now() < until) {
      const n = i++;
      const g = groups[n % groups.length]!;
      await live[(w + n) % live.length]!.client!.sendMessage({ tenant, group: g.group, sender: g.members[n % g.members.length]!, text: `m${n}`, clientMessageId: newUuid(), mentions: [] });
      sends++;
    }
  }));
  return { sends, perSecond: sends / SECONDS };
}

/** Dispatch lag of the records appended since `fromMs` (stream id time − created_at). */
async function lags(fromMs: number): Promise<number[]> {
  const out: number[] = [];
  for (const part of await readWholeLog(log)) {
    for (const e of part) {
      const appended = Number(e.id.slice(0, e.id.indexOf("-")));
      if (appended < fromMs || e.record.tenant !== tenant) continue;
      out.push(appended - decodeHistoryEntry(e.record.entry).createdAt);
    }
  }
  return out;
}

try {
  // 1 node
  await start(nodes[0]!);
  await ownedBy(["n1"]);
  for (let g = 0; g < 60; g++) {
    const owner = newUuid();
    const members = [owner, newUuid(), newUuid()];
    const r = await nodes[0]!.client!.createGroup({ tenant, group: "", owner, members: members.slice(1) });
    groups.push({ group: r.group as Uuid, members });
  }
  say(`1 node: ${SECONDS} s of sends, ${CONCURRENCY} in flight`);
  let t0 = await redisNow();
  const one = await load([nodes[0]!]);
  await settled();
  const lagOne = await lags(t0);
  // 3 nodes
  await start(nodes[1]!);
  await start(nodes[2]!);
  await sleep(3 * HEARTBEAT_MS);
  await ownedBy(["n1", "n2", "n3"]);
  say(`3 nodes: ${SECONDS} s of sends, ${CONCURRENCY} in flight`);
  t0 = await redisNow();
  const three = await load(nodes);
  await settled();
  const lagThree = await lags(t0);

  // duplicates over everything so far
  // per chunk: a fanout job's chunks (issue 22) share their seq
  const counts = new Map<string, number>();
  for (const part of await readWholeLog(log)) for (const e of part) {
    const k = `${e.record.conversation}|${e.record.conversationSeq}|${e.record.chunk}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const commits = new Set([...counts.keys()].map((k) => k.slice(0, k.lastIndexOf("|")))).size;
  const duplicates = [...counts.values()].reduce((a, c) => a + c - 1, 0);

  // kill -9 → every unit owned again
  const recovery: number[] = [];
  for (let k = 0; k < KILLS; k++) {
    const victim = nodes[2]!;
    const killedAt = await redisNow();
    await stop(victim, "SIGKILL");
    const newest = await ownedBy(["n1", "n2"]);
    recovery.push(newest - killedAt);
    say(`kill ${k + 1}: every unit owned again ${newest - killedAt} ms after the kill`);
    await start(victim);
    await ownedBy(["n1", "n2", "n3"]);
    await sleep(2 * HEARTBEAT_MS);
  }

  const result = {
    machine: { cpus: os.cpus().length, node: process.version },
    settings: { seconds: SECONDS, concurrency: CONCURRENCY, leaseTtlMs: LEASE_TTL_MS, heartbeatIntervalMs: HEARTBEAT_MS, nodeRpc: NODE_RPC },
    throughput: { oneNodePerSecond: Math.round(one.perSecond), threeNodesPerSecond: Math.round(three.perSecond), ratio: Number((three.perSecond / one.perSecond).toFixed(2)) },
    dispatchLagMs: { oneNode: { p50: median(lagOne), p99: pct(lagOne, 0.99) }, threeNodes: { p50: median(lagThree), p99: pct(lagThree, 0.99) } },
    duplicates: { commits, duplicateAppends: duplicates, per10kCommits: Number(((duplicates / commits) * 10_000).toFixed(2)) },
    killRecoveryMs: { samples: recovery, median: median(recovery), bound: LEASE_TTL_MS + HEARTBEAT_MS },
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  for (const n of nodes) if (n.proc) await stop(n, "SIGTERM").catch(() => {});
  await store.close();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
