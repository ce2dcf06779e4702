/**
 * `qimctl dev up --secure-redis` with real processes: the private redis-server serves TLS only and
 * wants the ACL user (proved with raw sockets and with redis-cli), the admin server reaches it and
 * answers over mTLS, a running stack of the other Redis mode is not reused, and the password is
 * nowhere but in its file: not in another file of the data dir, not in any command's output, not
 * in the command line, title or environment of redis-server or the admin server.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { connect as tlsConnect } from "node:tls";
import { after, before, describe, it } from "node:test";
import { outputMismatch } from "../cli/contract.js";
import { alive, filesHolding, killMentioning, ok, processesMentioning, processHolding, qimctl, runsHolding, type Run } from "./helpers.js";

/** What a Redis answered to `request` (raw RESP) until it had sent `lines` lines, hung up, or 3 s passed. */
function exchange(socket: net.Socket, ready: "connect" | "secureConnect", request: string, lines: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = "";
    let settled = false;
    const done = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => done(false), 3000);
    socket.once(ready, () => socket.write(request));
    socket.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      if (text.split("\r\n").length > lines) done(false);
    });
    socket.once("error", () => done(true));
    socket.once("close", () => done(true));
  });
}

const resp = (...commands: string[][]) => commands.map((args) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`).join("");
const plaintext = (port: number, request: string, lines: number) => exchange(net.connect({ host: "127.0.0.1", port }), "connect", request, lines);
const overTls = (port: number, ca: Buffer, request: string, lines: number) => exchange(tlsConnect({ host: "127.0.0.1", port, ca }), "secureConnect", request, lines);

function redisCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile("redis-cli", args, { env: { PATH: process.env.PATH, ...env }, timeout: 10_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

describe("qimctl dev up --secure-redis with real processes", { timeout: 300_000 }, () => {
  let tmp: string;
  let env: NodeJS.ProcessEnv;
  /** Every qimctl run of this file, for the secret scan. */
  const runs: (Run & { args: string[] })[] = [];
  const run = async (args: string[], opts: { json?: boolean } = {}) => {
    const r = await qimctl(args, { env, ...opts });
    runs.push({ ...r, args });
    return r;
  };

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-devsec-"));
    env = { XDG_CONFIG_HOME: tmp };
  });

  after(async () => {
    for (const d of ["secure", "plain"]) await qimctl(["dev", "down", "--data-dir", path.join(tmp, d)], { env });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "a test left processes behind");
  });

  it("TLS only, ACL user qim, default user off; the server answers over mTLS; reused only with --secure-redis; the password is nowhere else", async () => {
    const dir = path.join(tmp, "secure");
    const upRun = await run(["dev", "up", "--secure-redis", "--data-dir", dir]);
    const up = ok(upRun, "dev up --secure-redis");
    assert.equal(outputMismatch(["dev", "up"], upRun.stdout), undefined);
    const passwordFile = path.join(dir, "redis.password");
    const ca = path.join(dir, "pki", "ca.crt");
    const port = up.redis.port as number;
    assert.equal(up.status, "started");
    assert.deepEqual(up.redisAccess, { secure: true, user: "qim", tlsPort: port, passwordFile, ca });
    assert.equal(up.redis.addr, `rediss://127.0.0.1:${port}`);
    assert.ok(up.notes.some((n: string) => n.startsWith(`created the password of Redis user qim in ${passwordFile}`)), JSON.stringify(up.notes));

    const password = readFileSync(passwordFile, "utf8");
    assert.match(password, /^[A-Za-z0-9_-]{43}$/, "32 random bytes, base64url");
    for (const f of [passwordFile, path.join(dir, "redis.acl"), path.join(dir, "pki", "redis.key")]) assert.equal(statSync(f).mode & 0o777, 0o600, f);
    // the default user off, with its permissions kept for the AOF replay (cli/dev/stack.ts, writeRedisAcl)
    assert.match(readFileSync(path.join(dir, "redis.acl"), "utf8"), /^user qim on #[0-9a-f]{64} ~\* &\* \+@all\nuser default off ~\* &\* \+@all\n$/);

    // plaintext: no Redis answers on the port (the TLS handshake fails and it hangs up)
    const plain = await plaintext(port, resp(["PING"]), 1);
    assert.ok(plain.closed, `plaintext connection not closed: ${JSON.stringify(plain.text)}`);
    assert.doesNotMatch(plain.text, /PONG|NOAUTH/);
    // TLS (the dev CA verifies the server, 127.0.0.1 in its SAN), but no AUTH: refused
    const caPem = readFileSync(ca);
    const noAuth = await overTls(port, caPem, resp(["PING"]), 1);
    assert.match(noAuth.text, /^-NOAUTH /);
    const wrong = await overTls(port, caPem, resp(["AUTH", "qim", "not-the-password"], ["PING"]), 2);
    assert.match(wrong.text, /^-WRONGPASS .*\r\n-NOAUTH /);
    const asDefault = await overTls(port, caPem, resp(["AUTH", "default", password], ["PING"]), 2);
    assert.match(asDefault.text, /^-WRONGPASS /, "the default user is off");
    const right = await overTls(port, caPem, resp(["AUTH", "qim", password], ["PING"]), 2);
    assert.equal(right.text, "+OK\r\n+PONG\r\n");
    // the same with redis-cli, the password by REDISCLI_AUTH (never on its command line)
    const cliNoAuth = await redisCli(["--tls", "--cacert", ca, "-p", String(port), "PING"]);
    assert.match(cliNoAuth.out, /NOAUTH/);
    const cli = await redisCli(["--tls", "--cacert", ca, "-p", String(port), "--user", "qim", "PING"], { REDISCLI_AUTH: password });
    assert.deepEqual([cli.code, cli.out.trim()], [0, "PONG"]);
    const cliPlain = await redisCli(["-p", String(port), "PING"]);
    assert.doesNotMatch(cliPlain.out, /PONG/);

    // the admin server reached Redis over TLS as qim and answers over mTLS: status, and a command through the context
    const statusRun = await run(["dev", "status", "--data-dir", dir]);
    const status = ok(statusRun, "dev status");
    assert.equal(outputMismatch(["dev", "status"], statusRun.stdout), undefined);
    assert.equal(status.state, "up");
    assert.deepEqual(status.redis, { pid: up.redis.pid, port, alive: true, answering: true });
    assert.deepEqual(status.server, { pid: up.server.pid, port: up.server.port, alive: true, answering: true });
    assert.deepEqual(status.redisAccess, up.redisAccess);
    const statusText = await run(["dev", "status", "--data-dir", dir], { json: false });
    assert.equal(statusText.code, 0, statusText.stderr);
    assert.match(statusText.stdout, new RegExp(`redis access: +secure: TLS only on port ${port} \\(CA .*ca\\.crt\\), ACL user qim, password in .*redis\\.password, default user off`));
    assert.match(readFileSync(path.join(dir, "server.log"), "utf8"), new RegExp(`redis rediss://127\\.0\\.0\\.1:${port} as user qim`));
    const group = ok(await run(["group", "create", "--owner", "11111111-1111-4111-8111-111111111111", "--member", "22222222-2222-4222-8222-222222222222", "--context", path.join(dir, "context.json")]), "group create");
    assert.equal(group.memberCount, 2);
    ok(await run(["message", "send", "--group", group.group, "--as", "11111111-1111-4111-8111-111111111111", "--text", "over TLS", "--context", path.join(dir, "context.json")]), "message send");

    // reused with --secure-redis; without it, refused (exit 4) and nothing changes
    const again = ok(await run(["dev", "up", "--secure-redis", "--data-dir", dir]), "dev up --secure-redis again");
    assert.deepEqual([again.status, again.redis.pid, again.server.pid, again.redisAccess.secure], ["reused", up.redis.pid, up.server.pid, true]);
    const plainUp = await run(["dev", "up", "--data-dir", dir]);
    assert.equal(plainUp.code, 4, plainUp.stderr);
    assert.equal(plainUp.stdout, "");
    assert.equal(plainUp.json.code, "DEV_STACK_REDIS_MODE");
    assert.match(plainUp.json.message, /runs with a secure Redis .*add --secure-redis to reuse it, or stop it first \(qimctl dev down --data-dir .*\)/);
    assert.ok(alive(up.redis.pid) && alive(up.server.pid), "still running");
    assert.equal(JSON.parse(readFileSync(path.join(dir, "dev.json"), "utf8")).redisAccess.secure, true);

    // the password: only in redis.password — not in another file, an output, or a process
    assert.deepEqual(filesHolding(dir, password), ["redis.password"], "the scan finds the one file that should hold it");
    assert.deepEqual(filesHolding(dir, password, ["redis.password"]), [], "files of the data dir holding the password");
    assert.deepEqual(runsHolding(runs, password), [], "qimctl runs printing the password");
    assert.deepEqual([...processHolding(up.redis.pid, password), ...processHolding(up.server.pid, password)], [], "processes showing the password");
    assert.match(readFileSync(`/proc/${up.redis.pid}/cmdline`, "utf8"), /qimctl-dev /, "the title mark is still what dev up finds it by");

    // down and up again: the same password (kept, like the PKI), the data back from the AOF
    const down = ok(await run(["dev", "down", "--data-dir", dir]), "dev down");
    assert.deepEqual(down.stopped.map((s: any) => [s.process, s.pid]), [["server", up.server.pid], ["redis", up.redis.pid]]);
    assert.deepEqual(processesMentioning(dir), []);
    const restarted = ok(await run(["dev", "up", "--secure-redis", "--data-dir", dir]), "dev up --secure-redis after down");
    assert.equal(restarted.status, "started");
    assert.equal(readFileSync(passwordFile, "utf8"), password);
    assert.ok(!restarted.notes.some((n: string) => n.startsWith("created")), JSON.stringify(restarted.notes));
    // group create is a Lua script, so its effects are a MULTI/EXEC in the AOF: replayed only
    // because the default user keeps its permissions (writeRedisAcl in cli/dev/stack.ts)
    assert.equal(ok(await run(["group", "show", "--group", group.group, "--context", path.join(dir, "context.json")]), "group show after a restart").memberCount, 2);
    assert.deepEqual(runsHolding(runs, password), []);
    assert.deepEqual([...processHolding(restarted.redis.pid, password), ...processHolding(restarted.server.pid, password)], []);

    // --purge removes the password and the ACL file with the rest
    ok(await run(["dev", "down", "--data-dir", dir, "--purge", "--yes"]), "dev down --purge");
    assert.ok(!existsSync(dir), "purge removed the data dir (it held only the stack's files)");
  });

  it("a running plaintext stack is not reused by --secure-redis: exit 4 saying to run dev down first", async () => {
    const dir = path.join(tmp, "plain");
    const up = ok(await run(["dev", "up", "--data-dir", dir]), "dev up");
    assert.deepEqual(up.redisAccess, { secure: false, user: null, tlsPort: null, passwordFile: null, ca: null });
    assert.equal(up.redis.addr, `127.0.0.1:${up.redis.port}`);
    assert.ok(!existsSync(path.join(dir, "redis.password")) && !existsSync(path.join(dir, "pki", "redis.crt")), "a plaintext stack creates no Redis password or certificate");
    const status = ok(await run(["dev", "status", "--data-dir", dir]), "dev status");
    assert.equal(status.redisAccess.secure, false);

    const secure = await run(["dev", "up", "--secure-redis", "--data-dir", dir]);
    assert.equal(secure.code, 4, secure.stderr);
    assert.equal(secure.json.code, "DEV_STACK_REDIS_MODE");
    assert.match(secure.json.message, /runs with a plaintext Redis.*stop it first \(qimctl dev down --data-dir .*\) and run again with --secure-redis/);
    assert.ok(alive(up.redis.pid) && alive(up.server.pid), "still running");
    assert.ok(!existsSync(path.join(dir, "redis.password")), "nothing secure was prepared");
    const text = await run(["dev", "up", "--secure-redis", "--data-dir", dir], { json: false });
    assert.equal(text.code, 4);
    assert.match(text.stderr, /^Error: the dev stack in .* runs with a plaintext Redis/);

    // as it says: dev down, then --secure-redis starts it afresh on the same data
    ok(await run(["dev", "down", "--data-dir", dir]), "dev down");
    const switched = ok(await run(["dev", "up", "--secure-redis", "--data-dir", dir]), "dev up --secure-redis after down");
    assert.deepEqual([switched.status, switched.redisAccess.secure, switched.tenant], ["started", true, up.tenant]);
    ok(await run(["dev", "down", "--data-dir", dir]), "dev down");
    assert.deepEqual(processesMentioning(dir), []);
  });
});
