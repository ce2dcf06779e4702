/**
 * Node roles (cluster.units, docs/cluster.md "Node roles"): a node takes only the kinds of units it
 * was started with, and each kind's assignment is computed over the live nodes that take it.
 * - in this process, ClusterMembership nodes on a real Redis (single and a 3-master Redis Cluster):
 *   an API node (relay only) and a full node split the relay buckets 128/128 and the full node
 *   takes every partition and slot; with the full node gone, partitions and slots stay unowned
 *   (and the API node says so once); a worker node (partition, slot) takes them all. The owners
 *   are read from the lease keys in Redis, not from the nodes' own view;
 * - two REAL server processes, an API node (--cluster-units relay) and a worker node
 *   (--cluster-units partition,slot): ClusterService.ListNodes shows each node's units and
 *   ownership, and a member added through the API node shows up in the member's conversation list,
 *   which only the worker (the partitions' owner) writes.
 * Expected counts are worked out by hand from the bounded-load rule: 256 units on 2 nodes is 128
 * each; a kind one node takes is all that node's.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import {
  ROOM_UNIT_COUNT, ClusterMembership, KeySpace, RedisStore, RELAY_BUCKET_COUNT, SLOT_COUNT, UNIT_KINDS, unitLeaseKey, type UnitKind,
} from "../../core/index.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { startRedis, startTopology, type RedisServer, type TestTopology } from "../harness/redis.js";
import { scrape } from "../monitoring/exposition.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";

const PARTITIONS = 8;
const COUNT: Record<UnitKind, number> = { relay: RELAY_BUCKET_COUNT, partition: PARTITIONS, slot: SLOT_COUNT, room: ROOM_UNIT_COUNT };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Owner of every unit of each kind, read from the lease hashes in Redis ("" : nobody). */
async function leaseOwners(store: RedisStore, keys: KeySpace): Promise<Record<UnitKind, string[]>> {
  const out = {} as Record<UnitKind, string[]>;
  for (const kind of UNIT_KINDS) {
    out[kind] = await Promise.all(Array.from({ length: COUNT[kind] }, async (_, u) => {
      const key = unitLeaseKey(keys, kind, u);
      return (await store.clientForKey(key).hget(key, "owner")) ?? "";
    }));
  }
  return out;
}

const tally = (owners: string[]) => {
  const m: Record<string, number> = {};
  for (const o of owners) m[o] = (m[o] ?? 0) + 1;
  return m;
};

