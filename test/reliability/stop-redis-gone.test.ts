/**
 * Issue 22: after SIGTERM the node exits in bounded time even when its Redis is gone (it did not
 * within 15 s). The real server process on a real redis-server; the redis-server is SIGKILLed
 * (connections refused) or SIGSTOPped (there, answering nothing: every wait on it runs into its
 * timeout, 22 s of them before the stop deadline), then the server is sent SIGTERM and must exit
 * on its own, before this test's own timeout, with no SIGKILL from the test.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { ok, run } from "../e2e/qimctl.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

describe("SIGTERM with Redis gone", { timeout: 180_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  const redises: RedisServer[] = [];
  const servers: ServerProcess[] = [];

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-stop-"));
    pki = await writeTestPki(path.join(dir, "pki"));
  });

  after(async () => {
    for (const s of servers) await s.stop();
    for (const r of redises) {
      try { process.kill(r.pid, "SIGCONT"); } catch { /* gone */ }
      await r.stop();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A server on its own redis-server, with a group created (state on Redis, the node's units held). */
  async function stack(name: string) {
    const redis = await startRedis();
    redises.push(redis);
    const port = await freePort();
    const server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, `${name}-audit.log`), port });
    servers.push(server);
    const context = path.join(dir, `${name}-context.json`);
    writeFileSync(context, JSON.stringify({ endpoint: `localhost:${port}`, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant: randomUUID() }));
    ok(await run(["group", "create", "--owner", randomUUID()], { context }), "group create");
    return { redis, server };
  }

  it("redis-server SIGKILLed: the server exits on its own", async () => {
    const { redis, server } = await stack("killed");
    await redis.kill9();
    server.signal("SIGTERM");
    const end = await server.exited;
    assert.equal(end.signal, null, `exited by itself (code ${end.code})`);
    assert.match(server.log(), /SIGTERM: shutting down/);
  });

  it("redis-server stopped (answering nothing): the stop drops its Redis connections at the deadline and the server exits on its own", async () => {
    const { redis, server } = await stack("stopped");
    process.kill(redis.pid, "SIGSTOP");
    server.signal("SIGTERM");
    const end = await server.exited;
    assert.equal(end.signal, null, `exited by itself (code ${end.code})`);
    assert.match(server.log(), /stop: Redis did not let the stop finish within \d+ ms: dropping its connections/);
  });
});
