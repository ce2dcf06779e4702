/**
 * The CMD sync HTTP API's error statuses (issue 13), with curl — a client nobody here wrote —
 * against a REAL server process (bin/qim-admin-server.js, a cluster node with its node service and
 * sync.listen) on its own redis-server:
 *
 * - bad input stays WuKongIM's HTTP 400 `{"msg", "status": 400}`, with no Retry-After;
 * - Redis hung (SIGSTOP) → 503 with Retry-After and `{"msg", "status": 503, "code": "UNAVAILABLE"}`,
 *   and once it runs again (SIGCONT) the same request, retried, answers 200;
 * - the user's slot lease taken by another node id with the cluster's own scripts (a node the test
 *   registers and heartbeats, whose node address nobody listens on) → 503 + Retry-After with a
 *   retryable code; once that node stops beating, its lease lapses, the server takes the slot
 *   back and the retried request answers 200.
 *
 * Plus the mapping of a failure that is no domain error (a bug): 500 with code INTERNAL, the
 * request id and no stack. The expected statuses and bodies are written here by hand.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { cmdHttpError, CMD_HTTP_RETRY_AFTER_S } from "../../server/listeners/app-http/cmd-http.js";
import { issueClientCert } from "../../certs/pki.js";
import { callScript, drainingKey, KeySpace, newUuid, nodesKey, RedisStore, slotOfUser, unitLeaseKey, unitsKey } from "../../core/index.js";
import { testPki, writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";
import { sleep } from "../reliability/common.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { runClient } from "./fixture.js";

const NODE_ID = "http-n1";
const GHOST = "ghost-node";
const LEASE_TTL_MS = 3000;
const HEARTBEAT_MS = 1000;
/** curl's own bound: a request may take the server's Redis command timeout (5 s) before its 503. */
const CURL_MAX_TIME_S = "20";
/** How many times a client retries (each after Retry-After) before the test gives up. */
const MAX_RETRIES = 60;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

