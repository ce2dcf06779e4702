import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startAdminServer, type AdminServer } from "../../admin-api/server.js";
import { classifyUnavailable, needsCertificateProbe } from "../../cli/exit-codes.js";
import { serverRefusesCertificate } from "../../cli/tls-probe.js";
import { testPki, type TestPki } from "../certs/fixture.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";

describe("TLS refusal probe against the real admin server", () => {
  let pki: TestPki;
  let redis: RedisServer;
  let server: AdminServer;
  let dir: string;
  before(async () => {
    pki = await testPki();
    redis = await startRedis();
    dir = await mkdtemp(join(tmpdir(), "qim-probe-"));
    server = await startAdminServer({
      topology: { kind: "instances", addrs: [redis.addr] }, listen: "127.0.0.1:0", metricsListen: null,
      auditPath: join(dir, "audit.log"), tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem }, log: () => {},
    });
  });
  after(async () => {
    await server?.close();
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("says refused for another CA's, an expired and a not-yet-valid certificate, and not for a valid one", async () => {
    const endpoint = `localhost:${server.port}`;
    for (const who of ["otherCaAdmin", "expired", "notYetValid"] as const) {
      assert.equal(await serverRefusesCertificate(endpoint, { caPem: pki.ca.certPem, ...pki[who] }), true, who);
    }
    assert.equal(await serverRefusesCertificate(endpoint, { caPem: pki.ca.certPem, ...pki.viewer }), false, "a valid certificate is kept");
  });

  it("says not refused when nothing listens", async () => {
    assert.equal(await serverRefusesCertificate(`localhost:${await freePort()}`, { caPem: pki.ca.certPem, ...pki.admin }), false);
  });

  it("decides the ambiguous grpc-js wordings, and only those", () => {
    const reset = "No connection established. Last error: read ECONNRESET (2026-11-29T22:20:48.321Z).";
    const closed = "No connection established. Last error: Failed to connect (2026-11-29T22:18:30.555Z). Resolution note: ";
    const refusedConn = "No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ";
    assert.equal(needsCertificateProbe(reset, { certPem: "x" }), true);
    assert.equal(needsCertificateProbe(closed, { certPem: "x" }), true);
    assert.equal(needsCertificateProbe(refusedConn, { certPem: "x" }), false);
    assert.equal(needsCertificateProbe(reset, {}), false, "no certificate, nothing to probe");
    assert.equal(needsCertificateProbe(reset, { certPem: "x", insecure: true }), false);
    assert.equal(classifyUnavailable(reset, { certificateRefused: true }), "tls-refused");
    assert.equal(classifyUnavailable(reset, { certificateRefused: false }), "unreachable");
    assert.equal(classifyUnavailable(closed, { certificateRefused: false }), "unreachable");
    assert.equal(classifyUnavailable(closed, {}), "tls-refused");
  });
});
