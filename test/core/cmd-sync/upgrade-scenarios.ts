/**
 * Issue 23, the upgrade of defect 5: CMD state rows written by the code before lastMsgSeq existed
 * (Redis: the four-field value `read|deletedTo|activeAt|updatedAt` and the cmdactive member, no
 * cmdunread member; Cassandra: a row without last_msg_seq) must not read as "read". Every channel
 * that had commands beyond its read seq comes back, exactly once, in the user's sync → ack loop;
 * the others never come back and leave the unread scan, each row ending with a last seq.
 *
 * The rows are written here as the old code wrote them, the commands go straight into the CMD log
 * (the old node's intents are long flushed), and what must come back is worked out from the test's
 * own lists: per channel the seqs counted here beyond the read seq written here whose recipients
 * name the user — never from the code under test.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, type CmdSync, type Uuid } from "../../../core/index.js";

export interface LegacyRow {
  channelId: string;
  readSeq: number;
  activeAt: number;
}

export interface UpgradeHarness {
  cmd: CmdSync;
  /** Writes the rows exactly as the code before issue 23 did. */
  writeLegacy(tenant: Uuid, user: Uuid, rows: readonly LegacyRow[]): Promise<void>;
  /** How many of the user's rows a sync's unread scan still sees (Redis: the cmdunread members). */
  unreadLeft(tenant: Uuid, user: Uuid): Promise<number>;
  /** Redis only: indexes the user's old rows, answering the rows looked at by each script call. */
  indexInChunks?(tenant: Uuid, user: Uuid): Promise<{ looked: number; indexed: number }[]>;
  close(): Promise<void>;
}

interface Commit {
  channelId: string;
  seq: number;
  to: Uuid[];
}

const bytes = (s: string) => new TextEncoder().encode(s);
const name = (p: string, i: number) => `${p}${String(i).padStart(4, "0")}____cmd`;

/** Commits each channel's list in order (channels 50 at a time), checking the log's seq against the count kept here. */
async function commitAll(cmd: CmdSync, tenant: Uuid, sender: Uuid, plan: Map<string, Uuid[][]>, log: Commit[]): Promise<void> {
  const channels = [...plan.keys()];
  for (let i = 0; i < channels.length; i += 50) {
    await Promise.all(channels.slice(i, i + 50).map(async (channelId) => {
      const list = plan.get(channelId)!;
      for (let n = 0; n < list.length; n++) {
        const { message } = await cmd.log.commit({ tenant, channelId, channelType: 2, from: sender, to: list[n]!, noPersist: false, payload: bytes(`${channelId}#${n + 1}`) });
        assert.equal(message.messageSeq, n + 1, `${channelId}: the log's seq`);
        log.push({ channelId, seq: n + 1, to: list[n]! });
      }
    }));
  }
}

