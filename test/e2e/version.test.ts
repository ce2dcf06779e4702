/**
 * Issue 24: `qimctl version` prints the client's version and the server's
 * (ObserveService.GetServerInfo), through the real CLI against a real server on a real
 * redis-server. Expected values come from package.json and this process's Node.js, read here; the
 * server process's node id from another RPC (`cluster nodes`, answeredBy). The viewer role may
 * call it; --client connects to nothing; an unreachable server still prints the client part and
 * exits 5.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { freePort } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { ok, ROOT, run, startE2eServer, writeContext, type E2eServer } from "./qimctl.js";

const PACKAGE_VERSION = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const CLIENT = { version: PACKAGE_VERSION, node: process.version, platform: `${process.platform}-${process.arch}` };

describe("qimctl version (issue 24)", { timeout: 120_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  let viewer: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-version-"));
    e2e = await startE2eServer(dir);
    viewer = writeContext(e2e, dir, randomUUID(), "viewer");
  });
  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("as a viewer: the client's and the server's versions (an in-process server is no cluster node: nodeId null)", async () => {
    const v = ok(await run(["version"], { context: viewer }), "version");
    assert.deepEqual(v.client, CLIENT);
    assert.equal(v.server.endpoint, e2e.endpoint);
    assert.equal(v.server.version, PACKAGE_VERSION);
    // the server runs in this test's process
    assert.equal(v.server.node, process.version);
    assert.equal(v.server.nodeId, null);
    // RFC 3339 as toISOString writes it (the instant itself is the server's clock: not asserted)
    assert.equal(v.server.startedAt, new Date(Date.parse(v.server.startedAt)).toISOString());
  });

  it("table: one line for the client, one for the server", async () => {
    const r = await run(["version"], { context: viewer, json: false });
    assert.equal(r.code, 0, r.stderr);
    const [client, server] = r.stdout.trimEnd().split("\n");
    assert.equal(client, `client:  qimctl ${PACKAGE_VERSION} (node ${process.version}, ${CLIENT.platform})`);
    assert.match(server!, new RegExp(`^server:  qimctl ${PACKAGE_VERSION.replace(/\./g, "\\.")} \\(node ${process.version.replace(/\./g, "\\.")}, started \\S+Z\\) at ${e2e.endpoint}$`));
  });

  it("--client connects to nothing: exit 0 with an endpoint where nothing listens", async () => {
    const v = ok(await run(["version", "--client", "--endpoint", `localhost:${await freePort()}`, "--insecure"]), "version --client");
    assert.deepEqual(v, { client: CLIENT, server: null });
  });

  it("a server that cannot be reached: the client part on stdout, server null, exit 5 with the reason on stderr", async () => {
    const endpoint = `localhost:${await freePort()}`;
    const r = await run(["version", "--endpoint", endpoint, "--insecure"]);
    assert.equal(r.code, 5, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { client: CLIENT, server: null });
    const err = (JSON.parse(r.stderr) as { error: { code: string; message: string } }).error;
    assert.equal(err.code, "UNAVAILABLE");
    assert.ok(err.message.startsWith(`cannot reach the server at ${endpoint}`), err.message);
    const table = await run(["version", "--endpoint", endpoint, "--insecure"], { json: false });
    assert.equal(table.code, 5);
    assert.match(table.stdout, /^client: .*\nserver:  not reached: UNAVAILABLE \(the error follows on stderr\)\n$/);
  });

  describe("a real server process (a cluster node)", () => {
    let server: ServerProcess;
    before(async () => {
      server = await startServerProcess({ redisAddr: e2e.redis.addr, pki: e2e.pki, auditLog: path.join(dir, "process-audit.log") });
    });
    after(async () => {
      await server?.stop();
    });

    it("names the node that answered, as cluster nodes does", async () => {
      const ctx = path.join(dir, "process.json");
      writeFileSync(ctx, JSON.stringify({ endpoint: server.endpoint, ca: e2e.pki.ca.certPath, cert: e2e.pki.viewer.certPath, key: e2e.pki.viewer.keyPath, tenant: randomUUID() }));
      const v = ok(await run(["version"], { context: ctx }), "version against the process");
      const nodes = ok(await run(["cluster", "nodes"], { context: ctx }), "cluster nodes");
      assert.equal(v.server.version, PACKAGE_VERSION);
      assert.equal(typeof nodes.answeredBy, "string");
      assert.equal(v.server.nodeId, nodes.answeredBy);
    });
  });
});
