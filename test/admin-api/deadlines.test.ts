/**
 * Deadlines and cancellation in the pipeline (issue 25), against a real `qim-node` process and the
 * real `qimctl`: a long read (the unread audit walks every user's row hash) stops at its next step
 * when its caller's deadline passes or its caller goes away (the qimctl process SIGKILLed), instead
 * of reading the store on for nobody. The store's own counter of HSCAN calls (INFO commandstats: one
 * HSCAN per user's row hash here, each hash is small) is the independent witness of what the server
 * did; the seeded user count is the expected value of a walk that runs to its end.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { baseEnv, QIMCTL, ROOT, run } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { scrape } from "../monitoring/exposition.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";

/** Users whose row hash the audit reads: far more than a walk can read before a 0.3 s deadline (one round trip each). */
const USERS = 60_000;
const RPC = "/qim.admin.v1.ConversationListService/AuditUnread";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hex = () => randomUUID().replace(/-/g, "");

describe("a long read stops when its caller stops waiting (real qim-node, real qimctl)", { timeout: 300_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let admin: Redis;
  let server: ServerProcess;
  let context: string;

  /** The store's count of HSCAN calls so far. */
  const hscans = async (): Promise<number> => {
    const info = await admin.info("commandstats");
    return Number(/cmdstat_hscan:calls=(\d+)/.exec(info)?.[1] ?? 0);
  };
  const abandoned = async (reason: string): Promise<number> =>
    (await scrape(server.metricsUrl!)).samples.get(`qim_server_calls_abandoned_total{reason="${reason}",rpc="${RPC}"}`) ?? 0;
  /** Polls until `check` holds (a state to reach, never a duration asserted). */
  const until = async (what: string, check: () => Promise<boolean>, tries = 300) => {
    for (let i = 0; i < tries; i++) {
      if (await check()) return;
      await sleep(100);
    }
    const metrics = (await scrape(server.metricsUrl!)).text.split("\n").filter((l) => l.startsWith("qim_server_calls_abandoned")).join("\n");
    assert.fail(`${what}: not reached; the server's counters:\n${metrics || "(none)"}\nits log:\n${server.log().slice(-3000)}`);
  };
  /** The HSCAN count once it has stopped moving (equal over two reads 1 s apart). */
  const settled = async (): Promise<number> => {
    let last = await hscans();
    for (let i = 0; i < 30; i++) {
      await sleep(1000);
      const now = await hscans();
      if (now === last) return now;
      last = now;
    }
    assert.fail(`the server kept reading: ${last} HSCAN calls and counting`);
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-deadlines-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    admin = new Redis(redis.port, "127.0.0.1");
    // one row hash per user, in the list's key layout (core/conversation-list/keys.ts: qim:{uNNN}:clrows:<tenant>:<user>);
    // each holds one row with no unread, so the audit reads it and samples nothing
    const tenant = hex();
    for (let i = 0; i < USERS; i += 5_000) {
      const p = admin.pipeline();
      for (let j = i; j < Math.min(USERS, i + 5_000); j++) p.hset(`qim:{u${String(j % 1024).padStart(3, "0")}}:clrows:${tenant}:${hex()}`, hex(), "0");
      await p.exec();
    }
    server = await startServerProcess({
      redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log"), metricsListen: "127.0.0.1:0",
      // no background audit: every HSCAN the store counts is the call under test
      extraArgs: ["--conversation-list-unread-audit-interval", "off"],
    });
    context = path.join(dir, "context.json");
    writeFileSync(context, JSON.stringify({ endpoint: server.endpoint, ca: pki.ca.certPath, cert: pki.viewer.certPath, key: pki.viewer.keyPath, tenant: randomUUID() }));
  });

  after(async () => {
    await server?.stop();
    admin?.disconnect();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("its deadline passes: the client hears DEADLINE_EXCEEDED, the server counts it and reads no further", async (t) => {
    const before = await hscans();
    const r = await run(["unread", "audit", "--timeout", "0.3"], { context });
    assert.equal(r.code, 5, `exit 5 (the server did not answer in time): ${r.stderr}`);
    assert.match(r.json.message, /did not answer/);
    await until("the server counted the call abandoned by its deadline", async () => (await abandoned("deadline")) === 1);
    const read = (await settled()) - before;
    assert.ok(read < USERS, `the walk stopped short of the ${USERS} users (it read ${read})`);
    t.diagnostic(`deadline 0.3 s: the server read ${read} of ${USERS} users' rows, then stopped`);
    assert.equal(await abandoned("cancelled"), 0, "a deadline is not counted as a caller gone");
  });

  it("its caller is killed mid-walk: the server counts it cancelled and reads no further", async (t) => {
    const before = await hscans();
    const child = spawn(process.execPath, [QIMCTL, "unread", "audit", "--timeout", "600", "--output", "json"], {
      cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: context }, stdio: "ignore",
    });
    const exited = new Promise((r) => child.once("exit", r));
    // the walk is under way (a few hundred users read), then the caller dies without a word
    await until("the walk started", async () => (await hscans()) - before > 300);
    child.kill("SIGKILL");
    await exited;
    await until("the server counted the call cancelled", async () => (await abandoned("cancelled")) === 1);
    const read = (await settled()) - before;
    assert.ok(read < USERS, `the walk stopped short of the ${USERS} users (it read ${read})`);
    t.diagnostic(`caller SIGKILLed: the server read ${read} of ${USERS} users' rows, then stopped`);
  });

  it("a caller that waits gets the whole walk: every seeded user, one HSCAN each", async () => {
    const before = await hscans();
    const r = await run(["unread", "audit", "--timeout", "600"], { context, timeoutMs: 280_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(Number(r.json.usersScanned), USERS);
    assert.equal((await hscans()) - before, USERS);
    // nothing new abandoned: the first test's deadline and the second's cancel only
    assert.equal(await abandoned("deadline"), 1);
    assert.equal(await abandoned("cancelled"), 1);
  });
});
