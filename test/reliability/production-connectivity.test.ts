/**
 * Issue 15, production connectivity, end to end with real processes: the real
 * `bin/qim-admin-server.js` against a redis-server that has an ACL user (default user off) and
 * serves TLS only, driven by the real `qimctl`; settings from flags, the environment and a YAML
 * config file. Wrong password, wrong CA and no password stop start-up with one clear line and
 * exit 5; a Redis that starts refusing a running server turns its health NOT_SERVING without a
 * reconnect storm; `--insecure-dev` on a non-loopback address never listens. No secret appears in
 * any log, audit line, JSON output or process command line.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";
import { testPki, writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { baseEnv, ok, ROOT, run } from "../e2e/qimctl.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";
import { ADMIN_SERVER, startServerProcess, type ServerProcess } from "./server-process.js";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs qim-admin-server to its end (a start-up that must fail); resolves with its exit code and output. */
function runServer(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [ADMIN_SERVER, ...args], { cwd: ROOT, env: { ...baseEnv, ...env } });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
    c.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    const t = setTimeout(() => c.kill("SIGKILL"), timeoutMs);
    c.once("exit", (code) => { clearTimeout(t); resolve({ code, stdout, stderr }); });
  });
}

/** grpc.health.v1 Check of the server ("") over mTLS with the operator certificate. */
async function health(port: number, pki: TestPkiFiles): Promise<string> {
  const Health = grpc.makeGenericClientConstructor(healthService, "Health");
  const client = new Health(`localhost:${port}`, grpc.credentials.createSsl(readFileSync(pki.ca.certPath), readFileSync(pki.operator.keyPath), readFileSync(pki.operator.certPath))) as unknown as grpc.Client & {
    check: (req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: string | number }) => void) => void;
  };
  try {
    return await new Promise<string>((resolve, reject) => client.check({ service: "" }, (e, res) => (e ? reject(e) : resolve(String(res!.status)))));
  } finally {
    client.close();
  }
}

/**
 * redis-cli as the second ACL user `ops` (created by the test): the harness's own connections
 * authenticate as `qim`, whose password the test rotates.
 */
function asOps(redis: RedisServer, args: string[]): Promise<string> {
  const cliArgs = [...redis.cli.args];
  const u = cliArgs.indexOf("--user");
  if (u >= 0) cliArgs[u + 1] = "ops";
  return new Promise((resolve, reject) => execFile("redis-cli", [...cliArgs, ...args], { env: { ...process.env, ...redis.cli.env, REDISCLI_AUTH: OPS_PASSWORD } }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout))));
}
const OPS_PASSWORD = `ops-${randomBytes(8).toString("hex")}`;

/** The value of one `INFO` field of a server, read as `ops`. */
async function info(redis: RedisServer, field: string): Promise<number> {
  const text = await asOps(redis, ["INFO", "stats"]);
  const m = new RegExp(`^${field}:(\\d+)`, "m").exec(text);
  assert.ok(m, `INFO has no ${field}: ${text.slice(0, 200)}`);
  return Number(m[1]);
}

