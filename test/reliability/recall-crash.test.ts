/**
 * Spec 003 C-5 (issue 29): a recall's fixed order survives a crash between its two steps. The
 * server process (real, mTLS, its own redis-server) is SIGKILLed by the fail point
 * conversation.anchor.after-event: the recall event is in the log (history + the bucket's
 * outbox), the message's state not changed yet. Checked from Redis itself, independently of the
 * server: the event at its seq with the target's fields, the target untouched and still counted.
 * Restarted without the fail point, the relay finishes step 2 before it delivers the event: the
 * message is recalled with recall_event_conversation_seq = the event's seq, the event is visible,
 * the other member's cached unread (the conversation list, fed by the dispatch log) goes from 2 to
 * 1, and the CLI's retry answers the same event. 0 lost, exactly one event.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { conversationKeys, decodeHistoryEntry, KeySpace, parseUuid, type Uuid } from "../../core/index.js";
import { FAILPOINTS } from "../../core/support/index.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { failed, ok, run } from "../e2e/qimctl.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

describe("C-5: a recall's server SIGKILLed between the event and the state", { timeout: 240_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let raw: Redis;
  let port: number;
  let context: string;
  let server: ServerProcess | undefined;
  const tenant = randomUUID();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-recall-crash-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    raw = new Redis({ host: redis.host, port: redis.port });
    port = await freePort();
    context = path.join(dir, "context-admin.json");
    writeFileSync(context, JSON.stringify({ endpoint: `localhost:${port}`, ca: pki.ca.certPath, cert: pki.admin.certPath, key: pki.admin.keyPath, tenant }));
  });

  after(async () => {
    await server?.stop();
    raw?.disconnect();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const until = async <T>(what: string, probe: () => Promise<T | undefined>): Promise<T> => {
    for (let i = 0; i < 300; i++) {
      const v = await probe();
      if (v !== undefined) return v;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  it("the event is in the log before the state; after the restart the relay completes it: recalled, visible, counted once, the retry answers the same event", async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log"), port, failpoints: FAILPOINTS.anchorAfterEvent });
    const group = ok(await run(["group", "create", "--owner", a, "--member", b], { context }), "group create").group as Uuid;
    for (const t of ["one", "two"]) ok(await run(["message", "send", "--group", group, "--as", a, "--text", t], { context }), `send ${t}`);
    await until("b's unread 2 in the list", async () => ((ok(await run(["badge", "show", "--user", b], { context }), "badge").totalUnread as number) === 2 ? true : undefined));

    const recall = ["message", "recall", "--group", group, "--seq", "2", "--reason", "C-5", "--yes"];
    const crashed = await run(recall, { context });
    const died = await server.exited;
    assert.equal(died.signal, "SIGKILL", `the server died by its fail point; its log:\n${server.log()}`);
    failed(crashed, 5, "recall while the server dies");

    // Redis as the crash left it, read without the server: step 1 done, step 2 not
    const k = conversationKeys(new KeySpace("qim"), parseUuid(tenant, "tenant"), group);
    const entries = (await raw.zrangebyscore(k.hist, "-inf", "+inf")).map(decodeHistoryEntry);
    assert.deepEqual(entries.map((e) => [e.conversationSeq, e.contentType, e.state ?? null, e.target?.conversationSeq ?? null]), [
      [1, "text/plain", null, null], [2, "text/plain", null, null], [3, "qim.recall.v1", null, 2],
    ], "the event is in the log with its own seq; the target is untouched");
    assert.equal(entries[2]!.target!.senderId, a);
    assert.deepEqual(await raw.lrange(k.outbox, 0, -1), [`${k.outboxRef}|3`], "the event waits in the outbox");
    assert.equal(await raw.zcount(k.unreadidx, 2, 2), 1, "the target still counts");

    server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log"), port });
    const recalled = await until("the target recalled by the relay", async () => {
      const h = ok(await run(["history", "--group", group, "--as", b], { context }), "history");
      const t = (h.records as { conversationSeq: number; state: string | null; recallEventSeq: number | null }[]).find((r) => r.conversationSeq === 2)!;
      return t.state === "recalled" ? h : undefined;
    });
    const records = recalled.records as { conversationSeq: number; state: string | null; recallEventSeq: number | null; targetSeq: number | null; contentType: string; payloadBase64: string }[];
    assert.deepEqual(records.map((r) => [r.conversationSeq, r.contentType, r.state, r.recallEventSeq, r.targetSeq, r.payloadBase64]), [
      [1, "text/plain", null, null, null, Buffer.from("one").toString("base64")],
      [2, "text/plain", "recalled", 3, null, ""],
      [3, "qim.recall.v1", null, null, 2, ""],
    ], "recalled with recall_event_conversation_seq = 3; the event visible; exactly one event");
    assert.deepEqual(await raw.lrange(k.outbox, 0, -1), [], "the event left the outbox");
    // the event reached the conversation list through the dispatch log: b's cached unread 2 -> 1
    await until("b's unread 1 in the list", async () => ((ok(await run(["badge", "show", "--user", b], { context }), "badge").totalUnread as number) === 1 ? true : undefined));

    const retry = ok(await run(recall, { context }), "recall retried");
    assert.deepEqual([retry.targetSeq, retry.eventSeq, retry.duplicate], [2, 3, true]);
    assert.equal(await raw.zcard(k.hist), 3, "the retry wrote nothing");
  });
});
