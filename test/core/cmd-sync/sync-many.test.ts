/**
 * Issue 23, defect 5: a user with more CMD channels than a sync scans (CMD_SYNC_ACTIVE_SCAN_LIMIT,
 * 2,000) gets every unread command back in some sync. The first scan took the 2,000 most recently
 * active rows, read or not: with 2,001 channels a sync answered 2,000, the ack succeeded, and the
 * next sync answered [] while the 2,001st channel sat at read seq 0 for good.
 *
 * CmdSync on a real redis-server, sends through its own send path; the user loops sync → ack until
 * a sync answers nothing. What must come back is worked out from the test's own list of sends:
 * per channel the seqs counted here (1, 2, … in send order), the pairs (channel, seq) whose
 * recipients name the user and whose sender is someone else — never from the code under test.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CmdSync, KeySpace, newUuid, type Uuid } from "../../../core/index.js";
import { useCmdRedis } from "./fixture.js";

interface Sent {
  channelId: string;
  seq: number;
  from: Uuid;
  to: Uuid[];
}

const bytes = (s: string) => new TextEncoder().encode(s);

describe("CMD sync past the scan limit (issue 23, defect 5)", { timeout: 600_000 }, () => {
  const fx = useCmdRedis();

  async function withCmd<T>(body: (cmd: CmdSync) => Promise<T>): Promise<T> {
    const cmd = new CmdSync({ store: fx.store, keys: new KeySpace(`many${newUuid().slice(0, 8)}`), cluster: null, log: () => {} }, { catchUpIntervalMs: 0, flushIntervalMs: 0 });
    await cmd.start();
    try {
      return await body(cmd);
    } finally {
      await cmd.stop();
    }
  }

  /** Sends in order, counting each channel's seq here; checks the log allocated the same. */
  async function sendAll(cmd: CmdSync, tenant: Uuid, sends: Omit<Sent, "seq">[], log: Sent[]): Promise<void> {
    const next = new Map<string, number>();
    for (const s of log) next.set(s.channelId, Math.max(next.get(s.channelId) ?? 0, s.seq));
    for (const s of sends) {
      const seq = (next.get(s.channelId) ?? 0) + 1;
      next.set(s.channelId, seq);
      const r = await cmd.send({ tenant, channelId: s.channelId, channelType: 2, from: s.from, to: s.to, noPersist: false, payload: bytes(`${s.channelId}#${seq}`) });
      assert.equal(r.message.messageSeq, seq, `${s.channelId}: the log's seq`);
      log.push({ ...s, seq });
    }
  }

  /** sync → ack until a sync answers nothing; every answered (channel#seq), in order. */
  async function drain(cmd: CmdSync, tenant: Uuid, user: Uuid, limit: number): Promise<{ answered: string[]; syncs: number }> {
    const answered: string[] = [];
    for (let syncs = 1; syncs <= 100; syncs++) {
      const r = await cmd.syncLocal(tenant, user, limit);
      if (r.messages.length === 0) return { answered, syncs };
      answered.push(...r.messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`));
      await cmd.ackLocal(tenant, user, r.messages[r.messages.length - 1]!.messageSeq);
    }
    throw new Error("sync did not come to an empty answer in 100 rounds");
  }

  const expectedFor = (log: readonly Sent[], user: Uuid) =>
    log.filter((s) => s.to.includes(user) && s.from !== user).map((s) => `${s.channelId}#${s.seq}`).sort();

  function assertExactlyOnce(answered: readonly string[], expected: readonly string[]): void {
    const dup = answered.filter((a, i) => answered.indexOf(a) !== i);
    assert.deepEqual(dup, [], "nothing answered twice");
    const got = [...answered].sort();
    const missing = expected.filter((e) => !got.includes(e));
    const extra = got.filter((g) => !expected.includes(g));
    assert.deepEqual({ missing: missing.slice(0, 10), extra: extra.slice(0, 10), missingCount: missing.length, extraCount: extra.length },
      { missing: [], extra: [], missingCount: 0, extraCount: 0 });
    assert.equal(got.length, expected.length);
  }

  test("2,001 channels, one command each, all flushed durable: every one comes back (the 2,001st too), then []", async () => {
    await withCmd(async (cmd) => {
      const tenant = newUuid();
      const user = newUuid();
      const sender = newUuid();
      const log: Sent[] = [];
      // c0000 is the least recently active: the one the newest-2,000 scan never reached
      await sendAll(cmd, tenant, Array.from({ length: 2001 }, (_, i) => ({ channelId: `c${String(i).padStart(4, "0")}____cmd`, from: sender, to: [user] })), log);
      await cmd.flush();
      assert.equal(cmd.pendingEntries(), 0, "every entry is durable");
      const { answered, syncs } = await drain(cmd, tenant, user, 10_000);
      const expected = expectedFor(log, user);
      assert.equal(expected.length, 2001);
      assertExactlyOnce(answered, expected);
      assert.ok(answered.includes("c0000____cmd#1"), "the 2,001st most recent channel");
      // 2,000 channels a sync at most (the scan), so two syncs with an answer and one empty
      assert.equal(syncs, 3);
      assert.deepEqual(await cmd.states.listUnread(tenant, user, 10), [], "no durable row left unread");
    });
  });

  test("2,500 channels: 2,000 durable, 500 pending, read own commands and other users' messages among them; limit 300 loops until []", async () => {
    await withCmd(async (cmd) => {
      const tenant = newUuid();
      const user = newUuid();
      const other = newUuid();
      const sender = newUuid();
      const log: Sent[] = [];
      const name = (i: number) => `m${String(i).padStart(4, "0")}____cmd`;
      // 2,000 channels with one command to the user (to the other user too on every 3rd)
      await sendAll(cmd, tenant, Array.from({ length: 2000 }, (_, i) => ({ channelId: name(i), from: sender, to: i % 3 === 0 ? [user, other] : [user] })), log);
      await cmd.flush();
      // 500 more channels, left pending; 100 of the old ones get a second command (moved to the front)
      await sendAll(cmd, tenant, Array.from({ length: 500 }, (_, i) => ({ channelId: name(2000 + i), from: sender, to: [user] })), log);
      await sendAll(cmd, tenant, Array.from({ length: 100 }, (_, i) => ({ channelId: name(i * 7), from: sender, to: [user] })), log);
      // the user's own commands on 300 channels of its own (newest of all, read by their sender), and
      // commands to the other user only on 50 of the user's channels: none of these is the user's to read
      await sendAll(cmd, tenant, Array.from({ length: 300 }, (_, i) => ({ channelId: `own${i}____cmd`, from: user, to: [user, other] })), log);
      await sendAll(cmd, tenant, Array.from({ length: 50 }, (_, i) => ({ channelId: name(1000 + i), from: sender, to: [other] })), log);
      const expected = expectedFor(log, user);
      // worked by hand: 2,000 + 500 + 100 commands to the user from someone else
      assert.equal(expected.length, 2600);
      const { answered } = await drain(cmd, tenant, user, 300);
      assertExactlyOnce(answered, expected);
      // once everything is flushed, nothing comes back again
      await cmd.flush();
      assert.deepEqual((await cmd.syncLocal(tenant, user, 10_000)).messages, []);
    });
  });
});