for (const kind of ["single", "cluster"] as const) {
  describe(`node roles in this process (${kind})`, { timeout: 120_000 }, () => {
    let topo: TestTopology;
    let store: RedisStore;
    before(async () => {
      topo = await startTopology(kind);
      store = new RedisStore(topo.config);
    });
    after(async () => {
      await store?.close();
      await topo?.stop();
    });

    it("an API node takes relay buckets only; partitions and slots wait for a node that takes them", async () => {
      const keys = new KeySpace(`roles${randomUUID().slice(0, 8)}`);
      const logs: Record<string, string[]> = { api: [], full: [], worker: [] };
      // long intervals: the test drives every heartbeat itself with tick()
      const node = (id: string, units?: UnitKind[]) => new ClusterMembership(store, keys, PARTITIONS, {
        nodeId: id, address: "", version: "test", leaseTtlMs: 60_000, heartbeatIntervalMs: 30_000, ...(units ? { units } : {}), log: (l) => logs[id]!.push(l),
      });
      assert.throws(() => node("bad", []), /cluster: units \[\]: one or more of relay, partition, slot, room/);
      assert.throws(() => node("bad", ["relay", "shard" as UnitKind]), /one or more of relay, partition, slot, room/);

      const api = node("api", ["relay"]);
      const full = node("full");
      await api.start();
      assert.deepEqual(api.units, ["relay"]);
      let owners = await leaseOwners(store, keys);
      assert.deepEqual(tally(owners.relay), { api: 256 }, "alone, the API node relays every bucket");
      assert.deepEqual(tally(owners.partition), { "": 8 }, "and takes no partition");
      assert.deepEqual(tally(owners.slot), { "": 256 }, "and no slot");
      assert.ok(logs.api!.some((l) => /joined taking relay units only: 256 relay, 0 partition, 0 slot, 0 room/.test(l)), logs.api!.join("\n"));
      for (const k of ["partition", "slot", "room"]) {
        assert.equal(logs.api!.filter((l) => l.includes(`WARNING: no live node takes ${k} units`)).length, 1, `said once: no node takes ${k}`);
      }

      await full.start(); // takes every partition and slot, and the relay buckets nobody else... none yet: api holds them
      await api.tick(); // gives up the relay buckets the assignment moved to full
      await full.tick(); // takes them
      owners = await leaseOwners(store, keys);
      assert.deepEqual(tally(owners.relay), { api: 128, full: 128 }, "two nodes take relay: 128 each");
      assert.deepEqual(tally(owners.partition), { full: 8 });
      assert.deepEqual(tally(owners.slot), { full: 256 });
      assert.deepEqual(api.ownedUnits("partition"), []);
      assert.equal(full.ownedUnits("slot").length, 256);
      await api.tick();
      assert.equal(logs.api!.filter((l) => /partition units are taken again \(by 1 live node/.test(l)).length, 1, logs.api!.join("\n"));
      const listed = await api.nodes();
      assert.deepEqual(listed.map((n) => [n.nodeId, n.units, n.owned]), [
        ["api", ["relay"], { relayBuckets: 128, partitions: 0, slots: 0, rooms: 0 }],
        ["full", ["relay", "partition", "slot", "room"], { relayBuckets: 128, partitions: 8, slots: 256, rooms: ROOM_UNIT_COUNT }],
      ]);

      await full.stop(); // hands everything over
      await api.tick();
      owners = await leaseOwners(store, keys);
      assert.deepEqual(tally(owners.relay), { api: 256 });
      assert.deepEqual(tally(owners.partition), { "": 8 }, "the API node does not take the partitions it was left");
      assert.deepEqual(tally(owners.slot), { "": 256 });
      assert.equal(logs.api!.filter((l) => l.includes("WARNING: no live node takes partition units")).length, 2, "said again when it happened again");

      const worker = node("worker", ["partition", "slot"]);
      await worker.start();
      await api.tick();
      owners = await leaseOwners(store, keys);
      assert.deepEqual(tally(owners.relay), { api: 256 }, "the worker takes no relay bucket");
      assert.deepEqual(tally(owners.partition), { worker: 8 });
      assert.deepEqual(tally(owners.slot), { worker: 256 });
      await worker.stop();
      await api.stop();
    });
  });
}

describe("node roles with real server processes: an API node and a worker node", { timeout: 180_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  const procs: ServerProcess[] = [];
  const clients: AdminClient[] = [];

  const connect = (p: ServerProcess) => {
    const c = connectAdmin({
      endpoint: p.endpoint, caPem: readFileSync(pki.ca.certPath, "utf8"), certPem: readFileSync(pki.admin.certPath, "utf8"),
      keyPem: readFileSync(pki.admin.keyPath, "utf8"), deadlineMs: 5000,
    });
    clients.push(c);
    return c;
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-node-roles-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    for (const [id, units] of [["api", "relay"], ["worker", "partition,slot"]] as const) {
      procs.push(await startServerProcess({
        redisAddr: redis.addr, pki, auditLog: path.join(dir, `audit-${id}.log`), metricsListen: "127.0.0.1:0",
        extraArgs: ["--node-id", id, "--cluster-units", units, "--node-listen", "off", "--data-dir", path.join(dir, id),
          "--cluster-lease-ttl", "3s", "--cluster-heartbeat-interval", "1s"],
      }));
    }
  });

  after(async () => {
    for (const c of clients) c.close();
    for (const p of procs) await p.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("ListNodes shows each node's units and what it owns; a member added through the API node gets the group in its list", async () => {
    const [apiProc, workerProc] = procs as [ServerProcess, ServerProcess];
    assert.match(apiProc.log(), /node api joined taking relay units only/);
    assert.match(workerProc.log(), /node worker joined taking partition, slot units only/);
    const api = connect(apiProc);
    // the worker joined after the API node took every bucket: wait for the assignment to settle
    let nodes: Awaited<ReturnType<AdminClient["listNodes"]>>["nodes"] = [];
    for (let i = 0; i < 100; i++) {
      nodes = (await api.listNodes({})).nodes;
      const w = nodes.find((n) => n.nodeId === "worker");
      if (w?.owned?.partitions === PARTITIONS && w.owned.slots === SLOT_COUNT) break;
      await sleep(200);
    }
    assert.deepEqual(nodes.map((n) => [n.nodeId, n.units, n.owned]), [
      ["api", ["relay"], { relayBuckets: 256, partitions: 0, slots: 0, rooms: 0 }],
      ["worker", ["partition", "slot"], { relayBuckets: 0, partitions: PARTITIONS, slots: SLOT_COUNT, rooms: 0 }],
    ]);

    const tenant = randomUUID();
    const owner = randomUUID();
    const user = randomUUID();
    const { group } = await api.createGroup({ tenant, group: "", owner, members: [randomUUID()] });
    // the API node's snapshot of the user, loaded before any row of theirs exists, and held from now on
    const early = await api.listConversations({ tenant, user, limit: 50, cursor: "" });
    assert.equal(early.entries.length, 0);
    await api.addMembers({ tenant, group, users: [user], dryRun: false });
    // the API node relays the CONTROL record; only the worker consumes the partitions and writes
    // the user's conversation list. The worker's stored write moves the user's version, and the
    // API node's held snapshot re-reads the rows (docs/conversation-list.md, "Several nodes")
    const worker = connect(workerProc);
    let listed: string[] = [];
    for (let i = 0; i < 100 && !listed.includes(group); i++) {
      listed = (await worker.listConversations({ tenant, user, limit: 50, cursor: "" })).entries.map((e) => e.row?.group ?? "");
      if (!listed.includes(group)) await sleep(200);
    }
    assert.deepEqual(listed, [group], `the added member's list holds the group; worker log:\n${workerProc.log()}\napi log:\n${apiProc.log()}`);
    let viaApi: string[] = [];
    for (let i = 0; i < 50 && !viaApi.includes(group); i++) {
      viaApi = (await api.listConversations({ tenant, user, limit: 50, cursor: "" })).entries.map((e) => e.row?.group ?? "");
      if (!viaApi.includes(group)) await sleep(200);
    }
    assert.deepEqual(viaApi, [group], "the API node's held snapshot shows the worker's row");
    // what each node projected (its /metrics): the API node nothing on either path, the worker the records
    const projected = async (p: ServerProcess) => {
      const m = await scrape(p.metricsUrl!);
      const v = (name: string) => m.samples.get(name) ?? 0;
      return {
        session: v('qim_session_projection_records_total{path="durable"}') + v('qim_session_projection_records_total{path="low_latency"}'),
        list: v("qim_conversation_list_low_latency_records_total") + v("qim_conversation_list_consumed_records_total"),
      };
    };
    assert.deepEqual(await projected(apiProc), { session: 0, list: 0 }, "the API node projects nothing");
    const w = await projected(workerProc);
    assert.ok(w.session >= 1 && w.list >= 1, `the worker projected the add's CONTROL record: ${JSON.stringify(w)}`);
    // the API node, up first, said that nobody took partitions and slots, then that they are taken
    for (const k of ["partition", "slot"]) {
      assert.match(apiProc.log(), new RegExp(`WARNING: no live node takes ${k} units[^]*${k} units are taken again \\(by 1 live node`));
    }
  });
});
