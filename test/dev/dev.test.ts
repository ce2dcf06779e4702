/**
 * `qimctl dev up|status|down` with real processes: the real CLI starts a real redis-server and the
 * real admin server (detached), a plain qimctl command goes through the context it wrote, and
 * `dev down` leaves no process behind. XDG_CONFIG_HOME points into the temp dir, so the default
 * context is never the developer's.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { alive, baseEnv, killMentioning, ok, processesMentioning, QIMCTL, qimctl, ROOT } from "./helpers.js";

describe("qimctl dev up|status|down with real processes", { timeout: 300_000 }, () => {
  let tmp: string;
  let env: NodeJS.ProcessEnv;
  let defaultContext: string;
  let config: string;
  const readConfig = () => JSON.parse(readFileSync(config, "utf8"));

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-dev-"));
    env = { XDG_CONFIG_HOME: tmp };
    defaultContext = path.join(tmp, "qimctl", "context.json");
    config = path.join(tmp, "qimctl", "config.json");
  });

  after(async () => {
    for (const d of ["dev", "stale", path.join("mine", "dev")]) await qimctl(["dev", "down", "--data-dir", path.join(tmp, d)], { env });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "a test left processes behind");
  });

  const redisOf = (dir: string) => processesMentioning(dir).filter((p) => p.cmdline.includes("redis-server"));
  const serverOf = (dir: string) => processesMentioning(dir).filter((p) => p.cmdline.includes("qim-admin-server"));

  it("up twice: one redis-server, reused; status 0; a plain command through the context; down leaves nothing; status then exits 5", async () => {
    const dir = path.join(tmp, "dev");
    const first = ok(await qimctl(["dev", "up", "--data-dir", dir], { env }), "dev up");
    assert.equal(first.status, "started");
    assert.equal(first.dataDir, dir);
    assert.match(first.endpoint, /^localhost:\d+$/);
    assert.equal(first.endpoint, `localhost:${first.server.port}`);
    assert.match(first.tenant, /^[0-9a-f-]{36}$/);
    assert.equal(first.authorityKind, "redis-hash");
    assert.match(first.authority, /^redis-hash \(development fallback/);
    assert.ok(alive(first.redis.pid) && alive(first.server.pid));
    assert.deepEqual(redisOf(dir).map((p) => p.pid), [first.redis.pid], "one redis-server of this data dir");
    assert.deepEqual(serverOf(dir).map((p) => p.pid), [first.server.pid], "one admin server of this data dir");

    // the redis-server: AOF with appendfsync always, data and log under the data dir
    const conf = (await import("node:child_process")).execFileSync("redis-cli", ["-p", String(first.redis.port), "CONFIG", "GET", "appendfsync"], { encoding: "utf8" });
    assert.match(conf, /appendfsync\s+always/);
    assert.equal(first.redis.dataDir, path.join(dir, "redis"));
    assert.ok(existsSync(path.join(dir, "redis.log")) && existsSync(path.join(dir, "server.log")));

    // PKI under <dir>/pki, keys 0600; the state file and both contexts
    for (const key of ["ca.key", "server.key", "admin.key"]) assert.equal(statSync(path.join(dir, "pki", key)).mode & 0o777, 0o600, key);
    const state = JSON.parse(readFileSync(path.join(dir, "dev.json"), "utf8"));
    assert.deepEqual([state.redis.pid, state.server.pid, state.tenant], [first.redis.pid, first.server.pid, first.tenant]);
    const ctx = JSON.parse(readFileSync(path.join(dir, "context.json"), "utf8"));
    assert.deepEqual({ endpoint: ctx.endpoint, tenant: ctx.tenant, cert: ctx.cert, dev: ctx.dev }, { endpoint: first.endpoint, tenant: first.tenant, cert: path.join(dir, "pki", "admin.crt"), dev: true });
    assert.deepEqual(readConfig(), { current: "dev", contexts: { dev: ctx } }, "the named context dev is written too, and current (there was none)");
    assert.equal(statSync(config).mode & 0o777, 0o600);
    assert.deepEqual(first.namedContext, { config, name: "dev", written: true, current: "dev", note: null });
    assert.ok(!existsSync(defaultContext), "the old single context file is not written");

    // a second dev up reuses both processes: never a second redis-server
    const second = await qimctl(["dev", "up", "--data-dir", dir], { env, json: false });
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /already running in .*: reused/);
    assert.match(second.stdout, /conversation-set authority: redis-hash \(development fallback/);
    const third = ok(await qimctl(["dev", "up", "--data-dir", dir], { env }), "dev up (3)");
    assert.equal(third.status, "reused");
    assert.deepEqual([third.redis.pid, third.server.pid, third.endpoint, third.tenant], [first.redis.pid, first.server.pid, first.endpoint, first.tenant]);
    assert.deepEqual(redisOf(dir).map((p) => p.pid), [first.redis.pid], "still one redis-server");
    assert.deepEqual(serverOf(dir).map((p) => p.pid), [first.server.pid], "still one admin server");
    // asking for another port while it runs is refused, nothing changes
    const otherPort = await qimctl(["dev", "up", "--data-dir", dir, "--port", String(first.server.port === 65000 ? 65001 : 65000)], { env });
    assert.equal(otherPort.code, 4, otherPort.stderr);
    assert.equal(otherPort.json.code, "DEV_STACK_RUNNING");

    const status = ok(await qimctl(["dev", "status", "--data-dir", dir], { env }), "dev status");
    assert.equal(status.state, "up");
    assert.deepEqual(status.redis, { pid: first.redis.pid, port: first.redis.port, alive: true, answering: true });
    assert.deepEqual(status.server, { pid: first.server.pid, port: first.server.port, alive: true, answering: true });

    // the CMD sync HTTP API: syncUrl answers the service certificate dev up wrote, refuses the admin one
    assert.match(status.syncUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(status.syncUrl, first.syncUrl);
    const curl = (who: "service" | "admin") => (execFileSync as typeof import("node:child_process").execFileSync)("curl", [
      "-sS", "--max-time", "20", "--cacert", path.join(dir, "pki", "ca.crt"), "--cert", path.join(dir, "pki", `${who}.crt`), "--key", path.join(dir, "pki", `${who}.key`),
      "-d", JSON.stringify({ uid: "33333333-3333-4333-8333-333333333333", limit: 10 }), "-w", "\n%{http_code}", `${status.syncUrl}/message/sync`,
    ], { encoding: "utf8" });
    assert.equal(curl("service"), "[]\n200", "a user with nothing to sync: an empty array (the dev tenant is sync.tenant)");
    assert.match(curl("admin"), /"status":403\}\n403$/);

    // plain commands through the written contexts: --context <dir>/context.json, --context dev, then the current one
    const group = ok(await qimctl(["group", "create", "--owner", "11111111-1111-4111-8111-111111111111", "--member", "22222222-2222-4222-8222-222222222222", "--context", path.join(dir, "context.json")], { env }), "group create");
    assert.equal(group.tenant, first.tenant);
    assert.equal(group.memberCount, 2);
    assert.equal(ok(await qimctl(["group", "show", "--group", group.group, "--context", "dev"], { env }), "group show --context dev").memberCount, 2);
    const list = ok(await qimctl(["membership", "list", "--group", group.group], { env }), "membership list through the current context");
    assert.deepEqual(list.members.map((m: any) => m.state), ["ACTIVE", "ACTIVE"]);

    // the client gateway: in the state and the context, so that qimctl client needs no --url; the token key file 0600
    assert.match(status.gatewayUrl, /^wss:\/\/localhost:\d+$/);
    assert.equal(readConfig().contexts.dev.gateway, status.gatewayUrl);
    assert.equal(statSync(path.join(dir, "token-keys.json")).mode & 0o777, 0o600);
    const device = await qimctl(["client", "--as", "11111111-1111-4111-8111-111111111111", "--device", "phone", "--exit-after", "1", "--output", "json"], { env, json: false });
    assert.equal(device.code, 0, device.stderr);
    const authOk = JSON.parse(device.stdout.trim().split("\n")[0]!);
    assert.deepEqual([authOk.frame, authOk.body.user, authOk.body.deviceId, authOk.body.tenant], ["authOk", "11111111-1111-4111-8111-111111111111", "phone", first.tenant]);

    const down = ok(await qimctl(["dev", "down", "--data-dir", dir], { env }), "dev down");
    assert.equal(down.wasRunning, true);
    assert.deepEqual(down.stopped.map((s: any) => [s.process, s.pid]), [["server", first.server.pid], ["redis", first.redis.pid]]);
    assert.ok(down.stopped.every((s: any) => s.how === "SIGTERM" || s.how === "SIGKILL"), JSON.stringify(down.stopped));
    assert.ok(!alive(first.redis.pid) && !alive(first.server.pid), "the pids are gone");
    assert.deepEqual(processesMentioning(dir), [], "no process mentions the data dir");
    assert.ok(!existsSync(path.join(dir, "dev.json")), "the state file is removed");
    assert.deepEqual(down.contextsRemoved, [], "a stop keeps the named context (the next dev up refreshes it)");
    assert.deepEqual(readConfig(), { current: "dev", contexts: { dev: ctx } });
    assert.ok(existsSync(path.join(dir, "context.json")) && existsSync(path.join(dir, "pki", "ca.key")) && existsSync(path.join(dir, "redis")), "data, PKI and context are kept");

    const after = await qimctl(["dev", "status", "--data-dir", dir], { env });
    assert.equal(after.code, 5, after.stderr);
    assert.equal(JSON.parse(after.stdout).state, "down");
    assert.equal(JSON.parse(after.stderr).error.code, "DEV_STACK_DOWN");
    const again = ok(await qimctl(["dev", "down", "--data-dir", dir], { env }), "dev down again");
    assert.equal(again.wasRunning, false);
    const text = await qimctl(["dev", "down", "--data-dir", dir], { env, json: false });
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^Nothing running for the dev stack/);

    // the next dev up keeps the tenant, the PKI and the data: the group is still there
    const restarted = ok(await qimctl(["dev", "up", "--data-dir", dir], { env }), "dev up after down");
    assert.equal(restarted.status, "started");
    assert.equal(restarted.tenant, first.tenant);
    assert.ok(!restarted.notes.some((n: string) => n.startsWith("created")), "no new certificates");
    const shown = ok(await qimctl(["group", "show", "--group", group.group], { env }), "group show after a restart (AOF)");
    assert.equal(shown.memberCount, 2);
    const purged = ok(await qimctl(["dev", "down", "--data-dir", dir, "--purge", "--yes"], { env }), "dev down --purge");
    assert.equal(purged.purged, true);
    assert.deepEqual(purged.contextsRemoved, ["dev"], "a purge removes the context of the files it removed");
    assert.deepEqual(readConfig(), { current: null, contexts: {} });
    assert.ok(!existsSync(dir), "purge removed the data dir (it held only the stack's files)");
    assert.deepEqual(processesMentioning(dir), []);
  });

  it("a stale state (the server killed) is cleaned up and started afresh; status says partial (exit 5) meanwhile", async () => {
    const dir = path.join(tmp, "stale");
    const first = ok(await qimctl(["dev", "up", "--data-dir", dir], { env }), "dev up");
    process.kill(first.server.pid, "SIGKILL");
    for (let i = 0; i < 100 && alive(first.server.pid); i++) await new Promise((r) => setTimeout(r, 20));
    const partial = await qimctl(["dev", "status", "--data-dir", dir], { env });
    assert.equal(partial.code, 5, partial.stderr);
    const body = JSON.parse(partial.stdout);
    assert.equal(body.state, "partial");
    assert.deepEqual([body.server.alive, body.redis.alive, body.redis.answering], [false, true, true]);

    const again = ok(await qimctl(["dev", "up", "--data-dir", dir], { env }), "dev up over a stale state");
    assert.equal(again.status, "started");
    assert.ok(again.notes.some((n: string) => /^stale state \(server pid \d+ is not running\)/.test(n)), JSON.stringify(again.notes));
    assert.notEqual(again.server.pid, first.server.pid);
    assert.ok(!alive(first.redis.pid), "the old redis-server was stopped");
    assert.deepEqual(redisOf(dir).map((p) => p.pid), [again.redis.pid], "one redis-server");
    assert.equal(again.tenant, first.tenant);
    assert.equal(ok(await qimctl(["dev", "status", "--data-dir", dir], { env }), "status").state, "up");
    ok(await qimctl(["dev", "down", "--data-dir", dir], { env }), "dev down");
    assert.deepEqual(processesMentioning(dir), []);
  });

  it("an old default context file not written by dev up stays the current context (imported as default); dev up adds dev and says how to use it", async () => {
    // a data dir named dev: its context is called dev (another name would get dev-<name>)
    const dir = path.join(tmp, "mine", "dev");
    rmSync(config, { force: true });
    mkdirSync(path.dirname(defaultContext), { recursive: true });
    const theirs = `${JSON.stringify({ endpoint: "qim-admin.internal:7443", tenant: "33333333-3333-4333-8333-333333333333" })}\n`;
    writeFileSync(defaultContext, theirs);
    const up = await qimctl(["dev", "up", "--data-dir", dir], { env, json: false });
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /Use this stack with --context dev, or make it the current context: qimctl context use dev/);
    assert.match(up.stdout, /note: imported .*context\.json as the context "default" of .*config\.json/);
    assert.equal(readFileSync(defaultContext, "utf8"), theirs, "the old file is left as it was");
    const cfg = readConfig();
    assert.equal(cfg.current, "default", "their context stays current");
    assert.deepEqual(cfg.contexts.default, { endpoint: "qim-admin.internal:7443", tenant: "33333333-3333-4333-8333-333333333333" });
    assert.equal(cfg.contexts.dev.dataDir, dir);
    const status = ok(await qimctl(["dev", "status", "--data-dir", dir], { env }), "status");
    assert.equal(ok(await qimctl(["projection", "status", "--context", "dev"], { env }), "projection status --context dev").partitions.length, 8);
    const viaEnv = ok(await qimctl(["projection", "status"], { env: { ...env, QIMCTL_CONTEXT: status.context } }), "projection status through QIMCTL_CONTEXT");
    assert.equal(viaEnv.partitions.length, 8);
    // a context of that name written by someone else is left alone
    ok(await qimctl(["context", "set", "dev", "--endpoint", "elsewhere:7443"], { env }), "context set dev by hand");
    const again = ok(await qimctl(["dev", "up", "--data-dir", dir], { env }), "dev up (reused)");
    assert.equal(again.namedContext.written, false);
    assert.match(again.namedContext.note, /the context "dev" exists and was not written by qimctl dev up/);
    assert.equal(readConfig().contexts.dev.endpoint, "elsewhere:7443");
    const down = ok(await qimctl(["dev", "down", "--data-dir", dir], { env }), "dev down");
    assert.deepEqual(down.contextsRemoved, []);
    assert.equal(readFileSync(defaultContext, "utf8"), theirs, "still theirs");
    rmSync(defaultContext);
    rmSync(config);
  });

  it("Ctrl+C while dev up starts the stack: exit 130, what it had started is stopped", async () => {
    const dir = path.join(tmp, "interrupted");
    const child = spawn(process.execPath, [QIMCTL, "dev", "up", "--data-dir", dir], { cwd: ROOT, env: { ...baseEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    // redis-server is running (and not handed over yet) once dev up goes on to the admin server
    await new Promise<void>((resolve) => child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (/starting the admin server/.test(stderr)) resolve();
    }));
    child.kill("SIGINT");
    assert.equal(await exit, 130, stderr);
    assert.match(stderr, /^interrupted: stopped what was starting \(pid \d+/m);
    for (let i = 0; i < 100 && processesMentioning(dir).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(processesMentioning(dir), [], "nothing left running");
    assert.ok(!existsSync(path.join(dir, "dev.json")), "no state written");
  });

  it("without redis-server on PATH: exit 2 with the install command, nothing started or created", async () => {
    const bin = path.join(tmp, "bin-without-redis");
    mkdirSync(bin, { recursive: true });
    symlinkSync(process.execPath, path.join(bin, "node"));
    const dir = path.join(tmp, "no-redis");
    const r = await qimctl(["dev", "up", "--data-dir", dir], { env: { ...env, PATH: bin } });
    assert.equal(r.code, 2, `${r.stdout}\n${r.stderr}`);
    assert.equal(r.stdout, "");
    assert.equal(r.json.code, "REDIS_SERVER_MISSING");
    assert.match(r.json.message, /apt-get install -y redis-server/);
    const text = await qimctl(["dev", "up", "--data-dir", dir], { env: { ...env, PATH: bin }, json: false });
    assert.equal(text.code, 2);
    assert.match(text.stderr, /^Error: redis-server is not installed .*sudo apt-get install -y redis-server.*as root: apt-get install -y redis-server/);
    assert.ok(!existsSync(dir), "nothing created");
    assert.deepEqual(processesMentioning(dir), [], "nothing started");
    const demo = await qimctl(["demo", "--data-dir", dir], { env: { ...env, PATH: bin } });
    assert.equal(demo.code, 2);
    assert.equal(demo.json.code, "REDIS_SERVER_MISSING");
  });

  it("a redis-server on PATH that cannot be started: exit 1 saying why, nothing left running", async () => {
    const bin = path.join(tmp, "bin-broken-redis");
    mkdirSync(bin, { recursive: true });
    symlinkSync(process.execPath, path.join(bin, "node"));
    // a broken install: its interpreter is missing, so exec fails with ENOENT
    writeFileSync(path.join(bin, "redis-server"), "#!/nonexistent/interpreter\n", { mode: 0o755 });
    const dir = path.join(tmp, "broken-redis");
    const r = await qimctl(["dev", "up", "--data-dir", dir], { env: { ...env, PATH: bin } });
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.equal(r.json.code, "SPAWN_FAILED");
    assert.match(r.json.message, /^cannot start .*redis-server: spawn .*ENOENT/);
    assert.deepEqual(processesMentioning(dir), [], "nothing started");
  });
});
