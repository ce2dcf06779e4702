/**
 * Issue 6, server crash: the admin server is SIGKILLed after a membership change committed in
 * Redis and before it audited or answered it (fail point admin.membership.after-commit, armed
 * through QIM_FAILPOINTS in the CHILD server only). The real `qimctl` sees the connection drop and
 * exits 5; the server is restarted without the fail point; the CLI's retry of the same request
 * answers `duplicate` with the event committed before the crash — the same conversation_seq and
 * message id, read from history — and history holds exactly one control message for that change.
 *
 * Real redis-server, real server process over mTLS, real CLI processes; nothing mocked.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FAILPOINTS } from "../../core/support/index.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { failed, ok, run } from "../e2e/qimctl.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

interface ControlRecord {
  conversationSeq: number;
  messageId: string;
  kind: string;
  membership: { op: string; actor: string; users: string[] } | null;
}

describe("admin server SIGKILLed between a membership commit and its answer", { timeout: 240_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let port: number;
  let auditLog: string;
  let context: string;
  let server: ServerProcess | undefined;
  const tenant = randomUUID();

  const start = async (failpoints?: string) => {
    server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog, port, ...(failpoints ? { failpoints } : {}) });
    return server;
  };

  /** Every membership control record in the group's history, as the owner (a member throughout) sees it. */
  const controlRecords = async (group: string, owner: string): Promise<ControlRecord[]> => {
    const h = ok(await run(["history", "--group", group, "--as", owner, "--limit", "1000"], { context }), "history as the owner");
    return (h.records as ControlRecord[]).filter((r) => r.kind === "control");
  };

  const auditLines = () => readFileSync(auditLog, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-crash-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    port = await freePort();
    auditLog = path.join(dir, "audit.log");
    context = path.join(dir, "context-operator.json");
    writeFileSync(context, JSON.stringify({ endpoint: `localhost:${port}`, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant }));
  });

  after(async () => {
    await server?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const op of ["add", "remove"] as const) {
    it(`membership ${op}: the CLI exits 5, and its retry after a restart answers duplicate with the event committed before the crash`, async () => {
      const owner = randomUUID();
      const user = randomUUID();
      await start(FAILPOINTS.membershipAfterCommit);
      // group create is not a membership change: the fail point does not fire for it
      const created = ok(await run(["group", "create", "--owner", owner, ...(op === "remove" ? ["--member", user] : [])], { context }), "group create");
      const group = created.group as string;
      const before = await controlRecords(group, owner);
      assert.deepEqual(before, [], "a new group has no control record");

      const args = ["membership", op, "--group", group, "--user", user, ...(op === "remove" ? ["--yes"] : [])];
      const crashed = await run(args, { context });
      const died = await server!.exited;
      assert.equal(died.signal, "SIGKILL", `the server died by its fail point; its log:\n${server!.log()}`);
      assert.match(server!.log(), new RegExp(`fail point ${FAILPOINTS.membershipAfterCommit.replace(/\./g, "\\.")}: SIGKILL`));
      const refused = failed(crashed, 5, `membership ${op} while the server dies`);
      assert.equal(refused.code, "UNAVAILABLE", crashed.stderr);
      assert.match(refused.message, /^cannot reach the server at localhost:\d+/);

      await start(); // the same port and Redis, no fail point
      // the change did commit before the crash: exactly one control record for it
      const committed = await controlRecords(group, owner);
      assert.equal(committed.length, 1, `one control record after the crash: ${JSON.stringify(committed)}`);
      const event = committed[0]!;
      assert.deepEqual(event.membership, { op: op === "add" ? "join" : "remove", actor: "00000000-0000-0000-0000-000000000000", users: [user] });
      const shownBefore = ok(await run(["group", "show", "--group", group], { context }), "group show");
      assert.equal(shownBefore.conversationSeq, event.conversationSeq);
      assert.equal(shownBefore.version, 2);

      const retry = ok(await run(args, { context }), `membership ${op} retried`);
      assert.equal(retry.outcome, "duplicate");
      assert.equal(retry.eventConversationSeq, event.conversationSeq, "the retry names the event committed before the crash");
      assert.equal(retry.messageId, event.messageId, "… and its message id");

      // no second control message, no sequence allocated by the retry, no version bump
      const afterRetry = await controlRecords(group, owner);
      assert.deepEqual(afterRetry, committed, "history is unchanged by the retry");
      const shownAfter = ok(await run(["group", "show", "--group", group], { context }), "group show");
      assert.equal(shownAfter.conversationSeq, event.conversationSeq);
      assert.equal(shownAfter.version, 2);

      // the audit log survived the SIGKILL whole, and the retry is audited with the same event
      const lines = auditLines();
      const rpc = `/qim.admin.v1.GroupService/${op === "add" ? "AddMembers" : "RemoveMembers"}`;
      const audited = lines.filter((l) => l.rpc === rpc && (l.arguments as { group?: string }).group === group);
      assert.equal(audited.at(-1)?.result, "OK");
      assert.match(String(audited.at(-1)?.detail), new RegExp(`^duplicate ${op === "add" ? "join" : "remove"} of 1 user\\(s\\) as seq ${event.conversationSeq};`));

      await server!.stop();
      server = undefined;
    });
  }
});
