/**
 * J-5 (spec 002 §9) on a real Redis through the real engine: a user in 5,000 conversations, each
 * with one message delivered through the commit path, the dispatch log and the conversation-list
 * consumer. The expected list is computed here from what the test itself sent (each group's head
 * message id, ordered by the spec's keys), never from the snapshot.
 *
 * - every page walked end to end: no duplicate, no gap, the spec's order;
 * - a pin mid-way: the next page answers the new revision's first page with
 *   projection_complete=false; the client restarts and walks the new revision whole;
 * - a new message mid-way: the revision stays, the walk goes on without a duplicate, and the
 *   changed conversations arrive as SESSION_DELTA frames applied by the client-side applier.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { newUuid, SessionDeltaApplier, uuidToHex, type SessionFrame, type Uuid } from "../../../core/index.js";
import { useList } from "../conversation-list/fixture.js";

const fx = useList("single");
const CONVERSATIONS = 5000;
const PAGE = 200;

async function inBatches<T>(n: number, size: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += size) out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, k) => fn(i + k)))));
  return out;
}

/** Polls `ok` every 20 ms, at most `tries` times (no wall-clock assertion: only a bound on waiting). */
async function until(ok: () => boolean, tries = 500): Promise<void> {
  for (let i = 0; i < tries && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(ok(), "the expected frames did not arrive");
}

test("J-5: a 5,000-conversation user paged end to end; a pin restarts the walk; a new message arrives as a delta", { timeout: 600_000 }, async () => {
  const tenant = fx.tenant();
  const [user, sender] = [newUuid(), newUuid()];
  const c = fx.engine.conversations;
  const view = fx.engine.sessionView;
  const list = fx.engine.conversationList.service;

  const groups = await inBatches(CONVERSATIONS, 100, async () => (await c.createGroup({ tenant, owner: sender, members: [user] })).group);
  const heads = new Map<Uuid, string>();
  await inBatches(CONVERSATIONS, 100, async (i) => {
    const r = await c.send({ tenant, group: groups[i]!, sender, text: `m${i}` });
    heads.set(groups[i]!, uuidToHex(r.messageId as Uuid));
  });
  await fx.settle();

  // the spec's normal-zone order from what was sent: last_activity_id DESC, conversation_id ASC
  const expected = [...groups].sort((a, b) => (heads.get(a)! !== heads.get(b)! ? (heads.get(a)! < heads.get(b)! ? 1 : -1) : a < b ? -1 : 1));
  assert.equal(new Set(expected).size, CONVERSATIONS);

  const walk = async (from?: { cursor: string; revision: number }, stopAfter = Infinity) => {
    const seen: Uuid[] = [];
    let cursor = from?.cursor;
    let revision = from?.revision ?? 0;
    let pages = 0;
    for (;;) {
      const p = await view.page(tenant, user, { limit: PAGE, ...(cursor ? { cursor } : {}) });
      if (revision === 0) revision = p.snapshotRevision;
      if (p.snapshotRevision !== revision || !p.projectionComplete) return { seen, cursor, revision, restartedWith: p };
      assert.equal(p.total, CONVERSATIONS);
      seen.push(...p.rows.map((r) => r.conversation));
      pages++;
      if (!p.nextCursor) return { seen, cursor: null, revision, restartedWith: null };
      cursor = p.nextCursor;
      if (pages >= stopAfter) return { seen, cursor, revision, restartedWith: null };
    }
  };

  // 1. the whole list, page by page
  const whole = await walk();
  assert.equal(whole.restartedWith, null);
  assert.equal(whole.seen.length, CONVERSATIONS, "no gap, no duplicate");
  assert.equal(new Set(whole.seen).size, CONVERSATIONS);
  assert.deepEqual(whole.seen, expected);
  for (const r of (await view.page(tenant, user, { limit: 5 })).rows) assert.equal(r.unread, 1);

  // 2. a pin mid-way: the old cursor gets the new revision's first page, projection_complete=false
  const part = await walk(undefined, 3);
  const pinned = expected[4000]!;
  await list.pin(tenant, user, pinned, { rank: 0 });
  const after = await view.page(tenant, user, { limit: PAGE, cursor: part.cursor! });
  assert.equal(after.projectionComplete, false);
  assert.ok(after.snapshotRevision > part.revision, `revision ${after.snapshotRevision} after ${part.revision}`);
  assert.equal(after.rows[0]!.conversation, pinned, "the new first page starts with the pinned conversation");
  const restarted = await walk();
  assert.equal(restarted.restartedWith, null);
  assert.deepEqual(restarted.seen, [pinned, ...expected.filter((g) => g !== pinned)]);

  // 3. a new message mid-way: same revision, no duplicate; the change comes as deltas
  const applier = new SessionDeltaApplier();
  const frames: SessionFrame[] = [];
  const stop = await view.watch(tenant, user, (f) => {
    frames.push(f);
    applier.apply(f);
  });
  const half = await walk(undefined, 5);
  const seenBefore = new Set(half.seen);
  const notYet = expected[4500]!; // still ahead of the walk: it jumps to the top, behind the cursor
  const already = half.seen[PAGE + 10]!; // already paged
  for (const g of [notYet, already]) await c.send({ tenant, group: g, sender, text: "again" });
  await fx.settle();
  const rest = await walk({ cursor: half.cursor!, revision: half.revision });
  assert.equal(rest.restartedWith, null, "a new message does not invalidate the revision");
  assert.equal(rest.revision, half.revision);
  const paged = [...half.seen, ...rest.seen];
  assert.equal(new Set(paged).size, paged.length, "no duplicate across the new message");
  assert.ok(!rest.seen.includes(notYet) && !seenBefore.has(notYet), "the moved conversation is not paged again");
  assert.equal(paged.length, CONVERSATIONS - 1);
  await until(() => applier.rows.get(notYet)?.unread === 2 && applier.rows.get(already)?.unread === 2);
  // the client's list: the pages overwritten by the deltas holds every conversation once
  const client = new Set([...paged, ...applier.rows.keys()]);
  assert.equal(client.size, CONVERSATIONS);
  assert.deepEqual(new Set(client), new Set(groups));
  assert.equal(applier.counts.gap, 0);
  const deltas = frames.filter((f) => f.kind === "delta").map((f) => (f.kind === "delta" ? f.row.conversation : ""));
  assert.deepEqual(new Set(deltas), new Set([notYet, already]));
  stop();
});
