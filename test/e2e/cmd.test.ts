/**
 * `qimctl cmd …` through the real CLI against the real admin server over mTLS on a real
 * redis-server (issue 13): send on a command channel to named users, sync as a recipient, ack,
 * state and pending after it, idempotent resend, no-persist, owner outside a cluster, the roles;
 * bad input refused naming the flag before anything is sent; an operator's `cmd sync` (a peek)
 * between an application's /message/sync and its /message/syncack over the real HTTP API
 * (issue 24). Expected values come from what the test sent.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { issueClientCert } from "../../certs/pki.js";
import { testPki, type TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl cmd against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};

  const contextFor = (who: TestPkiName): string => writeContext(e2e, dir, tenant, who);

  // the application server's certificate (OU service) for the HTTP API
  let service: { certPem: string; keyPem: string };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-cmd-"));
    e2e = await startE2eServer(dir, { syncTenant: tenant });
    for (const who of ["admin", "operator", "viewer", "drill"] as const) ctx[who] = contextFor(who);
    service = issueClientCert((await testPki()).ca, { name: "app-1", role: "service" });
  });

  /** POST https://localhost:PORT/PATH as the application server; HTTP status and parsed JSON body. */
  const post = (p: string, body: object): Promise<{ status: number; json: any }> => new Promise((resolve, reject) => {
    const req = request({
      host: "localhost", port: e2e.server.sync!.port, path: p, method: "POST", ca: readFileSync(e2e.pki.ca.certPath), cert: service.certPem, key: service.keyPem,
      headers: { "content-type": "application/json" },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString("utf8")) }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("send → sync as the recipient → ack → nothing left; state shows the read seq; a resend with the same key is a duplicate", async () => {
    const [u1, u2] = [randomUUID(), randomUUID()];
    const channel = `ops-${randomUUID().slice(0, 8)}`;
    const first = ok(await run(["cmd", "send", "--channel", channel, "--to", `${u1},${u2}`, "--text", "reload", "--client-msg-no", "k1"], { context: ctx.drill! }), "send");
    assert.equal(first.message.channelId, `${channel}____cmd`);
    assert.equal(first.message.messageSeq, 1);
    assert.equal(first.message.text, "reload");
    assert.deepEqual([...first.message.recipients].sort(), [u1, u2].sort());
    assert.equal(first.duplicate, false);
    const again = ok(await run(["cmd", "send", "--channel", `${channel}____cmd`, "--to", `${u1},${u2}`, "--text", "reload", "--client-msg-no", "k1"], { context: ctx.drill! }), "resend");
    assert.equal(again.duplicate, true);
    assert.equal(again.message.messageSeq, 1);
    const second = ok(await run(["cmd", "send", "--channel", channel, "--to", u2, "--payload-base64", Buffer.from([0xff, 0xfe, 0x00]).toString("base64")], { context: ctx.operator! }), "send 2");
    assert.equal(second.message.messageSeq, 2);
    assert.equal(second.message.text, null, "bytes that are not UTF-8 have no text");

    const synced = ok(await run(["cmd", "sync", "--user", u2, "--as-app"], { context: ctx.operator! }), "sync u2");
    assert.deepEqual(synced.messages.map((m: { messageSeq: number }) => m.messageSeq), [1, 2]);
    assert.equal(Buffer.from(synced.messages[1].payloadBase64, "base64").toString("hex"), "fffe00");
    assert.ok(Number.isInteger(synced.generation) && synced.generation > 0, "--as-app records a generation");
    const acked = ok(await run(["cmd", "ack", "--user", u2], { context: ctx.operator! }), "ack u2");
    assert.equal(acked.generation, synced.generation, "the ack names the generation it applied");
    assert.equal(acked.advanced, 1);
    const empty = ok(await run(["cmd", "sync", "--user", u2], { context: ctx.operator! }), "sync u2 again");
    assert.deepEqual(empty.messages, []);
    assert.equal(empty.generation, null, "a plain cmd sync is a peek");
    const state = ok(await run(["cmd", "state", "--user", u2], { context: ctx.viewer! }), "state u2");
    assert.deepEqual(state.rows.map((r: { channelId: string; readSeq: number }) => [r.channelId, r.readSeq]), [[`${channel}____cmd`, 2]]);
    const pending = ok(await run(["cmd", "pending", "--user", u2], { context: ctx.viewer! }), "pending u2");
    assert.deepEqual(pending.entries, [], "the ack cleared the pending entry");

    // u1 got only message 1
    const u1sync = ok(await run(["cmd", "sync", "--user", u1], { context: ctx.admin! }), "sync u1");
    assert.deepEqual(u1sync.messages.map((m: { messageSeq: number }) => m.messageSeq), [1]);
  });

  it("issue 24: the app syncs A over HTTP, an operator's cmd sync sees A and B, the app acks seq 1: 200, and its next sync answers B", async () => {
    const u = randomUUID();
    const channel = `ops-${randomUUID().slice(0, 8)}`;
    ok(await run(["cmd", "send", "--channel", channel, "--to", u, "--text", "A"], { context: ctx.drill! }), "send A");
    const appSync = await post("/message/sync", { uid: u, message_seq: 0, limit: 100 });
    assert.equal(appSync.status, 200);
    assert.deepEqual(appSync.json.map((m: { message_seq: number; channel_id: string }) => [m.channel_id, m.message_seq]), [[channel, 1]]);
    ok(await run(["cmd", "send", "--channel", channel, "--to", u, "--text", "B"], { context: ctx.drill! }), "send B");
    const look = await run(["cmd", "sync", "--user", u], { context: ctx.operator! });
    const seen = ok(look, "operator's cmd sync");
    assert.deepEqual(seen.messages.map((m: { messageSeq: number; text: string }) => [m.messageSeq, m.text]), [[1, "A"], [2, "B"]]);
    assert.equal(seen.generation, null, "the operator's look records no generation");
    const ack = await post("/message/syncack", { uid: u, last_message_seq: 1 });
    assert.deepEqual([ack.status, ack.json], [200, { status: 200 }]);
    const next = await post("/message/sync", { uid: u, message_seq: 1, limit: 100 });
    assert.equal(next.status, 200);
    assert.deepEqual(next.json.map((m: { message_seq: number; payload: string }) => [m.message_seq, Buffer.from(m.payload, "base64").toString()]), [[2, "B"]], "B is delivered");
    // table mode of both: the peek says it recorded nothing; once the app acked B, an ack finds
    // nothing recorded and claims no seq
    const text = await run(["cmd", "sync", "--user", u], { context: ctx.operator!, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /1 message\(s\) for user .*; a peek: no generation recorded/);
    assert.deepEqual((await post("/message/syncack", { uid: u, last_message_seq: 2 })).json, { status: 200 });
    const ackText = await run(["cmd", "ack", "--user", u, "--last-seq", "7"], { context: ctx.operator!, json: false });
    assert.equal(ackText.code, 0, ackText.stderr);
    assert.match(ackText.stdout, /^Nothing acked for user .*: no sync generation to apply/);
    assert.doesNotMatch(ackText.stdout, /seq 7/, "--last-seq bounds nothing and is not claimed");
  });

  it("cmd ack --last-seq N applies the whole latest generation, whatever N; table and JSON name the generation, not N", async () => {
    const u = randomUUID();
    const channel = `ops-${randomUUID().slice(0, 8)}`;
    for (const t of ["one", "two", "three"]) ok(await run(["cmd", "send", "--channel", channel, "--to", u, "--text", t], { context: ctx.drill! }), `send ${t}`);
    const synced = ok(await run(["cmd", "sync", "--user", u, "--as-app"], { context: ctx.operator! }), "sync as the app");
    assert.deepEqual(synced.messages.map((m: { messageSeq: number }) => m.messageSeq), [1, 2, 3]);
    const acked = await run(["cmd", "ack", "--user", u, "--last-seq", "1"], { context: ctx.operator!, json: false });
    assert.equal(acked.code, 0, acked.stderr);
    // (whether the pending entry was flushed before the ack is the buffer's timing: not asserted)
    assert.ok(acked.stdout.startsWith(`Acked sync generation ${synced.generation} of user ${u}: 1 durable row(s) advanced, `), acked.stdout);
    assert.doesNotMatch(acked.stdout, /seq 1/, "--last-seq is not claimed");
    const state = ok(await run(["cmd", "state", "--user", u], { context: ctx.viewer! }), "state");
    assert.deepEqual(state.rows.map((r: { readSeq: number }) => r.readSeq), [3], "read to 3, what the sync returned, not 1");
    const again = ok(await run(["cmd", "ack", "--user", u, "--last-seq", "3"], { context: ctx.operator! }), "second ack");
    assert.deepEqual([again.generation, again.advanced, again.cleared], [null, 0, 0], "nothing left to apply");
  });

  it("no-persist: delivered, not stored, nothing to sync", async () => {
    const u = randomUUID();
    const r = ok(await run(["cmd", "send", "--channel", "np", "--to", u, "--no-persist", "--text", "ping"], { context: ctx.drill! }), "no-persist send");
    assert.equal(r.message.noPersist, true);
    assert.equal(r.message.messageSeq, 0);
    assert.deepEqual(ok(await run(["cmd", "sync", "--user", u], { context: ctx.drill! }), "sync").messages, []);
  });

  it("owner outside a cluster; flush of the answering server; a viewer may not send or sync", async () => {
    const u = randomUUID();
    const owner = ok(await run(["cmd", "owner", "--user", u], { context: ctx.viewer! }), "owner");
    assert.equal(owner.clustered, false);
    assert.ok(Number.isInteger(owner.slot) && owner.slot >= 0 && owner.slot < 256);
    const flushed = ok(await run(["cmd", "flush"], { context: ctx.operator! }), "flush");
    assert.ok(flushed.failedBatches === 0);
    failed(await run(["cmd", "send", "--channel", "c", "--to", u, "--text", "x"], { context: ctx.viewer! }), 6, "viewer send");
    failed(await run(["cmd", "sync", "--user", u], { context: ctx.viewer! }), 6, "viewer sync");
  });

  it("bad input is refused naming the flag, before connecting (exit 2, nothing sent)", async () => {
    const u = randomUUID();
    const cases: [string[], string][] = [
      [["cmd", "send", "--channel", "c", "--to", u], "--text"],
      [["cmd", "send", "--channel", "c", "--type", "0", "--text", "x"], "--type"],
      [["cmd", "send", "--channel", "a b", "--text", "x"], "--channel"],
      [["cmd", "send", "--channel", "c", "--to", "nope", "--text", "x"], "--to"],
      [["cmd", "send", "--channel", "c", "--payload-base64", "!!"], "--payload-base64"],
      [["cmd", "sync", "--user", "u"], "--user"],
      [["cmd", "sync", "--user", u, "--limit", "0"], "--limit"],
      [["cmd", "ack", "--user", u, "--last-seq", "0"], "--last-seq"],
      [["cmd", "flush", "--node", "no such node!"], "--node"],
    ];
    const before = (await e2e.server.audit.tail(1000)).length;
    for (const [args, field] of cases) {
      const f = failed(await run(args, { context: ctx.admin! }), 2, args.join(" "));
      assert.equal(f.field, field, args.join(" "));
    }
    assert.equal((await e2e.server.audit.tail(1000)).length, before, "nothing reached the server");
  });
});
