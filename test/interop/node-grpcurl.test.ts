/**
 * grpcurl (pinned by scripts/prerequisites.mjs) against a real node's NodeService over mTLS, with
 * the .proto source (the node listener serves no reflection: it is the engine's internal RPC):
 * a node certificate gets its answers (DescribeUser OK for a user whose slot the node owns,
 * REJECTED for a malformed user, Kick OK), an operator certificate is PERMISSION_DENIED.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startAdminServer, type AdminServer } from "../../server/node.js";
import { CLIENT_NAMES, writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { ROOT } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { CLIENT_TIMEOUT_MS, prerequisites, runClient } from "./fixture.js";

const GRPCURL_MAX_TIME_S = String(CLIENT_TIMEOUT_MS / 2 / 1000);
/** How long the single node may take to own every unit before the test fails. */
const OWN_ALL_MS = 20_000;

describe("grpcurl calls NodeService over mTLS with a node certificate", () => {
  let dir: string;
  let redis: RedisServer;
  let pki: TestPkiFiles;
  let server: AdminServer;
  let grpcurl: string;

  before(async () => {
    const found = (await prerequisites()).findGrpcurl();
    assert.ok(found, "grpcurl is not installed: run `node scripts/prerequisites.mjs test`");
    grpcurl = found;
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-node-grpcurl-"));
    redis = await startRedis();
    pki = await writeTestPki(path.join(dir, "pki"));
    const ca = readFileSync(pki.ca.certPath);
    server = await startAdminServer({
      topology: { kind: "instances", addrs: [redis.addr] },
      listen: "127.0.0.1:0", metricsListen: null, auditPath: path.join(dir, "audit.log"), auditSync: false,
      tls: { caPem: ca, certPem: readFileSync(pki.server.certPath), keyPem: readFileSync(pki.server.keyPath) },
      cluster: { nodeId: CLIENT_NAMES.nodeA, address: "", version: "test", leaseTtlMs: 2000, heartbeatIntervalMs: 300 },
      node: { listen: "127.0.0.1:0", tls: { caPem: ca, certPem: readFileSync(pki.nodeA.certPath), keyPem: readFileSync(pki.nodeA.keyPath) } },
      log: () => {},
    });
    const deadline = Date.now() + OWN_ALL_MS;
    while (server.runtime.cluster!.ownedUnits("slot").length < 256) {
      assert.ok(Date.now() < deadline, "the only node owns every slot");
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  after(async () => {
    await server?.close();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const call = (as: "nodeB" | "operator", method: string, body: object) => runClient(grpcurl, [
    "-max-time", GRPCURL_MAX_TIME_S,
    "-import-path", path.join(ROOT, "proto"), "-proto", "qim/node/v1/node.proto",
    "-cacert", pki.ca.certPath, "-cert", pki[as].certPath, "-key", pki[as].keyPath,
    "-d", JSON.stringify(body),
    server.node!.address, `qim.node.v1.NodeService/${method}`,
  ]);

  it("DescribeUser with a node certificate: OK from the owner, with its token; REJECTED for a malformed user", async () => {
    const tenant = randomUUID();
    const user = randomUUID();
    const r = await call("nodeB", "DescribeUser", { tenant, user, from_node_id: CLIENT_NAMES.nodeB });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { status: string; slot?: number; owner: { nodeId: string; token: string } };
    assert.equal(out.status, "NODE_STATUS_OK");
    assert.equal(out.owner.nodeId, CLIENT_NAMES.nodeA);
    const owner = await server.runtime.cluster!.ownerOf("slot", out.slot ?? 0);
    assert.equal(Number(out.owner.token), owner.token);

    const bad = await call("nodeB", "DescribeUser", { tenant, user: "nope" });
    assert.equal(bad.code, 0, bad.stderr);
    assert.equal((JSON.parse(bad.stdout) as { status: string }).status, "NODE_STATUS_REJECTED");
  });

  it("Kick with a node certificate: OK for buckets the node owns, REJECTED for one out of range", async () => {
    const r = await call("nodeB", "Kick", { buckets: [0, 17, 255] });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { status: string; kicked: number[] };
    assert.equal(out.status, "NODE_STATUS_OK");
    assert.deepEqual(out.kicked, [0, 17, 255]);
    const bad = await call("nodeB", "Kick", { buckets: [256] });
    assert.equal((JSON.parse(bad.stdout) as { status: string }).status, "NODE_STATUS_REJECTED");
  });

  it("an operator certificate is PERMISSION_DENIED", async () => {
    const r = await call("operator", "DescribeUser", { tenant: randomUUID(), user: randomUUID() });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Code: PermissionDenied/);
    assert.match(r.stderr, /only node certificates/);
  });
});
