/**
 * Issue 14, audit log rotation under load: the real server process with a tiny audit.max_size
 * (from a config file, as an operator would give it) takes many concurrent mutating calls. Every
 * call the test made is audited exactly once across the rotated files — counted by the owner id
 * each call carries, an identity the test chose, not one the server reports — every file is 0600
 * and within the size; `qimctl audit tail` reads the entries back across the files in the order
 * the files hold them; and `qimctl audit tail --follow --output json`, started before the calls,
 * prints every one of them once, across all the rotations, until SIGINT (exit 130).
 *
 * Real redis-server, real server process over mTLS, real CLI processes; nothing mocked.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { outputMismatch } from "../cli/contract.js";
import { CLIENT_NAMES, writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { baseEnv, ok, QIMCTL, ROOT, run } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

const MAX_BYTES = 4096;
const CALLS = 400;
const CONCURRENCY = 40;

interface Line {
  time: string;
  rpc: string;
  requestId: string;
  detail: string;
  arguments: { owner?: string };
}

/** audit.log.N … audit.log.1, audit.log: oldest first, as the test reads the directory. */
function auditFiles(auditLog: string): { name: string; lines: Line[]; bytes: number; mode: number }[] {
  const dir = path.dirname(auditLog);
  const base = path.basename(auditLog);
  const gen = (n: string) => (n === base ? 0 : Number(n.slice(base.length + 1)));
  return readdirSync(dir)
    .filter((n) => n === base || (n.startsWith(`${base}.`) && /^\d+$/.test(n.slice(base.length + 1))))
    .sort((x, y) => gen(y) - gen(x))
    .map((name) => {
      const file = path.join(dir, name);
      const st = statSync(file);
      const lines = readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Line);
      return { name, lines, bytes: st.size, mode: st.mode & 0o777 };
    });
}

