/**
 * Node-to-node RPC between real engine server processes on one redis-server (issue 11):
 * - stale owner: a DescribeUser sent to the previous owner of a user's slot after the slot moved
 *   (drain) answers STALE_OWNER with the new owner as its hint, and the router's one re-resolve
 *   reaches the new owner, which answers OK with the registry's token;
 * - REJECTED is final (no retry);
 * - the relay kick forwarder: a commit made on a node that does not own its bucket is kicked to
 *   the owner (the forwarded count on the committing node, the served Kicks on the owner);
 * - authorisation both ways: an operator certificate may not call NodeService, a node
 *   certificate may call no admin RPC.
 * The expected owners and tokens come from the registry as the admin API reports it
 * (ClusterService.GetOwner), never from the router under test.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { commitBucket, parseUuid } from "../../core/index.js";
import { NodeServiceClient, NodeStatus } from "../../admin-api/gen/qim/node/v1/node.js";
import { NodePeers } from "../../server/routing/client.js";
import { NodeRouter } from "../../server/routing/router.js";
import type { OwnershipView, UnitKind, UnitOwnerView } from "../../server/routing/ownership.js";
import { CLIENT_NAMES, writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { LEASE_TTL_MS, HEARTBEAT_INTERVAL_MS, NODE_CHILD, until, counter } from "./processes.js";

describe("node-to-node RPC between server processes", () => {
  let dir: string;
  let redis: RedisServer;
  let pki: TestPkiFiles;
  const nodes: { id: string; proc: ServerProcess; admin: AdminClient }[] = [];
  let tenant: string;
  const pem = (f: string) => readFileSync(f);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-node-rpc-"));
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

  /** The registry's owner of a unit, as node B's admin API reports it. */
  const registryOwner = async (kind: UnitKind, unit: number): Promise<UnitOwnerView> => {
    const req = kind === "slot" ? null : kind === "partition" ? { $case: "partition" as const, partition: unit } : { $case: "bucket" as const, bucket: unit };
    if (!req) throw new Error("slots are asked by user");
    const r = await nodes[1]!.admin.getUnitOwner({ unit: req });
    return { kind, unit, nodeId: r.nodeId || null, address: r.address || null, token: Number(r.token), alive: r.alive };
  };
  const userOwner = async (user: string) => nodes[1]!.admin.getUnitOwner({ unit: { $case: "user", user: { tenant, user } } });

  const metrics = async (i: number) => (await fetch(nodes[i]!.proc.metricsUrl!)).text();

  it("both nodes register and take a share of every kind of unit", async () => {
    const listed = await until("two live nodes owning slots", async () => {
      const r = await nodes[0]!.admin.listNodes({});
      return r.nodes.length === 2 && r.nodes.every((n) => n.alive && (n.owned?.slots ?? 0) > 0 && (n.owned?.relayBuckets ?? 0) > 0) ? r : null;
    });
    assert.deepEqual(listed.nodes.map((n) => n.nodeId).sort(), [CLIENT_NAMES.nodeA, CLIENT_NAMES.nodeB].sort());
    for (const n of listed.nodes) assert.match(n.address, /^localhost:\d+$/);
  });

  it("an operator certificate may not call NodeService; a node certificate may call no admin RPC", async () => {
    const a = (await nodes[0]!.admin.listNodes({})).nodes.find((n) => n.nodeId === CLIENT_NAMES.nodeA)!;
    const asOperator = new NodeServiceClient(a.address, grpc.credentials.createSsl(pem(pki.ca.certPath), pem(pki.operator.keyPath), pem(pki.operator.certPath)));
    const err = await new Promise<grpc.ServiceError | null>((resolve) => asOperator.describeUser({ tenant, user: randomUUID(), fromNodeId: "" }, (e) => resolve(e)));
    asOperator.close();
    assert.equal(err?.code, grpc.status.PERMISSION_DENIED, String(err));
    assert.match(err!.details, /only node certificates/);

    const asNode = connectAdmin({ endpoint: nodes[0]!.proc.endpoint, caPem: pem(pki.ca.certPath), certPem: pem(pki.nodeB.certPath), keyPem: pem(pki.nodeB.keyPath) });
    try {
      for (const call of [() => asNode.listNodes({}), () => asNode.getProjectionStatus({}), () => asNode.drainNode({ nodeId: CLIENT_NAMES.nodeA })]) {
        await assert.rejects(call(), (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && /role node may not call/.test(e.details));
      }
    } finally {
      asNode.close();
    }
  });

  it("a commit on a bucket owned by the other node is kicked to that owner", async () => {
    // a group whose bucket node B owns, committed through node A's admin API
    const before = await metrics(0);
    let sent = 0;
    for (let i = 0; i < 40 && sent < 5; i++) {
      const group = randomUUID();
      const owner = randomUUID();
      const bucket0 = commitBucket(parseUuid(tenant, "tenant"), parseUuid(group, "group"));
      if ((await nodes[0]!.admin.getUnitOwner({ unit: { $case: "bucket", bucket: bucket0 } })).nodeId !== CLIENT_NAMES.nodeB) continue;
      await nodes[0]!.admin.createGroup({ tenant, group, owner, members: [] });
      await nodes[0]!.admin.sendMessage({ tenant, group, sender: owner, text: `kick ${i}`, clientMessageId: "", mentions: [] });
      sent++;
    }
    assert.ok(sent >= 1, "found groups on node B's buckets");
    const forwarded = await until("node A forwarded the kicks", async () => {
      const text = await metrics(0);
      const n = counter(text, "qim_relay_kicks_forwarded_total") - counter(before, "qim_relay_kicks_forwarded_total");
      if (n >= sent) return n;
      throw new Error(`forwarded ${n} of ${sent}; node A: ${text.split("\n").filter((l) => /^qim_(node_rpc|relay_kicks)/.test(l)).join("; ")}`);
    });
    assert.ok(forwarded >= sent);
    assert.ok(counter(await metrics(1), "qim_node_rpc_served_total", { rpc: "Kick", status: "OK" }) >= 1);
  });

  it("stale owner: after a drain the previous owner answers STALE_OWNER and the router's one retry reaches the new owner", async () => {
    const [a, b] = [CLIENT_NAMES.nodeA, CLIENT_NAMES.nodeB];
    // a user whose slot node A owns now (the registry says so)
    const user = await until("a user on node A's slots", async () => {
      const u = randomUUID();
      return (await userOwner(u)).nodeId === a ? u : null;
    });
    const before = await userOwner(user);

    // the caller: a router whose owner look-ups go to the registry through the admin API, and
    // that keeps a resolved owner for a minute (so that its second call still goes to A)
    const view: OwnershipView = {
      nodeId: "test-caller",
      owns: () => false,
      tokenOf: () => null,
      ownerOf: async (kind, unit) => {
        if (kind !== "slot") return registryOwner(kind, unit);
        const r = await userOwner(user);
        assert.equal(r.unit, unit);
        return { kind, unit, nodeId: r.nodeId || null, address: r.address || null, token: Number(r.token), alive: r.alive };
      },
    };
    const peers = new NodePeers({ tls: { caPem: pem(pki.ca.certPath), certPem: pem(pki.nodeB.certPath), keyPem: pem(pki.nodeB.keyPath) } });
    const notANode = () => Promise.reject(new Error("not a node"));
    const unused = { kick: notANode, describeUser: notANode, pushIntents: notANode, cmdSync: notANode, cmdAck: notANode, cmdPending: notANode, cmdFlush: notANode, deliver: notANode, pushUserEvents: notANode, pushSessionChanges: notANode, listConnections: notANode, kickConnections: notANode, rooms: notANode };
    const router = new NodeRouter({ ownership: view, local: unused, peers, ownerCacheMs: 60_000 });
    try {
      const first = await router.describeUser(tenant, user, before.unit);
      assert.equal(first.attempts, 1);
      assert.equal(first.owner.nodeId, a);
      assert.equal(first.response.status, NodeStatus.NODE_STATUS_OK);
      assert.equal(first.response.owner?.nodeId, a);
      assert.equal(Number(first.response.owner?.token), Number(before.token));

      const servedBefore = counter(await metrics(0), "qim_node_rpc_served_total", { rpc: "DescribeUser", status: "STALE_OWNER" });
      const drained = await nodes[1]!.admin.drainNode({ nodeId: a });
      assert.equal(drained.changed, true);
      const moved = await until("the slot owned by node B", async () => {
        const r = await userOwner(user);
        return r.nodeId === b ? r : null;
      });
      assert.ok(Number(moved.token) > Number(before.token), `token ${moved.token} > ${before.token}`);

      // asked directly, A refuses and names B
      const direct = await peers.at(before.address).describeUser({ tenant, user, fromNodeId: "test" });
      assert.equal(direct.status, NodeStatus.NODE_STATUS_STALE_OWNER);
      assert.equal(direct.owner?.nodeId, b);

      // through the router: its cached owner is still A; A answers STALE_OWNER, the retry reaches B
      const second = await router.describeUser(tenant, user, before.unit);
      assert.equal(second.attempts, 2);
      assert.equal(second.owner.nodeId, b);
      assert.equal(second.response.status, NodeStatus.NODE_STATUS_OK);
      assert.equal(second.response.owner?.nodeId, b);
      assert.equal(Number(second.response.owner?.token), Number(moved.token));
      const servedAfter = counter(await metrics(0), "qim_node_rpc_served_total", { rpc: "DescribeUser", status: "STALE_OWNER" });
      assert.equal(servedAfter - servedBefore, 2, "A answered STALE_OWNER to the direct call and to the router's first attempt");

      // REJECTED is final: one call, no retry
      const rejectedBefore = counter(await metrics(1), "qim_node_rpc_served_total", { rpc: "DescribeUser", status: "REJECTED" });
      await assert.rejects(router.describeUser(tenant, "not-a-uuid", before.unit), /rejected the DescribeUser/);
      assert.equal(counter(await metrics(1), "qim_node_rpc_served_total", { rpc: "DescribeUser", status: "REJECTED" }) - rejectedBefore, 1);
    } finally {
      peers.close();
    }
  });
});
