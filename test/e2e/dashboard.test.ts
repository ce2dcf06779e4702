/**
 * End to end, `qimctl dashboard` against a real redis-server and the real admin server over real
 * mTLS: JSON and plain lines when stdout is not a terminal, a server that is not up yet, refusals (a
 * role; a certificate of another CA exits 6, not retried); and the ink TUI on a real pseudo-terminal
 * (tmux): the screen shows the epoch and the partitions, p pauses, q exits 0, Ctrl+C exits 130.
 * tmux is required: without it this file fails.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { startAdminServer } from "../../server/node.js";
import type { TestPkiName } from "../certs/fixture.js";
import { freePort, startRedis } from "../harness/redis.js";
import { baseEnv, failed, ok, QIMCTL, ROOT, run, startE2eServer, type E2eServer } from "./qimctl.js";

const execFileP = promisify(execFile);

/** What the last tmux capture showed, for a failure message. */
let lastScreen = "";

/** Polls `check` (50 ms apart, at most `attempts` times): a state to reach, never a duration to assert. */
async function eventually<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, attempts = 300): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    last = v;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`${what}: not reached after ${attempts} polls (${String(last)})${lastScreen ? `; the last screen read:\n${lastScreen}` : ""}`);
}

/** `qimctl` as a child whose output can be read while it runs. */
function spawnQimctl(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [QIMCTL, ...args], { cwd: ROOT, env: { ...baseEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (d: Buffer) => { out.stdout += d.toString(); });
  child.stderr.on("data", (d: Buffer) => { out.stderr += d.toString(); });
  const exit = new Promise<number>((resolve) => child.on("exit", (code, signal) => resolve(code ?? (signal ? -1 : 0))));
  return { child, out, exit };
}

describe("qimctl dashboard against the real server", { timeout: 180_000 }, () => {
  let e2e: E2eServer;
  let dir: string;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};
  const contextFor = (who: TestPkiName, endpoint = e2e.endpoint): string => {
    const file = path.join(dir, `context-${who}-${endpoint.replace(/\W/g, "_")}.json`);
    writeFileSync(file, JSON.stringify({ endpoint, ca: e2e.pki.ca.certPath, tenant, cert: e2e.pki[who].certPath, key: e2e.pki[who].keyPath }));
    return file;
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-dashboard-e2e-"));
    e2e = await startE2eServer(dir);
    for (const who of ["operator", "viewer", "drill", "noRole", "otherCaAdmin"] as const) ctx[who] = contextFor(who);
    // something to show: a group, a membership change, their audit entries
    const g = ok(await run(["group", "create", "--owner", randomUUID()], { context: ctx.operator! }), "group create").group as string;
    ok(await run(["membership", "add", "--group", g, "--user", randomUUID()], { context: ctx.operator! }), "membership add");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("--count 3 --output json (stdout not a terminal): three JSON lines with counters, rates, projection and audit lines", async () => {
    const r = await run(["dashboard", "--count", "3", "--interval", "0.2s"], { context: ctx.viewer! });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 3, r.stdout);
    const snaps = lines.map((l) => JSON.parse(l));
    const epoch = await e2e.server.projection.epoch.get();
    for (const s of snaps) {
      assert.deepEqual(Object.keys(s), ["time", "timeMs", "startedAtMs", "rates", "counters", "projection", "audit", "nodes", "cmdBadFiles", "devices"]);
      assert.deepEqual(s.cmdBadFiles, [], "no CMD pending file was set aside (test/e2e/cmd-bad-file.test.ts has one)");
      // a server without a gateway: no device, nothing pushed
      assert.deepEqual([s.devices.connections, s.devices.framesIn, s.devices.pushes], [0, 0, 0]);
      assert.match(s.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.ok(Array.isArray(s.nodes), "the cluster's nodes (empty for a server that is not a node)");
      assert.equal(s.projection.epoch, epoch);
      assert.equal(s.projection.partitions.length, 8);
      for (const p of s.projection.partitions) for (const k of ["partition", "verdict", "checkpoint", "low", "high", "lag"]) assert.ok(k in p, k);
      assert.deepEqual(s.projection.pending.map((q: { instance: number }) => q.instance), [0]);
      assert.ok(s.counters.membershipEvents.join >= 1, "the join of before()");
      for (const k of ["conversationStateQueuedTotal", "conversationStateWritten", "conversationStateFailures", "usersRebuilt", "messagesCommitted", "relayDispatched"]) assert.equal(typeof s.counters[k], "number", k);
      assert.ok(s.audit.some((a: { rpc: string; result: string }) => a.rpc === "/qim.admin.v1.GroupService/AddMembers" && a.result === "OK"));
    }
    assert.equal(snaps[0].rates, null, "no rate from the first snapshot");
    for (const s of snaps.slice(1)) {
      assert.equal(typeof s.rates.membershipEventsPerSec, "number");
      assert.equal(typeof s.rates.membershipRetriesPerSec, "number");
      assert.ok(s.rates.overMs > 0);
    }
  });

  it("plain lines without --output json; the drill role may watch", async () => {
    const r = await run(["dashboard", "--count", "2", "--interval", "200ms"], { context: ctx.drill!, json: false });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 2, r.stdout);
    assert.match(lines[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ epoch=\d+ events\/s=- retries\/s=- lag=\d+ queue_backlog=\d+ queued_total=\d+ rebuilt=\d+ authority_written=\d+ failures=\d+$/);
    assert.match(lines[1]!, /^\S+Z epoch=\d+ events\/s=\d+\.\d retries\/s=\d+\.\d lag=\d+ /);
    assert.equal(r.stderr, "");
  });

  it("refusals are not retried: a certificate without a role exits 6, a bad --interval 2 before connecting", async () => {
    const refused = failed(await run(["dashboard", "--count", "1"], { context: ctx.noRole! }), 6, "no role");
    assert.equal(refused.code, "PERMISSION_DENIED");
    const bad = failed(await run(["dashboard", "--interval", "50ms"], { context: ctx.viewer! }), 2, "bad interval");
    assert.equal(bad.field, "--interval");
  });

  it("a server that is not up yet: one line per failed attempt on stderr, then the snapshots once it is", async () => {
    const port = await freePort();
    const endpoint = `localhost:${port}`;
    const p = spawnQimctl(["dashboard", "--count", "2", "--interval", "0.2s", "--output", "json"], { QIMCTL_CONTEXT: contextFor("viewer", endpoint) });
    const redis = await startRedis();
    let server: Awaited<ReturnType<typeof startAdminServer>> | undefined;
    try {
      await eventually("a disconnection reported", () => /disconnected from/.test(p.out.stderr));
      server = await startAdminServer({
        topology: { kind: "instances", addrs: [redis.addr] },
        listen: `127.0.0.1:${port}`,
        metricsListen: null,
        auditPath: path.join(dir, "audit-late.log"),
        tls: { caPem: readFileSync(e2e.pki.ca.certPath), certPem: readFileSync(e2e.pki.server.certPath), keyPem: readFileSync(e2e.pki.server.keyPath) },
        log: () => {},
      });
      assert.equal(await p.exit, 0, p.out.stderr);
    } finally {
      p.child.kill();
      await server?.close();
      await redis.stop();
    }
    const lines = p.out.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 2, p.out.stdout);
    for (const l of lines) assert.equal(JSON.parse(l).projection.partitions.length, 8);
    const errLines = p.out.stderr.trimEnd().split("\n");
    assert.ok(errLines.length >= 2, p.out.stderr);
    for (const l of errLines.slice(0, -1)) assert.match(l, new RegExp(`^disconnected from ${endpoint}, retrying in \\d+\\.\\d s \\(attempt \\d+\\): \\S`));
    assert.match(errLines[0]!, new RegExp(`cannot reach the server at ${endpoint}: .*ECONNREFUSED`));
    assert.equal(errLines.at(-1), `reconnected to ${endpoint}`);
  });

  describe("on a real terminal (tmux)", () => {
    let sock: string;
    const tmux = async (...args: string[]) => (await execFileP("tmux", ["-S", sock, ...args], { env: baseEnv })).stdout;
    const screen = async (session: string) => (lastScreen = await tmux("capture-pane", "-p", "-t", session));

    /** Starts `qimctl dashboard` in a detached 120×40 tmux session; its exit status lands in the returned file. */
    const startSession = async (session: string, context: string): Promise<string> => {
      const exitFile = path.join(dir, `${session}.exit`);
      const script = path.join(dir, `${session}.sh`);
      writeFileSync(script, [
        "#!/bin/sh",
        `cd '${ROOT}'`,
        // CI=true on every machine: CI services set it, and ink would then draw nothing until exit
        `CI=true QIMCTL_CONTEXT='${context}' '${process.execPath}' '${QIMCTL}' dashboard --interval 0.2s`,
        `echo $? > '${exitFile}'`,
        "",
      ].join("\n"));
      await tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", session, `sh '${script}'`);
      return exitFile;
    };
    const exitStatus = (file: string) => eventually(`${file} written`, () => (existsSync(file) ? readFileSync(file, "utf8").trim() || undefined : undefined));

    before(async () => {
      // a missing tmux fails the suite (.ci/run installs it)
      const { stdout } = await execFileP("tmux", ["-V"]).catch((err: NodeJS.ErrnoException) => assert.fail(`tmux is required for this test (apt-get install tmux): ${err.message}`));
      assert.match(stdout, /^tmux /);
      sock = path.join(dir, "tmux.sock");
    });

    after(async () => {
      if (sock && existsSync(sock)) await tmux("kill-server").catch(() => undefined);
    });

    it("shows the epoch and every partition; p pauses and resumes; q exits 0", async () => {
      const epoch = await e2e.server.projection.epoch.get();
      const exitFile = await startSession("dash", ctx.viewer!);
      const shown = await eventually("the dashboard on screen", async () => {
        const s = await screen("dash");
        // rates need two snapshots; the status line is drawn last, so a capture taken while ink
        // redraws the frame (partition rows cut off) is not taken for the screen
        return /● connected/.test(s) && /PART\s+VERDICT/.test(s) && /membership events\/s \d+\.\d/.test(s) && /p pause\s+q quit/.test(s) && s;
      });
      assert.match(shown, /qimctl dashboard\s+localhost:\d+/);
      assert.match(shown, new RegExp(`epoch ${epoch}\\s+authority redis-hash`));
      // each partition with its window bar, then its lag trend (a sparkline of the history so far)
      for (let p = 0; p < 8; p++) assert.match(shown, new RegExp(`^${p}\\s+OK\\s+\\d+\\s+\\d+\\s+\\d+\\s+\\d+\\s+[█░]+ +[▁▂▃▄▅▆▇█]+$`, "m"), `partition ${p}`);
      assert.match(shown, /WINDOW READ\s+LAG TREND ≤\d+$/m);
      assert.match(shown, /^trends\s+last \d+s \(up to 5m\)$/m);
      assert.match(shown, /^membership events\/s\s+[▁▂▃▄▅▆▇█ ]+now \d+\.\d\s+max \d+\.\d$/m);
      assert.match(shown, /registration queue \(backlog now\)\s+instance 0: \d+/);
      assert.match(shown, /GroupService\/AddMembers\s+OK/);
      assert.match(shown, /membership events\/s \d+\.\d/);

      await tmux("send-keys", "-t", "dash", "p");
      await eventually("PAUSED", async () => /PAUSED/.test(await screen("dash")));
      await tmux("send-keys", "-t", "dash", "p");
      await eventually("resumed", async () => /p pause\s+q quit/.test(await screen("dash")));
      await tmux("send-keys", "-t", "dash", "q");
      assert.equal(await exitStatus(exitFile), "0");
    });

    it("Ctrl+C exits 130", async () => {
      const exitFile = await startSession("dash-int", ctx.viewer!);
      await eventually("the dashboard on screen", async () => /● connected/.test(await screen("dash-int")));
      await tmux("send-keys", "-t", "dash-int", "C-c");
      assert.equal(await exitStatus(exitFile), "130");
    });
  });

  it("a certificate of another CA exits 6 as every command does instead of being retried", async () => {
    // last: its refused handshakes are audit entries, which would push the TUI test's AddMembers out of the tail.
    // The run helper's timeout bounds the run: a retry loop would never reach --count 1 and be killed
    const [json, text] = await Promise.all([
      run(["dashboard", "--count", "1", "--interval", "0.2s"], { context: ctx.otherCaAdmin! }),
      run(["dashboard", "--count", "1", "--interval", "0.2s"], { context: ctx.otherCaAdmin!, json: false }),
    ]);
    const refused = failed(json, 6, "other CA, JSON");
    assert.equal(refused.code, "CERTIFICATE_REFUSED");
    assert.ok(refused.message.startsWith("the server refused this client certificate: "), refused.message);
    assert.equal(text.code, 6, text.stderr);
    assert.match(text.stderr, /^Error: the server refused this client certificate: .+\n/);
    assert.match(text.stderr, /hint: .*not signed by the CA in --ca/);
    for (const r of [json, text]) {
      assert.doesNotMatch(r.stderr, /disconnected from|retrying/, "no retry");
      assert.equal(r.stdout, "");
    }
  });
});
