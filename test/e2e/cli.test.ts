/**
 * End to end: a real redis-server, the real admin server over real mTLS (test PKI), and the real
 * `bin/qimctl.js` as a child process with `--output json` (DESIGN §6, issue 3 acceptance). Nothing
 * is mocked; "nothing changed" is checked through the CLI itself (group show + membership list).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { AdminServer } from "../../server/node.js";
import { CLIENT_NAMES, type TestPkiFiles, type TestPkiName } from "../certs/fixture.js";
import { freePort, type RedisServer } from "../harness/redis.js";
import { baseEnv, failed, ok, QIMCTL, ROOT, run, startE2eServer, type Run } from "./qimctl.js";

describe("qimctl against the real admin server over mTLS", { timeout: 300_000 }, () => {
  let redis: RedisServer;
  let server: AdminServer;
  let dir: string;
  let pki: TestPkiFiles;
  let endpoint: string;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName | "noCert", string>> = {};
  const ids = { owner: randomUUID(), a: randomUUID(), b: randomUUID(), c: randomUUID() };
  let group = "";

  const contextFor = (who: TestPkiName | "noCert", extra: Record<string, unknown> = {}): string => {
    const file = path.join(dir, `context-${who}.json`);
    const pair = who === "noCert" ? {} : { cert: pki[who].certPath, key: pki[who].keyPath };
    writeFileSync(file, JSON.stringify({ endpoint, ca: pki.ca.certPath, tenant, ...pair, ...extra }));
    return file;
  };

  /** group show + membership list: the state "nothing changed" is compared on. */
  const snapshot = async () => {
    const [g, l] = await Promise.all([run(["group", "show", "--group", group], { context: ctx.operator! }), run(["membership", "list", "--group", group], { context: ctx.operator! })]);
    return { group: ok(g, "group show"), members: ok(l, "membership list") };
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-e2e-"));
    ({ pki, redis, server, endpoint } = await startE2eServer(dir));
    for (const who of ["admin", "operator", "viewer", "drill", "otherCaAdmin", "expired"] as const) ctx[who] = contextFor(who);
    ctx.noCert = contextFor("noCert");
  });

  after(async () => {
    await server?.close();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("create, send, add, remove, rejoin: history as each member shows the boundaries of spec 000 acceptance 1–3", async () => {
    const { owner, a, b } = ids;
    const send = async (as: string, text: string) => ok(await run(["message", "send", "--group", group, "--as", as, "--text", text], { context: ctx.drill! }), `send as ${as}`).conversationSeq as number;
    const history = async (as: string) => ok(await run(["history", "--group", group, "--as", as], { context: ctx.drill! }), `history as ${as}`);
    const seqs = (h: { records: { conversationSeq: number }[] }) => h.records.map((r) => r.conversationSeq);

    const created = ok(await run(["group", "create", "--owner", owner, "--member", a], { context: ctx.operator! }), "group create");
    group = created.group;
    assert.deepEqual({ ...created, createdAtMs: 0 }, { tenant, group, owner, version: 1, memberCount: 2, createdAtMs: 0, conversationSeq: 0, state: "ACTIVE", dissolvedAt: null, maxMembers: 1_000_000 });

    assert.equal(await send(a, "m1 before b"), 1);
    assert.equal(await send(owner, "m2 before b"), 2);

    const add = ok(await run(["membership", "add", "--group", group, "--user", b], { context: ctx.operator! }), "add b");
    assert.equal(add.outcome, "committed");
    assert.equal(add.op, "join");
    assert.equal(add.eventConversationSeq, 3);
    assert.equal(add.version, 2);
    assert.equal(add.memberCount, 3);
    assert.deepEqual(add.changed, [b]);
    assert.match(add.idempotencyId, /^[0-9a-f]{32}$/);
    assert.equal(typeof add.messageId, "string");

    assert.equal(await send(owner, "m3 after b joined"), 4);

    // acceptance 1: the joiner sees exactly the join event and what follows; earliest = the join event
    const [hb, sbRun] = await Promise.all([history(b), run(["sessions", "--user", b, "--group", group], { context: ctx.viewer! })]);
    assert.equal(hb.joinedAt, 2);
    assert.equal(hb.leftAt, null);
    assert.equal(hb.state, "ACTIVE");
    assert.equal(hb.earliestAvailableConversationSeq, 3);
    assert.deepEqual(seqs(hb), [3, 4]);
    assert.equal(hb.records[0].kind, "control");
    assert.deepEqual(hb.records[0].membership, { op: "join", actor: "00000000-0000-0000-0000-000000000000", users: [b] });
    assert.equal(hb.records[1].text, "m3 after b joined");
    // …and messages before the join are not unread for them (the control message never is)
    const sb = ok(sbRun, "sessions b");
    assert.deepEqual(sb.summaries.map((s: any) => [s.group, s.unread, s.head?.conversationSeq]), [[group, 1, 4]]);

    const rm = ok(await run(["membership", "remove", "--group", group, "--user", a, "--yes"], { context: ctx.operator! }), "remove a");
    assert.equal(rm.outcome, "committed");
    assert.equal(rm.op, "remove");
    assert.equal(rm.eventConversationSeq, 5);
    assert.equal(rm.version, 3);
    assert.equal(rm.memberCount, 2);
    assert.equal(await send(owner, "m4 while a is out"), 6);

    // acceptance 2: the removed user's history and session head stop before left_at
    const [ha, saRun] = await Promise.all([history(a), run(["sessions", "--user", a, "--group", group], { context: ctx.viewer! })]);
    assert.equal(ha.leftAt, 5);
    assert.equal(ha.state, "REMOVED");
    assert.deepEqual(seqs(ha), [1, 2, 3, 4]);
    const sa = ok(saRun, "sessions a");
    assert.equal(sa.summaries[0].head.conversationSeq, 4);
    assert.equal(sa.summaries[0].leftAt, 5);

    // acceptance 3: a rejoin replaces the interval; what was sent while out stays invisible
    const rejoin = ok(await run(["membership", "add", "--group", group, "--user", a], { context: ctx.operator! }), "rejoin a");
    assert.equal(rejoin.eventConversationSeq, 7);
    assert.equal(rejoin.version, 4);
    assert.equal(await send(owner, "m5 after a rejoined"), 8);
    const [ha2, hOwner, listRun, pageRun] = await Promise.all([
      history(a),
      history(owner),
      run(["membership", "list", "--group", group], { context: ctx.viewer! }),
      run(["history", "--group", group, "--as", owner, "--after", "2", "--limit", "3"], { context: ctx.drill! }),
    ]);
    assert.equal(ha2.joinedAt, 6);
    assert.equal(ha2.leftAt, null);
    assert.equal(ha2.state, "ACTIVE");
    assert.equal(ha2.earliestAvailableConversationSeq, 7);
    assert.deepEqual(seqs(ha2), [7, 8]);

    assert.deepEqual(seqs(hOwner), [1, 2, 3, 4, 5, 6, 7, 8]);

    const list = ok(listRun, "membership list");
    assert.equal(list.version, 4);
    const byUser = Object.fromEntries(list.members.map((m: any) => [m.userId, m]));
    assert.deepEqual(byUser[a], { userId: a, joinedAt: 6, leftAt: null, state: "ACTIVE" });
    assert.deepEqual(byUser[b], { userId: b, joinedAt: 2, leftAt: null, state: "ACTIVE" });
    assert.deepEqual(byUser[owner], { userId: owner, joinedAt: 0, leftAt: null, state: "ACTIVE" });

    // paging: --after/--limit
    const page = ok(pageRun, "history page");
    assert.deepEqual(seqs(page), [3, 4, 5]);
  });

  it("re-running a change that already took effect exits 0 and says nothing changed", async () => {
    const before = await snapshot();
    const again = ok(await run(["membership", "add", "--group", group, "--user", ids.b], { context: ctx.operator! }), "re-add b");
    assert.ok(["noop", "duplicate"].includes(again.outcome), again.outcome);
    assert.equal(again.version, before.group.version);
    const text = await run(["membership", "add", "--group", group, "--user", ids.b], { context: ctx.operator!, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Nothing changed: /);
    const removeAgain = ok(await run(["membership", "remove", "--group", group, "--user", ids.c, "--yes"], { context: ctx.operator! }), "remove a non-member");
    assert.equal(removeAgain.outcome, "noop");
    assert.deepEqual(await snapshot(), before);
  });

  it("--dry-run prints the plan and changes nothing", async () => {
    const before = await snapshot();
    const plan = ok(await run(["membership", "add", "--group", group, "--user", ids.c, "--user", ids.b, "--dry-run"], { context: ctx.operator! }), "dry-run add");
    assert.equal(plan.outcome, "planned");
    assert.deepEqual(plan.changed, [ids.c], "targets after filtering (b is already a member)");
    assert.equal(plan.eventConversationSeq, null);
    assert.match(plan.idempotencyId, /^[0-9a-f]{32}$/);
    assert.equal(plan.audienceSize, before.group.memberCount + 1);
    assert.equal(plan.version, before.group.version);
    const text = await run(["membership", "remove", "--group", group, "--user", ids.a, "--dry-run"], { context: ctx.operator!, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Dry run: would remove 1 member\(s\) from group /);
    assert.match(text.stdout, /idempotency id: +[0-9a-f]{32}/);
    assert.deepEqual(await snapshot(), before);
  });

  it("message send --client-message-id: a retry answers the original with its version; another text under the id exits 4 IDEMPOTENCY_CONFLICT", async () => {
    const owner = randomUUID();
    const g = ok(await run(["group", "create", "--owner", owner], { context: ctx.operator! }), "group create").group as string;
    const cmid = randomUUID();
    const send = (text: string) => run(["message", "send", "--group", g, "--as", owner, "--text", text, "--client-message-id", cmid], { context: ctx.drill! });
    const first = ok(await send("deploy done"), "first send");
    assert.deepEqual([first.conversationSeq, first.version, first.duplicate], [1, 1, false]);
    const retry = ok(await send("deploy done"), "retry");
    assert.deepEqual([retry.conversationSeq, retry.messageId, retry.version, retry.duplicate], [1, first.messageId, 1, true]);
    const conflict = failed(await send("deploy failed"), 4, "other text under the same id");
    assert.equal(conflict.code, "IDEMPOTENCY_CONFLICT");
    assert.match(conflict.message, new RegExp(`client message id ${cmid} was already used for a different message \\(seq 1\\)`));
    assert.equal(ok(await run(["group", "show", "--group", g], { context: ctx.operator! }), "group show").conversationSeq, 1, "no seq consumed");
  });

  it("--expect-version with a stale version exits 4 and changes nothing; the current one commits", async () => {
    const before = await snapshot();
    const stale = failed(await run(["membership", "add", "--group", group, "--user", ids.c, "--expect-version", String(before.group.version - 1)], { context: ctx.operator! }), 4, "stale version");
    assert.equal(stale.code, "VERSION_CONFLICT");
    assert.deepEqual(await snapshot(), before);
    const current = ok(await run(["membership", "add", "--group", group, "--user", ids.c, "--expect-version", String(before.group.version)], { context: ctx.operator! }), "current version");
    assert.equal(current.outcome, "committed");
    assert.equal(current.version, before.group.version + 1);
  });

  it("membership remove asks on a terminal (script(1) gives it one): n changes nothing (130), y removes", async () => {
    const owner = randomUUID();
    const user = randomUUID();
    const g = ok(await run(["group", "create", "--owner", owner, "--member", user], { context: ctx.operator! }), "group create").group as string;
    const onTerminal = (answer: string) =>
      new Promise<Run>((resolve) => {
        const child = spawn("script", ["-qec", `${process.execPath} ${QIMCTL} membership remove --group ${g} --user ${user}`, "/dev/null"], {
          cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: ctx.operator! },
        });
        let out = "";
        child.stdout.on("data", (d: Buffer) => (out += d.toString()));
        child.stderr.on("data", (d: Buffer) => (out += d.toString()));
        child.once("exit", (code) => resolve({ code: code ?? -1, stdout: out, stderr: "", json: undefined }));
        child.stdin.end(`${answer}\n`);
      });
    const no = await onTerminal("n");
    assert.equal(no.code, 130, no.stdout);
    assert.match(no.stdout, new RegExp(`Remove 1 member\\(s\\) from group ${g}\\? \\[y/N\\]`));
    assert.match(no.stdout, /not confirmed; nothing changed/);
    assert.equal(ok(await run(["group", "show", "--group", g], { context: ctx.operator! }), "group show").version, 1);
    const yes = await onTerminal("y");
    assert.equal(yes.code, 0, yes.stdout);
    assert.match(yes.stdout, new RegExp(`Removed 1 member\\(s\\) from group ${g}: event seq 1, version 2, 1 members`));
  });

  it("destructive commands without --yes on a non-terminal exit 2 naming --yes and change nothing; --dry-run needs no --yes", async () => {
    const before = await snapshot();
    const remove = failed(await run(["membership", "remove", "--group", group, "--user", ids.a], { context: ctx.operator! }), 2, "remove without --yes");
    assert.equal(remove.field, "--yes");
    assert.match(remove.message, /not a terminal.*pass --yes to remove members/);
    const text = await run(["membership", "remove", "--group", group, "--user", ids.a], { context: ctx.operator!, json: false });
    assert.equal(text.code, 2, text.stderr);
    assert.equal(text.stdout, "");
    assert.match(text.stderr, /^Error: --yes: stdin is not a terminal, so there is no prompt: pass --yes to remove members/);
    const plan = ok(await run(["membership", "remove", "--group", group, "--user", ids.a, "--dry-run"], { context: ctx.operator! }), "dry-run remove without --yes");
    assert.equal(plan.outcome, "planned");
    assert.deepEqual(await snapshot(), before);

    // refused before connecting: the endpoint of this context has no listener
    const nobody = contextFor("drill", { endpoint: `localhost:${await freePort()}` });
    const drill = failed(await run(["drill", "rebuild", "--sample", "5"], { context: nobody }), 2, "drill without --yes");
    assert.equal(drill.field, "--yes");
    const stack = mkdtempSync(path.join(dir, "dev-"));
    writeFileSync(path.join(stack, "context.json"), "{}");
    const purge = failed(await run(["dev", "down", "--data-dir", stack, "--purge"]), 2, "dev down --purge without --yes");
    assert.equal(purge.field, "--yes");
    assert.deepEqual(readdirSync(stack), ["context.json"], "nothing purged");
  });

  it("refusals: a viewer's mutation, another CA, an expired certificate, no certificate (exit 6); nothing changed; audited", async () => {
    const before = await snapshot();
    const [viewer, otherCa, otherCaText, expired, noCert] = await Promise.all([
      run(["membership", "add", "--group", group, "--user", randomUUID()], { context: ctx.viewer! }),
      run(["membership", "add", "--group", group, "--user", randomUUID()], { context: ctx.otherCaAdmin! }),
      run(["group", "show", "--group", group], { context: ctx.otherCaAdmin!, json: false }),
      run(["group", "show", "--group", group], { context: ctx.expired! }),
      run(["group", "show", "--group", group], { context: ctx.noCert! }),
    ]);
    assert.equal(failed(viewer, 6, "viewer add").code, "PERMISSION_DENIED");
    const refused = failed(otherCa, 6, "other CA");
    assert.equal(refused.code, "CERTIFICATE_REFUSED");
    assert.ok(refused.message.startsWith("the server refused this client certificate: "), refused.message);
    assert.equal(otherCaText.code, 6, otherCaText.stderr);
    assert.match(otherCaText.stderr, /^Error: the server refused this client certificate: .+\n/);
    assert.match(otherCaText.stderr, /hint: .*not signed by the CA in --ca/);
    assert.doesNotMatch(otherCaText.stderr, /cannot reach the server/);
    assert.doesNotMatch(otherCaText.stderr, /\n\s+at /, "no stack trace");
    assert.equal(failed(expired, 6, "expired").code, "CERTIFICATE_REFUSED");
    const none = failed(noCert, 6, "no certificate");
    assert.match(none.message, /alert certificate required/);
    assert.deepEqual(await snapshot(), before);

    const audit = ok(await run(["audit", "tail", "--limit", "100"], { context: ctx.operator! }), "audit tail");
    const entries = audit.entries as { principal: string; rpc: string; result: string; detail: string; arguments: any }[];
    assert.ok(entries.some((e) => e.principal === CLIENT_NAMES.viewer && e.rpc.endsWith("/AddMembers") && e.result === "PERMISSION_DENIED" && e.arguments.group === group), "the viewer's refusal is audited");
    // the server cannot name who it refused (the socket is gone by then), only why
    const handshakes = entries.filter((e) => e.rpc === "tls-handshake" && e.result === "UNAUTHENTICATED").map((e) => e.detail);
    assert.ok(handshakes.includes("UNABLE_TO_VERIFY_LEAF_SIGNATURE"), `another CA's refusal is audited: ${handshakes.join(", ")}`);
    assert.ok(handshakes.includes("CERT_HAS_EXPIRED"), `the expired certificate's refusal is audited: ${handshakes.join(", ")}`);
  });

  it("connection failures: a closed port exits 5; a server that never answers hits --timeout (5); Ctrl+C exits 130", async () => {
    const closed = `localhost:${await freePort()}`;
    const r = failed(await run(["group", "show", "--group", group, "--endpoint", closed], { context: ctx.operator! }), 5, "closed port");
    assert.equal(r.code, "UNAVAILABLE");
    assert.ok(r.message.startsWith(`cannot reach the server at ${closed}: `), r.message);
    assert.match(r.message, /ECONNREFUSED/);

    // a TCP listener that accepts and never speaks: the TLS handshake hangs
    const silent = net.createServer(() => {});
    const sockets: net.Socket[] = [];
    silent.on("connection", (s) => sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const silentEndpoint = `localhost:${(silent.address() as net.AddressInfo).port}`;
    try {
      const t = failed(await run(["group", "show", "--group", group, "--endpoint", silentEndpoint, "--timeout", "0.5"], { context: ctx.operator! }), 5, "timeout");
      assert.equal(t.code, "DEADLINE_EXCEEDED");

      const child = spawn(process.execPath, [QIMCTL, "group", "show", "--group", group, "--endpoint", silentEndpoint, "--json"], { cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: ctx.operator! } });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const connected = new Promise<void>((resolve) => silent.once("connection", () => resolve()));
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      await connected;
      child.kill("SIGINT");
      assert.equal(await exited, 130);
      assert.equal(JSON.parse(stderr).error.code, "INTERRUPTED");
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it("bad input exits 2 naming the flag, before connecting (the endpoint has no listener)", async () => {
    const nobody = contextFor("operator", { endpoint: `localhost:${await freePort()}` });
    const users1001 = Array.from({ length: 1001 }, () => randomUUID()).join(",");
    const cases: [string[], string][] = [
      [["group", "show", "--group", "not-a-uuid"], "--group"],
      [["membership", "add", "--group", randomUUID(), "--user", "123"], "--user"],
      [["membership", "add", "--group", randomUUID(), "--user", users1001], "--user"],
      [["membership", "remove", "--group", randomUUID()], "--user"],
      [["group", "create", "--owner", randomUUID(), "--member", "x"], "--member"],
      [["history", "--group", randomUUID(), "--as", randomUUID(), "--limit", "1001"], "--limit"],
      [["message", "send", "--group", randomUUID(), "--as", "nope", "--text", "hi"], "--as"],
      [["message", "send", "--group", randomUUID(), "--as", randomUUID(), "--text", "hi", "--client-message-id", "1"], "--client-message-id"],
      [["sessions", "--user", randomUUID(), "--group", "g"], "--group"],
      [["group", "show", "--group", randomUUID(), "--tenant", "t"], "--tenant"],
      [["group", "show", "--group", randomUUID(), "--endpoint", "no-port"], "--endpoint"],
    ];
    const results = await Promise.all(cases.map(([args]) => run(args, { context: nobody })));
    results.forEach((r, i) => {
      const [args, field] = cases[i]!;
      const e = failed(r, 2, args.join(" "));
      assert.equal(e.field, field, `${args.join(" ")}: ${e.message}`);
    });
  });

  it("certs: issue a client certificate from the CA and use the context it writes; init and issue-server", async () => {
    const certsDir = path.join(dir, "issued");
    const contextFile = path.join(dir, "written-context.json");
    const issued = ok(await run([
      "certs", "issue", "--name", "carol", "--role", "operator", "--days", "7", "--dir", certsDir,
      "--ca-cert", pki.ca.certPath, "--ca-key", pki.ca.keyPath,
      "--write-context", "--context", contextFile, "--endpoint", endpoint, "--tenant", tenant,
    ]), "certs issue");
    assert.deepEqual(issued.subject, { CN: "carol", OU: "operator" });
    assert.equal(issued.role, "operator");
    assert.match(issued.fingerprint256, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    assert.ok(Math.abs(Date.parse(issued.notAfter) - Date.now() - 7 * 86_400_000) < 3_600_000);
    assert.equal(statSync(issued.keyPath).mode & 0o777, 0o600);
    assert.equal(issued.contextPath, contextFile);
    assert.equal(issued.contextName, null, "a path: a context file, not a named context");
    const shown = ok(await run(["group", "show", "--group", group], { context: contextFile }), "group show with the written context");
    assert.equal(shown.group, group);
    const audit = ok(await run(["audit", "tail", "--limit", "5"], { context: contextFile }), "audit as carol");
    assert.ok(Array.isArray(audit.entries));

    const again = failed(await run(["certs", "issue", "--name", "carol", "--role", "viewer", "--dir", certsDir, "--ca-cert", pki.ca.certPath, "--ca-key", pki.ca.keyPath]), 4, "no overwrite");
    assert.equal(again.code, "ALREADY_EXISTS");

    const caDir = path.join(dir, "new-ca");
    const ca = ok(await run(["certs", "init", "--dir", caDir, "--days", "30"]), "certs init");
    assert.equal(ca.subject.CN, "qimctl CA");
    assert.equal(statSync(path.join(caDir, "ca.key")).mode & 0o777, 0o600);
    const srv = ok(await run(["certs", "issue-server", "--dir", caDir, "--host", "localhost", "--host", "127.0.0.1"]), "certs issue-server");
    assert.deepEqual(srv.sans, ["localhost", "127.0.0.1"]);
    assert.equal(statSync(srv.keyPath).mode & 0o777, 0o600);
    const text = await run(["certs", "issue", "--name", "dave", "--role", "viewer", "--dir", caDir], { json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /CN=dave, OU=viewer \(role viewer\)/);
    assert.match(text.stdout, /expires: +\d{4}-/);
    assert.match(text.stdout, /SHA-256: +([0-9A-F]{2}:){31}[0-9A-F]{2}/);
  });

  it("server start runs the same daemon in the foreground and stops on SIGTERM", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [
      QIMCTL, "server", "start", "--listen", `127.0.0.1:${port}`, "--metrics-listen", "off", "--redis", redis.addr,
      "--tls-ca", pki.ca.certPath, "--tls-cert", pki.server.certPath, "--tls-key", pki.server.keyPath, "--audit-log", path.join(dir, "audit-2.log"),
    ], { cwd: ROOT, env: baseEnv });
    let stderr = "";
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stderr.on("data", (d: Buffer) => {
          stderr += d.toString();
          if (stderr.includes("listening on")) resolve();
        });
        child.once("exit", (code) => reject(new Error(`server start exited ${code}: ${stderr}`)));
      });
      const shown = ok(await run(["group", "show", "--group", group, "--endpoint", `localhost:${port}`], { context: ctx.viewer! }), "group show via server start");
      assert.equal(shown.group, group);
    } finally {
      child.kill("SIGTERM");
    }
    assert.equal(await exited, 0, stderr);
    const missing = failed(await run(["server", "start", "--listen", `127.0.0.1:${port}`, "--redis", redis.addr]), 2, "server start without TLS");
    assert.equal(missing.field, "--tls-ca");
  });

  it("qimctl --help and every <topic> <verb> --help show a description and an example", async () => {
    const root = await run(["--help"], { json: false });
    assert.equal(root.code, 0);
    assert.match(root.stdout, /DESCRIPTION\n/);
    assert.match(root.stdout, /EXAMPLES\n[\s\S]*\$ qimctl /);
    assert.match(root.stdout, /EXIT CODES\n[\s\S]*130/);

    const commandsDir = path.join(ROOT, "dist", "cli", "commands");
    const ids: string[] = [];
    const walk = (d: string, prefix: string[]) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(path.join(d, e.name), [...prefix, e.name]);
        else if (e.name.endsWith(".js")) ids.push([...prefix, ...(e.name === "index.js" ? [] : [e.name.slice(0, -3)])].join(" "));
      }
    };
    walk(commandsDir, []);
    assert.ok(ids.length >= 13, `found ${ids.join(", ")}`);
    // four at a time: every command at once (50 processes on 2 cores) ran past run()'s 30 s timeout
    const helps: Awaited<ReturnType<typeof run>>[] = [];
    for (let i = 0; i < ids.length; i += 4) helps.push(...(await Promise.all(ids.slice(i, i + 4).map((id) => run([...id.split(" "), "--help"], { json: false })))));
    helps.forEach((h, i) => {
      const id = ids[i]!;
      assert.equal(h.code, 0, `${id} --help: ${h.stderr}`);
      assert.match(h.stdout, /\nDESCRIPTION\n {2}\S/, `${id}: description`);
      assert.match(h.stdout, new RegExp(`\\nEXAMPLES\\n[\\s\\S]*\\$ qimctl ${id}`), `${id}: example`);
    });
  });
});
