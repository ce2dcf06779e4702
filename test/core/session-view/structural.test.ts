/**
 * Spec 002 §6.3 on a real Redis through the real engine: every structural change — pin, unpin,
 * archive, unarchive, delete, leave — made while a page walk is in progress invalidates the
 * snapshot revision, and the walk's next page is the NEW revision's first page with
 * projection_complete = false; walking on from there gives the new list whole, without duplicate.
 * (J-5 covers pin on 5,000 conversations; this covers every structural action, one walk each.)
 *
 * Five groups with one message each, sent g1 … g5 in that order, so the list by hand is
 * g5 g4 g3 g2 g1 (last_activity_id DESC: UUIDv7 ids of one process only grow); each step below
 * states the list the action leaves, worked out by hand from the spec's order (§6.1: pinned zone
 * first; archived rows stay in their zone; a deleted conversation leaves the list; a left one stays,
 * its head unchanged, the leave itself being invisible to the leaver).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { newUuid, type Uuid } from "../../../core/index.js";
import { useList } from "../conversation-list/fixture.js";

const fx = useList("single");
/** Rows per page: small, so that every walk is several pages long. */
const PAGE = 2;

test("§6.3: pin, unpin, archive, unarchive, delete and leave mid-walk each give the new revision's first page with projection_complete=false", { timeout: 120_000 }, async () => {
  const tenant = fx.tenant();
  const [user, owner] = [newUuid(), newUuid()];
  const c = fx.engine.conversations;
  const list = fx.engine.conversationList.service;
  const view = fx.engine.sessionView;
  const g: Uuid[] = [];
  for (let i = 0; i < 5; i++) g.push((await c.createGroup({ tenant, owner, members: [user] })).group);
  for (const group of g) await c.send({ tenant, group, sender: owner, text: "hello" });
  await fx.settle();
  const [g1, g2, g3, g4, g5] = g as [Uuid, Uuid, Uuid, Uuid, Uuid];

  /** Walks from `cursor` (or page 1) to the end of one revision; fails on a restart. */
  const walkFrom = async (cursor: string | null, revision: number): Promise<Uuid[]> => {
    const seen: Uuid[] = [];
    while (cursor) {
      const p = await view.page(tenant, user, { limit: PAGE, cursor });
      assert.deepEqual([p.snapshotRevision, p.projectionComplete], [revision, true]);
      seen.push(...p.rows.map((r) => r.conversation));
      cursor = p.nextCursor;
    }
    return seen;
  };

  const steps: { name: string; act: () => Promise<unknown>; after: Uuid[]; archived?: Uuid[] }[] = [
    { name: "pin g2", act: () => list.pin(tenant, user, g2, { rank: 0 }), after: [g2, g5, g4, g3, g1] },
    { name: "unpin g2", act: () => list.unpin(tenant, user, g2), after: [g5, g4, g3, g2, g1] },
    { name: "archive g4", act: () => list.archive(tenant, user, g4), after: [g5, g4, g3, g2, g1], archived: [g4] },
    { name: "unarchive g4", act: () => list.unarchive(tenant, user, g4), after: [g5, g4, g3, g2, g1], archived: [] },
    { name: "delete g5", act: () => list.delete(tenant, user, g5), after: [g4, g3, g2, g1] },
    // the leave is a CONTROL message through the commit path, the dispatch log and the list consumer
    { name: "leave g3", act: async () => { await c.leaveGroup({ tenant, group: g3, user }); await fx.settle(); }, after: [g4, g3, g2, g1] },
  ];

  let before = [g5, g4, g3, g2, g1];
  for (const step of steps) {
    // a walk in progress: page 1 of the current revision, a cursor in hand
    const first = await view.page(tenant, user, { limit: PAGE });
    assert.deepEqual(first.rows.map((r) => r.conversation), before.slice(0, PAGE), `${step.name}: page 1 before`);
    await step.act();
    const next = await view.page(tenant, user, { limit: PAGE, cursor: first.nextCursor! });
    assert.equal(next.projectionComplete, false, `${step.name}: the old cursor is told to start again`);
    assert.ok(next.snapshotRevision > first.snapshotRevision, `${step.name}: revision ${next.snapshotRevision} after ${first.snapshotRevision}`);
    assert.deepEqual(next.rows.map((r) => r.conversation), step.after.slice(0, PAGE), `${step.name}: the new revision's first page`);
    // the client restarts from there: the new list whole, once each, in the new order
    const rest = await walkFrom(next.nextCursor, next.snapshotRevision);
    assert.deepEqual([...next.rows.map((r) => r.conversation), ...rest], step.after, `${step.name}: the restarted walk`);
    if (step.archived) {
      const whole = await view.page(tenant, user, { limit: 200 });
      assert.deepEqual(whole.rows.filter((r) => r.archived).map((r) => r.conversation), step.archived, `${step.name}: archived flags`);
    }
    before = step.after;
  }
});
