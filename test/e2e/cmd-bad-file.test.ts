/**
 * A CMD pending file that does not decode, seen everywhere an operator looks (issue 13): a REAL
 * server process (bin/qim-admin-server.js, a cluster node with its node service) starts on a data
 * dir holding a corrupt `conversationv2/cmd_conversation_updates.json`. It must start, rename the
 * file `.bad`, and name that file — with when it was set aside — in ObserveService's snapshot (the
 * dashboard's feed), in `qimctl dashboard --output json` and its plain line, in `qimctl cmd status`
 * (table and JSON, the real CLI), in `qimctl cluster nodes`, and as the gauge
 * qim_cmd_pending_file_bad 1 on /metrics. Once the operator deletes the .bad file, the gauge reads
 * 0 and the status, the snapshot and cluster nodes no longer name it, without a restart.
 *
 * Expected values come from the test itself: the path is the one the test wrote plus ".bad", the
 * time lies between the test's clock before the spawn and after the server said it listens.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectAdmin, type AdminClient, type Snapshot } from "../../admin-api/client.js";
import { newUuid } from "../../core/index.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { ok, run } from "./qimctl.js";

const NODE_ID = "bad-n1";

describe("a CMD pending file that did not decode: status, dashboard, cluster nodes and /metrics name it (real server process)", { timeout: 240_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let server: ServerProcess;
  let client: AdminClient;
  let context: string;
  let badPath: string;
  let spawnedAtMs: number;
  let listeningAtMs: number;

  /** The gauge's value on the server's /metrics (a sample line without labels). */
  async function gauge(): Promise<number> {
    const text = await (await fetch(server.metricsUrl!)).text();
    const line = text.split("\n").find((l) => l.startsWith("qim_cmd_pending_file_bad "));
    assert.ok(line, `qim_cmd_pending_file_bad is on /metrics:\n${text.split("\n").filter((l) => l.includes("pending_file")).join("\n")}`);
    return Number(line.slice(line.lastIndexOf(" ") + 1));
  }

  /** One snapshot of ObserveService.Watch, then the stream is cancelled. */
  function oneSnapshot(): Promise<Snapshot> {
    return new Promise((resolve, reject) => {
      const s = client.watch({ intervalMs: 1000 }, (snap) => {
        s.cancel();
        resolve(snap);
      });
      s.ended.catch(reject);
    });
  }

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-cmd-bad-"));
    pki = await writeTestPki(dir);
    redis = await startRedis();
    const dataDir = path.join(dir, "data");
    mkdirSync(path.join(dataDir, "conversationv2"), { recursive: true });
    const file = path.join(dataDir, "conversationv2", "cmd_conversation_updates.json");
    writeFileSync(file, '[{"tenant": "not a uuid", "command_channel_id": 7}');
    badPath = `${file}.bad`;
    spawnedAtMs = Date.now();
    server = await startServerProcess({
      redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log"), metricsListen: "127.0.0.1:0",
      extraArgs: [
        "--node-id", NODE_ID, "--data-dir", dataDir,
        "--node-listen", "127.0.0.1:0", "--node-tls-cert", pki.nodeA.certPath, "--node-tls-key", pki.nodeA.keyPath,
      ],
    });
    listeningAtMs = Date.now();
    client = connectAdmin({
      endpoint: server.endpoint, caPem: readFileSync(pki.ca.certPath, "utf8"), certPem: readFileSync(pki.viewer.certPath, "utf8"),
      keyPem: readFileSync(pki.viewer.keyPath, "utf8"), deadlineMs: 8000,
    });
    context = path.join(dir, "context-viewer.json");
    writeFileSync(context, JSON.stringify({ endpoint: server.endpoint, ca: pki.ca.certPath, tenant: newUuid(), cert: pki.viewer.certPath, key: pki.viewer.keyPath }));
  });

  after(async () => {
    client?.close();
    await server?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the server started, renamed the file .bad and logged a WARNING naming it", async () => {
    assert.ok(existsSync(badPath), "the undecodable file was renamed .bad");
    assert.ok(!existsSync(badPath.slice(0, -".bad".length)), "the original name is free");
    await server.waitForLog(new RegExp(`WARNING: the CMD pending file did not decode and was renamed ${badPath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
  });

  it("qim_cmd_pending_file_bad is 1 on /metrics", async () => {
    assert.equal(await gauge(), 1);
  });

  it("ObserveService's snapshot carries the path and when it was set aside; its node's cmdBadFile is filled", async () => {
    const snap = await oneSnapshot();
    assert.equal(snap.cmdBadFiles.length, 1, JSON.stringify(snap.cmdBadFiles, (_k, v) => (typeof v === "bigint" ? String(v) : v)));
    const b = snap.cmdBadFiles[0]!;
    assert.equal(b.nodeId, NODE_ID);
    assert.equal(b.path, badPath);
    const at = Number(b.setAsideAtMs);
    assert.ok(at >= spawnedAtMs && at <= listeningAtMs, `set aside at ${at}, between the spawn (${spawnedAtMs}) and the listening line (${listeningAtMs})`);
    assert.deepEqual(snap.nodes.map((n) => [n.nodeId, n.cmdBadFile]), [[NODE_ID, badPath]]);
  });

  it("qimctl dashboard (not a terminal) names it in its JSON line and its plain line", async () => {
    const json = ok(await run(["dashboard", "--count", "1"], { context }), "dashboard --output json");
    assert.deepEqual(json.cmdBadFiles.map((b: { nodeId: string; path: string }) => [b.nodeId, b.path]), [[NODE_ID, badPath]]);
    assert.equal(new Date(json.cmdBadFiles[0].setAsideAt).getTime() >= spawnedAtMs, true);
    const plain = await run(["dashboard", "--count", "1"], { context, json: false });
    assert.equal(plain.code, 0, plain.stderr);
    assert.ok(plain.stdout.includes(`cmd_bad_file=${JSON.stringify(`${NODE_ID}:${badPath}`)}`), plain.stdout);
  });

  it("qimctl cmd status names it in JSON and as a table with a warning that says what to do", async () => {
    const json = ok(await run(["cmd", "status"], { context }), "cmd status --output json");
    assert.equal(json.answeredBy, NODE_ID);
    assert.equal(json.pendingEntries, 0);
    assert.deepEqual(json.badFiles.map((b: { nodeId: string; path: string }) => [b.nodeId, b.path]), [[NODE_ID, badPath]]);
    const table = await run(["cmd", "status"], { context, json: false });
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NODE\s+BAD FILE\s+SET ASIDE AT$/m);
    assert.ok(table.stdout.includes(`warning: node ${NODE_ID}: its CMD pending file did not decode at start-up and was set aside as ${badPath} at ${json.badFiles[0].setAsideAt}; inspect it, then delete it`), table.stdout);
  });

  it("qimctl cluster nodes names it", async () => {
    const json = ok(await run(["cluster", "nodes"], { context }), "cluster nodes");
    assert.deepEqual(json.nodes.map((n: { nodeId: string; cmdBadFile: string | null }) => [n.nodeId, n.cmdBadFile]), [[NODE_ID, badPath]]);
  });

  it("once the operator deletes the .bad file: the gauge is 0 and nothing names it any more, without a restart", async () => {
    rmSync(badPath);
    assert.equal(await gauge(), 0);
    const json = ok(await run(["cmd", "status"], { context }), "cmd status after the delete");
    assert.deepEqual(json.badFiles, []);
    const table = await run(["cmd", "status"], { context, json: false });
    assert.match(table.stdout, /No pending file set aside as \.bad/);
    assert.deepEqual((await oneSnapshot()).cmdBadFiles, []);
    const nodes = ok(await run(["cluster", "nodes"], { context }), "cluster nodes after the delete");
    assert.deepEqual(nodes.nodes.map((n: { cmdBadFile: string | null }) => n.cmdBadFile), [null]);
  });
});