describe("production connectivity: an ACL + TLS Redis, a config file, secrets kept out of every output", { timeout: 240_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let server: ServerProcess | undefined;
  const password = `pw-${randomBytes(12).toString("hex")}`;
  const tenant = randomUUID();
  /** Every output a secret could leak into, collected as the tests run. */
  const outputs: { what: string; text: string }[] = [];
  const auditLog = () => path.join(dir, "audit.log");

  const connection = (): string[] => [
    "--redis", redis.url, "--redis-user", "qim", "--redis-password-file", path.join(dir, "redis.password"), "--redis-tls-ca", pki.ca.certPath,
  ];
  const mtls = (): string[] => ["--tls-ca", pki.ca.certPath, "--tls-cert", pki.server.certPath, "--tls-key", pki.server.keyPath];
  const contextFor = (port: number): string => {
    const file = path.join(dir, `context-${port}.json`);
    writeFileSync(file, JSON.stringify({ endpoint: `localhost:${port}`, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant }));
    return file;
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-prod-conn-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    const set = await testPki();
    // the Redis server certificate comes from the same test CA (it names 127.0.0.1 and localhost)
    redis = await startRedis({ acl: { username: "qim", password }, tls: { certPem: set.server.certPem, keyPem: set.server.keyPem, caPem: set.ca.certPem } });
    writeFileSync(path.join(dir, "redis.password"), `${password}\n`, { mode: 0o600 });
  });

  after(async () => {
    await server?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the server runs on the ACL + TLS Redis with the password from a file; qimctl changes membership through it", async () => {
    server = await startServerProcess({ redisArgs: connection(), pki, auditLog: auditLog() });
    const ctx = contextFor(server.port);
    const owner = randomUUID();
    const created = ok(await run(["group", "create", "--owner", owner], { context: ctx }), "group create");
    const user = randomUUID();
    const added = ok(await run(["membership", "add", "--group", created.group, "--user", user], { context: ctx }), "membership add");
    assert.equal(added.outcome, "committed");
    const list = ok(await run(["membership", "list", "--group", created.group], { context: ctx }), "membership list");
    assert.deepEqual(list.members.map((m: { userId: string }) => m.userId).sort(), [owner, user].sort());
    // the data is in that Redis: the group's member version, read by the harness's own AUTH'd TLS connection
    assert.equal(await redis.command(["DBSIZE"]).then((r) => Number(r.replace(/^:/, "")) > 0), true);
    assert.equal(await health(server.port, pki), "SERVING");
    for (const r of [created, added, list]) outputs.push({ what: "qimctl JSON", text: JSON.stringify(r) });
    outputs.push({ what: "server cmdline", text: readFileSync(`/proc/${server.pid}/cmdline`, "utf8") });
    outputs.push({ what: "redis-server cmdline", text: readFileSync(`/proc/${redis.pid}/cmdline`, "utf8") });
  });

  it("a Redis that starts refusing the running server: health NOT_SERVING, one line, no reconnect storm", async () => {
    assert.ok(server, "needs the server of the previous test");
    const before = server.log().length;
    assert.equal(await redis.command(["ACL", "SETUSER", "ops", "on", `>${OPS_PASSWORD}`, "~*", "&*", "+@all"]), "+OK");
    const connections0 = await info(redis, "total_connections_received");
    // the password is rotated and the server's connections dropped: every reconnect is refused
    assert.match(await asOps(redis, ["ACL", "SETUSER", "qim", "resetpass", `>${password}-rotated`]), /OK/);
    assert.match(await asOps(redis, ["CLIENT", "KILL", "USER", "qim"]), /^[1-9]\d*/);
    let status = "";
    for (let i = 0; i < 100 && status !== "NOT_SERVING"; i++) {
      status = await health(server.port, pki).catch((e: Error) => e.message);
      if (status !== "NOT_SERVING") await pause(100);
    }
    assert.equal(status, "NOT_SERVING", server.log().slice(before));
    await server.waitForLog(/^\S+Z Redis refused the credentials for user qim at 127\.0\.0\.1:\d+ \(WRONGPASS/, 10_000, before);
    await pause(2000);
    // the test's own redis-cli calls are connections too (four); a storm would be one per 50–500 ms
    const connections = (await info(redis, "total_connections_received")) - connections0;
    assert.ok(connections <= 8, `${connections} connections in the refusal window: ${server.log().slice(before)}`);
    const refusedLines = server.log().slice(before).split("\n").filter((l) => /refused the credentials/.test(l));
    assert.ok(refusedLines.length <= 2, refusedLines.join("\n"));
    outputs.push({ what: "server log", text: server.log() });
    await server.stop();
    server = undefined;
    await asOps(redis, ["ACL", "SETUSER", "qim", "resetpass", `>${password}`]);
  });

  it("a config file carries the same settings (password inline, redacted by --print-config); flags override it", async () => {
    const port = await freePort();
    const config = path.join(dir, "server.yaml");
    writeFileSync(config, [
      `listen: 127.0.0.1:${port}`,
      "metrics_listen: \"off\"",
      `tls: {ca: ${pki.ca.certPath}, cert: ${pki.server.certPath}, key: ${pki.server.keyPath}}`,
      `audit: {log: ${path.join(dir, "audit-config.log")}}`,
      "redis:",
      `  addrs: [${redis.url}]`,
      "  user: qim",
      `  password: ${password}`,
      `  tls: {ca: ${pki.ca.certPath}}`,
      // the partition count of the dispatch log the first server created (another is refused)
      "dispatch: {partitions: 8, retention: 1d}",
      "",
    ].join("\n"), { mode: 0o600 });
    const printed = await runServer(["--config", config, "--print-config", "--dispatch-retention", "6h"]);
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /^ {2}password: <redacted> {2}# config file$/m);
    assert.match(printed.stdout, /^ {2}partitions: 8 {2}# config file$/m);
    assert.match(printed.stdout, /^ {2}retention: 6h {2}# flag --dispatch-retention$/m);
    outputs.push({ what: "--print-config", text: printed.stdout + printed.stderr });
    const shown = ok(await run(["server", "config", "--config", config, "--dispatch-retention", "6h"]), "qimctl server config");
    assert.equal(shown.settings.redis.password, "<redacted>");
    assert.deepEqual([shown.sources["dispatch.partitions"], shown.sources["dispatch.retention"], shown.settings.dispatch.retention], ["file", "flag", "6h"]);
    outputs.push({ what: "server config JSON", text: JSON.stringify(shown) });
    const started = await startServerProcess({ configPath: config, pki, auditLog: path.join(dir, "audit-config.log"), port, bare: true });
    try {
      const ctx = contextFor(started.port);
      const g = ok(await run(["group", "create", "--owner", randomUUID()], { context: ctx }), "group create via the config-file server");
      assert.match(g.group, /^[0-9a-f-]{36}$/);
      outputs.push({ what: "config server log", text: started.log() });
    } finally {
      await started.stop();
    }
  });

  it("wrong password, wrong CA, no password: start-up stops with one clear line and exit 5, nothing listens", async () => {
    const wrong = path.join(dir, "wrong.password");
    writeFileSync(wrong, "not-the-password\n", { mode: 0o600 });
    const otherCa = path.join(dir, "pki", "otherCa.crt");
    const cases: { args: string[]; env?: NodeJS.ProcessEnv; line: RegExp }[] = [
      { args: ["--redis", redis.url, "--redis-user", "qim", "--redis-password-file", wrong, "--redis-tls-ca", pki.ca.certPath], line: /^\S+Z qim-admin-server: Redis refused the credentials for user qim at 127\.0\.0\.1:\d+ \(WRONGPASS/m },
      { args: ["--redis", redis.url, "--redis-user", "qim", "--redis-tls-ca", pki.ca.certPath], env: { QIM_REDIS_PASSWORD: "nope" }, line: /^\S+Z qim-admin-server: Redis refused the credentials for user qim/m },
      { args: ["--redis", redis.url, "--redis-user", "qim", "--redis-password-file", path.join(dir, "redis.password"), "--redis-tls-ca", otherCa], line: /^\S+Z qim-admin-server: Redis TLS handshake with 127\.0\.0\.1:\d+ failed: the server certificate does not verify/m },
      { args: ["--redis", redis.url, "--redis-tls-ca", pki.ca.certPath], line: /^\S+Z qim-admin-server: Redis at 127\.0\.0\.1:\d+ requires authentication \(NOAUTH\)/m },
    ];
    for (const c of cases) {
      const port = await freePort();
      const r = await runServer(["--listen", `127.0.0.1:${port}`, "--metrics-listen", "off", ...mtls(), "--audit-log", path.join(dir, "audit-fail.log"), ...c.args], c.env);
      assert.equal(r.code, 5, `${c.args.join(" ")}\n${r.stderr}`);
      assert.match(r.stderr, c.line);
      assert.doesNotMatch(r.stderr, /listening on/);
      // one line about Redis, not one per reconnection attempt
      assert.equal(r.stderr.split("\n").filter((l) => /Redis/.test(l)).length, 1, r.stderr);
      outputs.push({ what: `failed start ${c.args.join(" ")}`, text: r.stdout + r.stderr });
    }
  });

  it("--insecure-dev on a non-loopback address refuses to start (exit 2) and nothing listens", async () => {
    const port = await freePort();
    const r = await runServer(["--insecure-dev", "--listen", `0.0.0.0:${port}`, "--metrics-listen", "off", "--redis", "127.0.0.1:1"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--listen: --insecure-dev .* only on a loopback address .*not 0\.0\.0\.0.*--insecure-dev-allow-non-loopback/);
    const reached = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: "127.0.0.1", port });
      s.once("connect", () => { s.destroy(); resolve(true); });
      s.once("error", () => resolve(false));
    });
    assert.equal(reached, false, "something listens on the refused port");
    const viaCli = await run(["server", "start", "--insecure-dev", "--listen", `0.0.0.0:${port}`, "--redis", "127.0.0.1:1"]);
    assert.equal(viaCli.code, 2, viaCli.stderr);
    assert.equal(viaCli.json.field, "--listen");
  });

  it("no secret in any log, audit line, JSON output or command line", () => {
    outputs.push({ what: "audit log", text: readFileSync(auditLog(), "utf8") });
    assert.ok(outputs.length >= 10, `only ${outputs.length} outputs collected: the tests before did not run`);
    for (const o of outputs) {
      assert.ok(!o.text.includes(password), `${o.what} contains the Redis password`);
      assert.ok(!o.text.includes("not-the-password"), `${o.what} contains the wrong password`);
    }
  });
});
