import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startAdminServer, type AdminServer } from "../../server/node.js";
import { classifyUnavailable, GRPC_STATUS, needsCertificateProbe, needsProtocolProbe } from "../../cli/exit-codes.js";
import { serverRefusesCertificate, serverSpeaks } from "../../cli/tls-probe.js";
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

describe("protocol probe: --insecure against a TLS server, TLS against a plaintext one (issue 24)", () => {
  let pki: TestPki;
  let redis: RedisServer;
  let tlsServer: AdminServer;
  let plainServer: AdminServer;
  let dir: string;
  before(async () => {
    pki = await testPki();
    redis = await startRedis();
    dir = await mkdtemp(join(tmpdir(), "qim-protocol-probe-"));
    const common = { topology: { kind: "instances" as const, addrs: [redis.addr] }, listen: "127.0.0.1:0", metricsListen: null, log: () => {} };
    tlsServer = await startAdminServer({ ...common, auditPath: join(dir, "tls.log"), tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem } });
    plainServer = await startAdminServer({ ...common, auditPath: join(dir, "plain.log"), insecureDev: true });
  });
  after(async () => {
    await tlsServer?.close();
    await plainServer?.close();
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the TLS server speaks TLS and not h2c; the --insecure-dev server the reverse; nothing listening speaks neither", async () => {
    const tls = `localhost:${tlsServer.port}`;
    const plain = `localhost:${plainServer.port}`;
    const none = `localhost:${await freePort()}`;
    assert.deepEqual([await serverSpeaks(tls, "tls"), await serverSpeaks(tls, "h2c")], [true, false]);
    assert.deepEqual([await serverSpeaks(plain, "tls"), await serverSpeaks(plain, "h2c")], [false, true]);
    assert.deepEqual([await serverSpeaks(none, "tls"), await serverSpeaks(none, "h2c")], [false, false]);
  });

  it("probes only failures that never connected and name no other cause", () => {
    const neverPicked = "Deadline exceeded after 15.000s,name resolution: 0.035s,Waiting for LB pick";
    const slowAnswer = "Deadline exceeded after 15.001s,remote_addr=127.0.0.1:7443";
    const closed = "No connection established. Last error: Failed to connect (2026-12-02T09:06:20.800Z). Resolution note: ";
    const wrongVersion = "No connection established. Last error: Error: 800CA26D717F0000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/openssl/ssl/record/ssl3_record.c:350: .";
    const refused = "No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ";
    const unknownHost = "Name resolution failed for target dns:nosuchhost.invalid:7443";
    assert.equal(needsProtocolProbe(GRPC_STATUS.DEADLINE_EXCEEDED, neverPicked, { insecure: true }), true);
    assert.equal(needsProtocolProbe(GRPC_STATUS.DEADLINE_EXCEEDED, slowAnswer, { insecure: true }), false, "a connected, slow server is not probed");
    assert.equal(needsProtocolProbe(GRPC_STATUS.UNAVAILABLE, closed, { insecure: true }), true);
    assert.equal(needsProtocolProbe(GRPC_STATUS.UNAVAILABLE, wrongVersion, {}), true);
    assert.equal(needsProtocolProbe(GRPC_STATUS.UNAVAILABLE, refused, { insecure: true }), false);
    assert.equal(needsProtocolProbe(GRPC_STATUS.UNAVAILABLE, unknownHost, {}), false);
    assert.equal(needsProtocolProbe(GRPC_STATUS.UNAVAILABLE, closed, { certificateRefused: true }), false, "a refused certificate is decided already");
  });
});