describe("audit log rotation: many concurrent mutations against a server process with a 4 KiB audit.max_size", { timeout: 300_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let server: ServerProcess;
  let auditLog: string;
  let client: AdminClient;
  let context: string;
  const tenant = randomUUID();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-audit-rotation-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    auditLog = path.join(dir, "audit", "audit.log");
    const config = path.join(dir, "server.yaml");
    writeFileSync(config, `audit:\n  max_size: 4KiB\n  keep: 1000\n`);
    server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog, configPath: config });
    context = path.join(dir, "context-viewer.json");
    writeFileSync(context, JSON.stringify({ endpoint: server.endpoint, ca: pki.ca.certPath, cert: pki.viewer.certPath, key: pki.viewer.keyPath, tenant }));
    const pem = (f: string) => readFileSync(f);
    client = connectAdmin({ endpoint: server.endpoint, caPem: pem(pki.ca.certPath), certPem: pem(pki.operator.certPath), keyPem: pem(pki.operator.keyPath) });
  });

  after(async () => {
    client?.close();
    await server?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("every call audited exactly once across the rotated files; audit tail reads across them; audit tail --follow prints each once, across the rotations", async () => {
    // the follower first: it must see every call from here on, and none before (--limit 0)
    const followArgs = ["audit", "tail", "--follow", "--limit", "0", "--output", "json"];
    const follower = spawn(process.execPath, [QIMCTL, ...followArgs], { cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: context }, stdio: ["ignore", "pipe", "pipe"] });
    let followed = "";
    let followErr = "";
    follower.stdout.setEncoding("utf8").on("data", (c: string) => { followed += c; });
    follower.stderr.setEncoding("utf8").on("data", (c: string) => { followErr += c; });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => follower.on("exit", (code, signal) => resolve({ code, signal })));
    // a mutation the test makes only to know the follower is attached: it is the follower's first line
    const marker = randomUUID();
    let markers = 0;
    for (let i = 0; i < 100 && !followed.includes(marker); i++) {
      await client.createGroup({ tenant, group: "", owner: marker, members: [] });
      markers++;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(followed.includes(marker), `the follower prints new entries: ${followErr}`);

    // CALLS group creations, CONCURRENCY at a time, each with an owner only this call names
    const owners = Array.from({ length: CALLS }, () => randomUUID());
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < owners.length) {
        const owner = owners[next++]!;
        await client.createGroup({ tenant, group: "", owner, members: [] });
      }
    }));

    // the files, as the test reads them
    const files = auditFiles(auditLog);
    const lines = files.flatMap((f) => f.lines);
    const creates = lines.filter((l) => l.rpc === "/qim.admin.v1.GroupService/CreateGroup");
    const count = new Map<string, number>();
    for (const l of creates) if (l.arguments.owner) count.set(l.arguments.owner, (count.get(l.arguments.owner) ?? 0) + 1);
    assert.deepEqual(owners.filter((o) => count.get(o) !== 1), [], "each call the test made is audited exactly once");
    assert.equal(creates.length, CALLS + markers, "nothing else was audited: the calls and the follower's markers");
    assert.equal(new Set(lines.map((l) => l.requestId)).size, lines.length, "no request id twice");
    assert.ok(files.length > 20, `rotated many times: ${files.length} files`);
    for (const f of files) {
      assert.equal(f.mode, 0o600, `${f.name} is 0600`);
      assert.ok(f.bytes <= MAX_BYTES, `${f.name} holds ${f.bytes} bytes, over ${MAX_BYTES}`);
    }
    assert.equal(statSync(path.dirname(auditLog)).isDirectory(), true);

    // audit tail: across the files, in their order, newest last
    const tail = ok(await run(["audit", "tail", "--limit", "1000"], { context }), "audit tail");
    assert.deepEqual(tail.entries.map((e: any) => e.requestId), lines.map((l) => l.requestId).slice(-1000));
    const short = ok(await run(["audit", "tail", "--limit", "25"], { context }), "audit tail --limit 25");
    assert.deepEqual(short.entries.map((e: any) => e.requestId), lines.map((l) => l.requestId).slice(-25));

    // the follower: every entry from the first marker it printed, once, in the order of the files; SIGINT ends it with 130
    const firstSeen = (JSON.parse(followed.split("\n")[0]!) as Line).requestId;
    const firstMarker = lines.findIndex((l) => l.requestId === firstSeen);
    assert.ok(firstMarker >= 0 && lines[firstMarker]!.arguments.owner === marker, "its first line is a marker");
    const wanted = lines.length - firstMarker;
    for (let i = 0; i < 300 && followed.split("\n").filter((l) => l !== "").length < wanted; i++) await new Promise((r) => setTimeout(r, 100));
    follower.kill("SIGINT");
    const end = await exited;
    assert.equal(end.code, 130, `exit ${end.code} ${end.signal}: ${followErr}`);
    assert.equal(JSON.parse(followErr).error.code, "INTERRUPTED");
    assert.equal(outputMismatch(followArgs, followed), undefined, "each line is an entry as the contract says");
    const got = followed.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Line);
    assert.deepEqual(got.map((l) => l.requestId), lines.slice(firstMarker).map((l) => l.requestId), "every entry from then on, once, in order, across every rotation");
    assert.deepEqual(owners.filter((o) => got.filter((l) => l.arguments.owner === o).length !== 1), []);
  });

  it("--follow in table mode: the newest --limit entries at once, one line each; the drill role is refused; a server shutting down ends it with exit 5", async () => {
    const drillCtx = path.join(dir, "context-drill.json");
    writeFileSync(drillCtx, JSON.stringify({ endpoint: server.endpoint, ca: pki.ca.certPath, cert: pki.drill.certPath, key: pki.drill.keyPath, tenant }));
    const refused = await run(["audit", "tail", "--follow"], { context: drillCtx });
    assert.equal(refused.code, 6, refused.stderr);
    assert.equal(refused.json.code, "PERMISSION_DENIED");
    const zero = await run(["audit", "tail", "--limit", "0"], { context });
    assert.equal(zero.code, 2, zero.stderr);
    assert.equal(zero.json.field, "--limit");

    const newest = auditFiles(auditLog).flatMap((f) => f.lines).slice(-3);
    const follower = spawn(process.execPath, [QIMCTL, "audit", "tail", "--follow", "--limit", "3"], { cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: context }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    follower.stdout.setEncoding("utf8").on("data", (c: string) => { out += c; });
    follower.stderr.setEncoding("utf8").on("data", (c: string) => { err += c; });
    const exited = new Promise<number | null>((resolve) => follower.on("exit", (code) => resolve(code)));
    for (let i = 0; i < 300 && out.split("\n").filter((l) => l !== "").length < 3; i++) await new Promise((r) => setTimeout(r, 100));
    const shown = out.split("\n").filter((l) => l !== "");
    assert.equal(shown.length, 3, out);
    // the newest three: a refused FollowAudit of the drill role after two of the calls above
    assert.deepEqual(newest.map((l) => l.rpc.split("/").pop()), ["CreateGroup", "CreateGroup", "FollowAudit"]);
    for (const [i, l] of shown.entries()) {
      const e = newest[i]!;
      const [who, role] = e.rpc.endsWith("/FollowAudit") ? [CLIENT_NAMES.drill, "drill"] : [CLIENT_NAMES.operator, "operator"];
      const result = e.rpc.endsWith("/FollowAudit") ? "PERMISSION_DENIED" : "OK";
      assert.ok(l.startsWith(`${e.time}  ${who}  ${role}  ${e.rpc.replace("/qim.admin.v1.", "")}  ${result}  `), l);
      assert.match(l, /  \d+\.\dms  /);
      assert.ok(l.endsWith(`  ${e.detail}`), l);
    }
    await server.stop();
    assert.equal(await exited, 5, err);
    assert.match(err, /shutting down/);
  });
});