describe("CMD sync HTTP errors: 400 for bad input, 503 + Retry-After for retryable failures (curl, real server process)", { timeout: 300_000 }, () => {
  let dir: string;
  let files: TestPkiFiles;
  let redis: RedisServer;
  let store: RedisStore;
  let server: ServerProcess;
  let syncUrl: string;
  let service: { cert: string; key: string };
  const tenant = newUuid();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-cmd-http-errors-"));
    files = await writeTestPki(dir);
    const pki = await testPki();
    const svc = issueClientCert(pki.ca, { name: "app-1", role: "service" });
    service = { cert: path.join(dir, "service.crt"), key: path.join(dir, "service.key") };
    writeFileSync(service.cert, svc.certPem);
    writeFileSync(service.key, svc.keyPem, { mode: 0o600 });
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    server = await startServerProcess({
      redisAddr: redis.addr, pki: files, auditLog: path.join(dir, "audit.log"),
      extraArgs: [
        "--node-id", NODE_ID, "--data-dir", path.join(dir, "data"),
        "--cluster-lease-ttl", `${LEASE_TTL_MS}ms`, "--cluster-heartbeat-interval", `${HEARTBEAT_MS}ms`,
        "--node-listen", "127.0.0.1:0", "--node-tls-cert", files.nodeA.certPath, "--node-tls-key", files.nodeA.keyPath,
        "--sync-listen", "127.0.0.1:0", "--sync-tenant", tenant,
      ],
    });
    const line = await server.waitForLog(/CMD sync HTTP API on https:\/\/127\.0\.0\.1:\d+/);
    syncUrl = `https://localhost:${/:(\d+) /.exec(line.slice(line.indexOf("https://")))![1]}`;
  });

  after(async () => {
    try {
      process.kill(redis.pid, "SIGCONT");
    } catch {
      // not stopped, or gone
    }
    await server?.stop();
    await store?.close();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** curl -X POST with a service certificate; the status, the response headers (lower-case names) and the body. */
  async function post(p: string, body: string): Promise<Answer> {
    const headersFile = path.join(dir, `headers-${randomUUID()}.txt`);
    const ran = await runClient("curl", [
      "-sS", "--max-time", CURL_MAX_TIME_S, "--cacert", files.ca.certPath, "--cert", service.cert, "--key", service.key,
      "-H", "content-type: application/json", "-X", "POST", "--data-binary", body, "-D", headersFile, "-w", "\n%{http_code}", `${syncUrl}${p}`,
    ]);
    assert.equal(ran.code, 0, `curl ${p}: exit ${ran.code}\n${ran.stderr}`);
    const nl = ran.stdout.lastIndexOf("\n");
    const headers: Record<string, string> = {};
    for (const h of readFileSync(headersFile, "utf8").split("\r\n").slice(1)) {
      const i = h.indexOf(":");
      if (i > 0) headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
    }
    rmSync(headersFile);
    return { status: Number(ran.stdout.slice(nl + 1)), headers, body: ran.stdout.slice(0, Math.max(0, nl)) };
  }

  /** A client's retry loop: POST until an answer other than 503, waiting Retry-After each time; every 503 is checked on the way. */
  async function retryUntilServed(p: string, body: string): Promise<Answer> {
    for (let i = 0; i < MAX_RETRIES; i++) {
      const a = await post(p, body);
      if (a.status !== 503) return a;
      assert.equal(a.headers["retry-after"], String(CMD_HTTP_RETRY_AFTER_S), "every 503 says when to retry");
      await sleep(Number(a.headers["retry-after"]) * 1000);
    }
    assert.fail(`${p} still 503 after ${MAX_RETRIES} retries`);
  }

  it("bad input is WuKongIM's 400 {msg, status}: no Retry-After, no extra field", async () => {
    const a = await post("/message/sync", "{not json");
    assert.equal(a.status, 400, a.body);
    assert.deepEqual(JSON.parse(a.body), { msg: "数据格式有误！", status: 400 });
    assert.equal(a.headers["retry-after"], undefined);
    const b = await post("/message/syncack", JSON.stringify({ uid: randomUUID(), last_message_seq: 0 }));
    assert.equal(b.status, 400, b.body);
    assert.deepEqual(JSON.parse(b.body), { msg: "last_message_seq不能为空！", status: 400 });
  });

  it("Redis hung (SIGSTOP): 503 + Retry-After, code UNAVAILABLE; after SIGCONT the retried sync answers 200", async () => {
    const uid = randomUUID();
    process.kill(redis.pid, "SIGSTOP");
    let refused: Answer;
    try {
      refused = await post("/message/sync", JSON.stringify({ uid, limit: 10 }));
    } finally {
      process.kill(redis.pid, "SIGCONT");
    }
    assert.equal(refused.status, 503, refused.body);
    assert.equal(refused.headers["retry-after"], String(CMD_HTTP_RETRY_AFTER_S));
    assert.equal(refused.headers["x-qim-error-code"], "UNAVAILABLE");
    const body = JSON.parse(refused.body) as { msg: string; status: number; code: string };
    assert.deepEqual(Object.keys(body), ["msg", "status", "code"]);
    assert.equal(body.status, 503);
    assert.equal(body.code, "UNAVAILABLE");
    assert.doesNotMatch(body.msg, /\n\s+at /, "no stack");
    const served = await retryUntilServed("/message/sync", JSON.stringify({ uid, limit: 10 }));
    assert.equal(served.status, 200, served.body);
    assert.deepEqual(JSON.parse(served.body), [], "a user nobody sent to has nothing to sync");
  });

  it("the user's slot lease taken by another node id: 503 + Retry-After with a retryable code; once that node is gone the retry answers 200", async (t) => {
    const keys = new KeySpace("qim");
    const uid = newUuid();
    const slot = slotOfUser(tenant, uid);
    const lease = unitLeaseKey(keys, "slot", slot);
    const deadAddress = `127.0.0.1:${await freePort()}`;
    const beat = () => callScript(store.clientForKey(nodesKey(keys)), "heartbeat", [nodesKey(keys), drainingKey(keys), unitsKey(keys)],
      [GHOST, deadAddress, "0.0.0-ghost", Date.now(), "1", 60_000, ""]);
    // the ghost is a live node of the registry (it beats every 500 ms) whose node address nobody listens on
    await beat();
    let beating = true;
    const beater = (async () => {
      while (beating) {
        await beat();
        await sleep(500);
      }
    })();
    try {
      const held = await store.clientForKey(lease).hmget(lease, "owner", "token");
      assert.equal(held[0], NODE_ID, `the server owns slot ${slot} before the take-over`);
      const took = await callScript(store.clientForKey(lease), "acquireUnit", [lease], [held[0]!, Number(held[1]), GHOST]);
      assert.equal(took[0], 0, `the ghost took slot ${slot}: ${JSON.stringify(took)}`);

      // the server learns of the move at its next heartbeat; until then it may still answer from its own buffer
      let refused: Answer | null = null;
      for (let i = 0; i < 40 && refused === null; i++) {
        const a = await post("/message/sync", JSON.stringify({ uid, limit: 10 }));
        if (a.status !== 200) refused = a;
        else await sleep(250);
      }
      assert.ok(refused, "the server stopped serving the moved user");
      t.diagnostic(`after the take-over: ${refused.status} ${refused.body}`);
      assert.equal(refused.status, 503, refused.body);
      assert.equal(refused.headers["retry-after"], String(CMD_HTTP_RETRY_AFTER_S));
      const body = JSON.parse(refused.body) as { msg: string; status: number; code: string };
      assert.equal(body.status, 503);
      assert.ok(["UNAVAILABLE", "STALE_OWNER"].includes(body.code), `a retryable code: ${refused.body}`);
      assert.equal(refused.headers["x-qim-error-code"], body.code);
      // an ack is refused the same way, and nothing is applied
      const ack = await post("/message/syncack", JSON.stringify({ uid, last_message_seq: 3 }));
      assert.equal(ack.status, 503, ack.body);
      assert.equal(ack.headers["retry-after"], String(CMD_HTTP_RETRY_AFTER_S));
    } finally {
      beating = false;
      await beater;
    }
    // the ghost's heartbeat lapses; the server takes the slot back (a newer token) and serves the retry
    const served = await retryUntilServed("/message/sync", JSON.stringify({ uid, limit: 10 }));
    assert.equal(served.status, 200, served.body);
    const owner = await store.clientForKey(lease).hget(lease, "owner");
    assert.equal(owner, NODE_ID, "the server owns the slot again");
  });

  it("a failure that is no domain error is 500 {msg, status, code: INTERNAL} with the request id and no stack", () => {
    const e = cmdHttpError(new TypeError("cannot read properties of undefined (reading 'x')"), "req-1");
    assert.equal(e.status, 500);
    assert.deepEqual(e.body, { msg: "internal error (request req-1); see the server log", status: 500, code: "INTERNAL" });
    assert.equal(e.retryAfterS, null);
  });
});
