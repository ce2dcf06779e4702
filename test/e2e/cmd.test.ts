/**
 * `qimctl cmd …` through the real CLI against the real admin server over mTLS on a real
 * redis-server (issue 13): send on a command channel to named users, sync as a recipient, ack,
 * state and pending after it, idempotent resend, no-persist, owner outside a cluster, the roles;
 * bad input refused naming the flag before anything is sent. Expected values come from what the
 * test sent.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer } from "./qimctl.js";

describe("qimctl cmd against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};

  const contextFor = (who: TestPkiName): string => {
    const file = path.join(dir, `context-${who}.json`);
    writeFileSync(file, JSON.stringify({ endpoint: e2e.endpoint, ca: e2e.pki.ca.certPath, tenant, cert: e2e.pki[who].certPath, key: e2e.pki[who].keyPath }));
    return file;
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-cmd-"));
    e2e = await startE2eServer(dir);
    for (const who of ["admin", "operator", "viewer", "drill"] as const) ctx[who] = contextFor(who);
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

    const synced = ok(await run(["cmd", "sync", "--user", u2], { context: ctx.operator! }), "sync u2");
    assert.deepEqual(synced.messages.map((m: { messageSeq: number }) => m.messageSeq), [1, 2]);
    assert.equal(Buffer.from(synced.messages[1].payloadBase64, "base64").toString("hex"), "fffe00");
    const acked = ok(await run(["cmd", "ack", "--user", u2, "--last-seq", "2"], { context: ctx.operator! }), "ack u2");
    assert.equal(acked.lastMessageSeq, 2);
    const empty = ok(await run(["cmd", "sync", "--user", u2], { context: ctx.operator! }), "sync u2 again");
    assert.deepEqual(empty.messages, []);
    const state = ok(await run(["cmd", "state", "--user", u2], { context: ctx.viewer! }), "state u2");
    assert.deepEqual(state.rows.map((r: { channelId: string; readSeq: number }) => [r.channelId, r.readSeq]), [[`${channel}____cmd`, 2]]);
    const pending = ok(await run(["cmd", "pending", "--user", u2], { context: ctx.viewer! }), "pending u2");
    assert.deepEqual(pending.entries, [], "the ack cleared the pending entry");

    // u1 got only message 1
    const u1sync = ok(await run(["cmd", "sync", "--user", u1], { context: ctx.admin! }), "sync u1");
    assert.deepEqual(u1sync.messages.map((m: { messageSeq: number }) => m.messageSeq), [1]);
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