async function drain(cmd: CmdSync, tenant: Uuid, user: Uuid, limit: number): Promise<string[]> {
  const answered: string[] = [];
  for (let syncs = 1; syncs <= 200; syncs++) {
    const r = await cmd.syncLocal(tenant, user, limit);
    if (r.messages.length === 0) return answered;
    answered.push(...r.messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`));
    await cmd.ackLocal(tenant, user, r.messages[r.messages.length - 1]!.messageSeq);
  }
  throw new Error("sync did not come to an empty answer in 200 rounds");
}

function assertExactlyOnce(answered: readonly string[], expected: readonly string[]): void {
  const dup = answered.filter((a, i) => answered.indexOf(a) !== i);
  assert.deepEqual(dup, [], "nothing answered twice");
  const got = new Set(answered);
  const want = new Set(expected);
  assert.deepEqual({ missing: expected.filter((e) => !got.has(e)).slice(0, 10), extra: answered.filter((g) => !want.has(g)).slice(0, 10) }, { missing: [], extra: [] });
  assert.equal(answered.length, expected.length);
}

/** Every row ends with a last seq: the newest seq addressed to the user, or its read seq when larger (worked out here). */
async function assertSettled(cmd: CmdSync, tenant: Uuid, user: Uuid, rows: readonly LegacyRow[], log: readonly Commit[]): Promise<void> {
  const want = new Map(rows.map((r) => [r.channelId, r.readSeq]));
  for (const c of log) if (c.to.includes(user) && want.has(c.channelId)) want.set(c.channelId, Math.max(want.get(c.channelId)!, c.seq));
  const got = await cmd.states.listActive(tenant, user, rows.length + 10);
  assert.equal(got.length, rows.length);
  const wrong = got.filter((s) => s.lastMsgSeq !== want.get(s.channel.channelId) || s.readSeq !== want.get(s.channel.channelId));
  assert.deepEqual(wrong.slice(0, 5).map((s) => `${s.channel.channelId} read ${s.readSeq} last ${s.lastMsgSeq} want ${want.get(s.channel.channelId)}`), []);
}

export function cmdUpgradeScenarios(label: string, open: () => Promise<UpgradeHarness>, rowsOfBigUser: number): void {
  describe(label, { timeout: 600_000 }, () => {
    test(`a user with ${rowsOfBigUser} rows of the old code, unread only among the oldest 600: each unread command comes back once (limit 50), the rest never; the unread scan ends empty`, async () => {
      const h = await open();
      try {
        const tenant = newUuid();
        const user = newUuid();
        const other = newUuid();
        const sender = newUuid();
        const rows: LegacyRow[] = [];
        const plan = new Map<string, Uuid[][]>();
        for (let i = 0; i < rowsOfBigUser; i++) {
          const channelId = name("c", i);
          const readSeq = i % 3;
          rows.push({ channelId, readSeq, activeAt: 1_000_000 + i });
          // read_i commands to the user, already read when the old code last wrote the row
          const list: Uuid[][] = Array.from({ length: readSeq }, () => [user]);
          if (i % 10 === 0 && i < 600) {
            // 1 … 4 commands beyond the read seq; on every 20th one to the other user only between them
            const unread = 1 + ((i / 10) % 4);
            list.push([user, other]);
            if (i % 20 === 0) list.push([other]);
            for (let n = 1; n < unread; n++) list.push([user]);
          } else if (i % 7 === 0) {
            list.push([other]); // beyond the read seq, but not the user's
          }
          if (list.length > 0) plan.set(channelId, list);
        }
        const log: Commit[] = [];
        await commitAll(h.cmd, tenant, sender, plan, log);
        await h.writeLegacy(tenant, user, rows);
        const readOf = new Map(rows.map((r) => [r.channelId, r.readSeq]));
        const expected = log.filter((c) => c.to.includes(user) && c.seq > readOf.get(c.channelId)!).map((c) => `${c.channelId}#${c.seq}`);
        // worked by hand: channels 0, 10, …, 590 (60), 1 + (k % 4) each for k = 0 … 59: 15 × (1+2+3+4)
        assert.equal(expected.length, 150);

        if (h.indexInChunks) {
          const chunks = await h.indexInChunks(tenant, user);
          // 500 rows a script call, then the call that finds the end and marks the user
          const full = Math.floor(rowsOfBigUser / 500);
          assert.deepEqual(chunks.map((c) => c.looked), [...Array.from({ length: full }, () => 500), rowsOfBigUser - full * 500]);
          assert.equal(chunks.reduce((n, c) => n + c.indexed, 0), rowsOfBigUser, "every row of the old code indexed");
          assert.equal(await h.unreadLeft(tenant, user), rowsOfBigUser);
          assert.deepEqual(await h.indexInChunks(tenant, user), [], "a marked user: no script call");
        }

        const answered = await drain(h.cmd, tenant, user, 50);
        assertExactlyOnce(answered, expected);
        assert.equal(await h.unreadLeft(tenant, user), 0, "no row left in the unread scan");
        await assertSettled(h.cmd, tenant, user, rows, log);
        assert.deepEqual((await h.cmd.syncLocal(tenant, user, 10_000)).messages, []);
      } finally {
        await h.close();
      }
    });

    test("old rows indexed by the sync itself, with new commands after the upgrade on some (pending, and flushed onto the old row): old and new come back once", async () => {
      const h = await open();
      try {
        const tenant = newUuid();
        const user = newUuid();
        const sender = newUuid();
        const rows: LegacyRow[] = [];
        const plan = new Map<string, Uuid[][]>();
        for (let j = 0; j < 30; j++) {
          const channelId = name("b", j);
          const readSeq = j % 2;
          rows.push({ channelId, readSeq, activeAt: 2_000_000 + j });
          plan.set(channelId, Array.from({ length: readSeq + (j % 3 === 0 ? 2 : 0) }, () => [user]));
        }
        const log: Commit[] = [];
        await commitAll(h.cmd, tenant, sender, new Map([...plan].filter(([, l]) => l.length > 0)), log);
        await h.writeLegacy(tenant, user, rows);
        // after the upgrade: b0000 gets a command that is flushed onto its old row, b0003 and b0001 one that stays pending
        const after = async (channelId: string) => {
          const r = await h.cmd.send({ tenant, channelId, channelType: 2, from: sender, to: [user], noPersist: false, payload: bytes("new") });
          log.push({ channelId, seq: r.message.messageSeq, to: [user] });
        };
        await after("b0000____cmd");
        await h.cmd.flush();
        await after("b0003____cmd");
        await after("b0001____cmd");
        const readOf = new Map(rows.map((r) => [r.channelId, r.readSeq]));
        const expected = log.filter((c) => c.to.includes(user) && c.seq > readOf.get(c.channelId)!).map((c) => `${c.channelId}#${c.seq}`);
        // worked by hand: j = 0, 3, …, 27 (10 channels) 2 old each, and 3 new
        assert.equal(expected.length, 23);
        const answered = await drain(h.cmd, tenant, user, 7);
        assertExactlyOnce(answered, expected);
        assert.equal(await h.unreadLeft(tenant, user), 0, "no row left in the unread scan");
        await h.cmd.flush();
        await assertSettled(h.cmd, tenant, user, rows, log);
        assert.deepEqual((await h.cmd.syncLocal(tenant, user, 10_000)).messages, []);
      } finally {
        await h.close();
      }
    });
  });
}
