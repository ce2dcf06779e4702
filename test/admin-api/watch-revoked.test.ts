/**
 * A dashboard stream (ObserveService.Watch) opened before its certificate was revoked: the deny
 * list is checked per call, and Watch is one call that never ends by itself, so the server checks
 * again before every snapshot. The same for an AuditService.FollowAudit stream, before every
 * message of entries. Real redis-server, real admin server over mTLS, the deny list file changed
 * under it and reloaded (as SIGHUP does).
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { connectAdmin, errorCode, type AdminClient, type AuditEntry, type Snapshot } from "../../admin-api/client.js";
import { startAdminServer, type AdminServer } from "../../server/node.js";
import { CLIENT_NAMES, testPki, type TestPki } from "../certs/fixture.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

/** Polls `check` (25 ms apart, at most `attempts` times): a state to reach, never a duration to assert. */
async function eventually<T>(what: string, check: () => T | undefined | false, attempts = 400): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`${what}: not reached after ${attempts} polls`);
}

describe("a Watch stream whose certificate is revoked while it is open", { timeout: 60_000 }, () => {
  let redisServer: RedisServer;
  let server: AdminServer;
  let pki: TestPki;
  let dir: string;
  let denyList: string;
  const clients: AdminClient[] = [];
  const connect = (who: keyof TestPki) => {
    const c = connectAdmin({ endpoint: `localhost:${server.port}`, caPem: pki.ca.certPem, certPem: pki[who].certPem, keyPem: pki[who].keyPem, deadlineMs: 10_000 });
    clients.push(c);
    return c;
  };

  before(async () => {
    pki = await testPki();
    redisServer = await startRedis();
    dir = await mkdtemp(join(tmpdir(), "qim-watch-revoked-"));
    denyList = join(dir, "deny-list");
    await writeFile(denyList, "# revoked client certificates\n");
    server = await startAdminServer({
      topology: { kind: "instances", addrs: [redisServer.addr] },
      listen: "127.0.0.1:0",
      metricsListen: null,
      auditPath: join(dir, "audit.log"),
      tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
      denyList,
      // reloaded by the test only (as on SIGHUP), so that the revocation happens at a known point
      denyListPollMs: 0,
      log: () => {},
    });
  });

  after(async () => {
    for (const c of clients) c.close();
    await server?.close();
    await redisServer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("ends with PERMISSION_DENIED before its next snapshot, audited like a revoked call; another certificate's stream goes on", async () => {
    const fp = new X509Certificate(pki.viewer.certPem).fingerprint256;
    const got: Snapshot[] = [];
    const revoked = connect("viewer").watch({ intervalMs: 200 }, (s) => got.push(s));
    const result: { error?: grpc.ServiceError; ended: boolean } = { ended: false };
    revoked.ended.then(() => { result.ended = true; }, (err: grpc.ServiceError) => { result.error = err; result.ended = true; });
    const othersGot: Snapshot[] = [];
    const other = connect("operator").watch({ intervalMs: 200 }, (s) => othersGot.push(s));
    other.ended.catch(() => {});
    try {
      await eventually("two snapshots before the revocation", () => got.length >= 2);
      const before = (await server.audit.tail(1000)).length;

      await appendFile(denyList, `${fp}  # CN=${CLIENT_NAMES.viewer}, OU=viewer\n`);
      await server.reloadDenyList("test");
      const seen = got.length;
      await eventually("the stream ended", () => result.ended);

      assert.ok(result.error, "the stream ends with an error, not cleanly");
      assert.equal(result.error.code, grpc.status.PERMISSION_DENIED, result.error.details);
      assert.equal(errorCode(result.error), "PERMISSION_DENIED");
      assert.equal(result.error.details, `permission denied: certificate revoked (SHA-256 ${fp} of ${CLIENT_NAMES.viewer} is on the server's deny list)`);
      // at most the one snapshot that may have been on its way when the list was reloaded
      assert.ok(got.length <= seen + 1, `snapshots after the revocation: ${got.length - seen}`);
      await eventually("the watcher is gone on the server", () => server.observer.active === 1);

      const refusals = (await server.audit.tail(1000)).slice(before).filter((e) => e.fingerprint === fp);
      assert.equal(refusals.length, 1, JSON.stringify(refusals));
      const [e] = refusals;
      assert.deepEqual([e!.rpc, e!.principal, e!.role, e!.result, e!.detail],
        ["/qim.admin.v1.ObserveService/Watch", CLIENT_NAMES.viewer, "viewer", "PERMISSION_DENIED", `certificate revoked: ${fp} is on the deny list`]);

      const n = othersGot.length;
      await eventually("the operator's stream still gets snapshots", () => othersGot.length >= n + 2);

      // a new stream with the revoked certificate is refused up front, as any call
      const again = connect("viewer").watch({ intervalMs: 200 }, () => assert.fail("no snapshot for a revoked certificate"));
      const err = await again.ended.then(() => undefined, (x: grpc.ServiceError) => x);
      assert.equal(err?.code, grpc.status.PERMISSION_DENIED);
    } finally {
      revoked.cancel();
      other.cancel();
    }
  });

  it("a FollowAudit stream ends with PERMISSION_DENIED before the next entries once its certificate is revoked; audited once", async () => {
    const fp = new X509Certificate(pki.admin.certPem).fingerprint256;
    const got: AuditEntry[][] = [];
    const follow = connect("admin").followAudit({ limit: 0 }, (entries) => got.push(entries));
    const result: { error?: grpc.ServiceError; ended: boolean } = { ended: false };
    follow.ended.then(() => { result.ended = true; }, (err: grpc.ServiceError) => { result.error = err; result.ended = true; });
    const operator = connect("operator");
    const tenant = "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c";
    try {
      await eventually("the first (empty) message", () => got.length >= 1);
      assert.deepEqual(got[0], [], "--limit 0: no entry before those written from now on");
      const owner = "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b";
      await operator.createGroup({ tenant, group: "", owner, members: [] });
      await eventually("the new entry is followed", () => got.flat().some((e) => e.argumentsJson.includes(owner)));
      const before = (await server.audit.tail(1000)).length;

      await appendFile(denyList, `${fp}  # CN=${CLIENT_NAMES.admin}, OU=admin\n`);
      await server.reloadDenyList("test");
      const seen = got.length;
      // the next entry written: the follower is asked again before it is sent, and refused
      await operator.createGroup({ tenant, group: "", owner: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", members: [] });
      await eventually("the follow ended", () => result.ended);
      assert.equal(result.error?.code, grpc.status.PERMISSION_DENIED, result.error?.details);
      assert.equal(got.length, seen, "no entry after the revocation");
      const refusals = (await server.audit.tail(1000)).slice(before).filter((e) => e.fingerprint === fp);
      assert.deepEqual(refusals.map((e) => [e.rpc, e.result]), [["/qim.admin.v1.AuditService/FollowAudit", "PERMISSION_DENIED"]]);
    } finally {
      follow.cancel();
    }
  });
});
