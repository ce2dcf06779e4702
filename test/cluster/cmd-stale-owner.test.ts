/**
 * CMD intents across a slot move between two real server processes on one redis-server (issue 23):
 * a PushIntents sent to the previous owner of the recipient's slot answers STALE_OWNER, the
 * CmdRouter re-resolves and retries exactly once, and the intent lands at the new owner — counted
 * on both receivers (qim_node_rpc_served_total) and found in the new owner's pending view or, once
 * its flush ran, its durable row. A registry that keeps naming the stale node gets exactly two
 * attempts (the first and the one retry), then false. The expected owners come from the registry
 * as the admin API reports it (ClusterService.GetOwner), never from the router under test.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { KeySpace, parseUuid, RedisCmdStateStore, RedisStore, slotOfUser, type CmdSyncApi } from "../../core/index.js";
import { NodePeers } from "../../server/routing/client.js";
import { NodeRouter } from "../../server/routing/router.js";
import { CmdRouter } from "../../server/routing/cmd-router.js";
import type { OwnershipView } from "../../server/routing/ownership.js";
import { CLIENT_NAMES, writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { LEASE_TTL_MS, HEARTBEAT_INTERVAL_MS, NODE_CHILD, until, counter } from "./processes.js";

describe("CMD PushIntents after a slot move (issue 23)", { timeout: 300_000 }, () => {
  let dir: string;
  let redis: RedisServer;
  let pki: TestPkiFiles;
  const nodes: { id: string; proc: ServerProcess; admin: AdminClient }[] = [];
  let tenant: string;
  const pem = (f: string) => readFileSync(f);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-cmd-stale-"));
    redis = await startRedis();
    pki = await writeTestPki(path.join(dir, "pki"));
    tenant = randomUUID();
    for (const [id, cert] of [[CLIENT_NAMES.nodeA, pki.nodeA], [CLIENT_NAMES.nodeB, pki.nodeB]] as const) {
      const proc = await startServerProcess({
        pki, auditLog: path.join(dir, `${id}-audit.log`),
        childArgs: (port) => [NODE_CHILD, JSON.stringify({
          redisAddr: redis.addr, listen: `127.0.0.1:${port}`, metricsListen: "127.0.0.1:0", auditLog: path.join(dir, `${id}-audit.log`),
          ca: pki.ca.certPath, cert: pki.server.certPath, key: pki.server.keyPath,
          nodeId: id, nodeCert: cert.certPath, nodeKey: cert.keyPath, leaseTtlMs: LEASE_TTL_MS, heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
        })],
      });
      const admin = connectAdmin({ endpoint: proc.endpoint, caPem: pem(pki.ca.certPath), certPem: pem(pki.admin.certPath), keyPem: pem(pki.admin.keyPath) });
      nodes.push({ id, proc, admin });
    }
  });

  after(async () => {
    for (const n of nodes) n.admin.close();
    await Promise.all(nodes.map((n) => n.proc.stop()));
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const userOwner = async (user: string) => nodes[1]!.admin.getUnitOwner({ unit: { $case: "user", user: { tenant, user } } });

  const metrics = async (i: number) => (await fetch(nodes[i]!.proc.metricsUrl!)).text();
  const served = async (i: number, status: string) => counter(await metrics(i), "qim_node_rpc_served_total", { rpc: "PushIntents", status });

  it("STALE_OWNER from the previous owner, one re-resolve and one retry, the intent lands at the new owner; a stale registry gets two attempts, then false", async () => {
    const [a, b] = [CLIENT_NAMES.nodeA, CLIENT_NAMES.nodeB];
    await until("two live nodes owning slots", async () => {
      const r = await nodes[0]!.admin.listNodes({});
      return r.nodes.length === 2 && r.nodes.every((n) => n.alive && (n.owned?.slots ?? 0) > 0);
    });
    const user = await until("a user on node A's slots", async () => {
      const u = randomUUID();
      return (await userOwner(u)).nodeId === a ? u : null;
    });
    const slot = slotOfUser(parseUuid(tenant, "tenant"), parseUuid(user, "user"));
    const addressOfA = (await nodes[0]!.admin.listNodes({})).nodes.find((n) => n.nodeId === a)!.address;
    let lie = false;
    const view: OwnershipView = {
      nodeId: "test-caller",
      owns: () => false,
      tokenOf: () => null,
      ownerOf: async (kind, unit) => {
        const r = await userOwner(user);
        assert.equal(r.unit, unit);
        // `lie`: a registry that still names A, to show that the retry happens once, not again and again
        if (lie) return { kind, unit, nodeId: a, address: addressOfA, token: 0, alive: true };
        return { kind, unit, nodeId: r.nodeId || null, address: r.address || null, token: Number(r.token), alive: r.alive };
      },
    };
    const peers = new NodePeers({ tls: { caPem: pem(pki.ca.certPath), certPem: pem(pki.nodeB.certPath), keyPem: pem(pki.nodeB.keyPath) } });
    const notANode = () => Promise.reject(new Error("not a node"));
    const unused = { kick: notANode, describeUser: notANode, pushIntents: notANode, cmdSync: notANode, cmdAck: notANode, cmdPending: notANode, cmdFlush: notANode, deliver: notANode, pushUserEvents: notANode, pushSessionChanges: notANode, listConnections: notANode, kickConnections: notANode, rooms: notANode };
    // a resolved owner is kept a minute, so that the call after the move still goes to A
    const router = new NodeRouter({ ownership: view, local: unused, peers, ownerCacheMs: 60_000 });
    // the caller owns no slot: its own buffer must never be asked
    const api = { acceptIntent: () => { throw new Error("the caller owns no slot"); } } as unknown as CmdSyncApi;
    const cmd = new CmdRouter({ api, ownership: view, router, slotOf: (t, u) => slotOfUser(t, u), nodes: async () => [] });
    const intent = (seq: number, channelId: string) => ({
      tenant: parseUuid(tenant, "tenant"), channel: { channelId, channelType: 2 }, messageSeq: seq, activeAt: 1_000 + seq,
      userReadSeqs: new Map([[parseUuid(user, "user"), 0]]),
    });
    const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    const states = new RedisCmdStateStore(store, new KeySpace("qim"));
    try {
      // the first intent goes to A (and leaves A in the router's owner cache)
      assert.equal(await cmd.pushIntent(intent(1, "stale-a____cmd")), true);
      const before = { aStale: await served(0, "STALE_OWNER"), aOk: await served(0, "OK"), bStale: await served(1, "STALE_OWNER"), bOk: await served(1, "OK") };
      assert.equal(before.aOk, 1, "A accepted the first");

      assert.equal((await nodes[1]!.admin.drainNode({ nodeId: a })).changed, true);
      await until("the slot owned by node B", async () => (await userOwner(user)).nodeId === b);

      // the cache still names A: A answers STALE_OWNER, the re-resolve names B, the one retry lands there
      assert.equal(await cmd.pushIntent(intent(2, "stale-b____cmd")), true);
      assert.equal(await served(0, "STALE_OWNER") - before.aStale, 1, "A refused once");
      assert.equal(await served(0, "OK") - before.aOk, 0, "A took nothing more");
      assert.equal(await served(1, "OK") - before.bOk, 1, "B accepted the one retry");
      assert.equal(await served(1, "STALE_OWNER") - before.bStale, 0);
      // the intent is at B: in its pending view (last seq 2), or already flushed by B (its durable row: active at 1002, last seq 2)
      const landed = await until("the intent at B", async () => {
        const p = await router.cmdPending(tenant, user, slot, 100);
        if (p.owner.nodeId !== b) return null;
        const seen = p.response.views.find((v) => v.channelId === "stale-b____cmd");
        if (seen) return `pending last ${Number(seen.lastMsgSeq)}`;
        const row = await states.get(parseUuid(tenant, "tenant"), parseUuid(user, "user"), { channelId: "stale-b____cmd", channelType: 2 });
        return row ? `durable active ${row.activeAt} last ${row.lastMsgSeq}` : null;
      });
      assert.ok(landed === "pending last 2" || landed === "durable active 1002 last 2", landed);

      // a registry that keeps naming A: the first attempt and the one retry, then false
      lie = true;
      router.forget("slot", slot);
      const staleBefore = await served(0, "STALE_OWNER");
      assert.equal(await cmd.pushIntent(intent(3, "stale-c____cmd")), false);
      assert.equal(await served(0, "STALE_OWNER") - staleBefore, 2, "exactly one retry");
    } finally {
      peers.close();
      await store.close();
    }
  });
});
