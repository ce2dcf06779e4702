/**
 * Issue 23's defects 1–3 of the conversation list, each with its expected values worked out by
 * hand from spec 002 (the numbers are in the comments), on a real topology:
 *   1. a delete before any message writes deleted_before = head.latest = 0 (§7) and message 1
 *      revives the conversation instead of being swallowed;
 *   2. one rule of §3.3 on every path: latest − base > unread_precise_limit (200) gives unread 200,
 *      unread_exact = false, whoever sent the records in the span — the incremental path, the
 *      live view, the definitional summary, reconcile, the rebuild and the drill's check agree;
 *   3. history and summaries apply hidden_before and deleted_before (§3.1 base, §7 content).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, type ConversationRow, type Uuid } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);
    const list = () => fx.engine.conversationList.service;
    const c = () => fx.engine.conversations;

    async function sendMany(tenant: Uuid, group: Uuid, sender: Uuid, n: number, mentions?: Uuid[]): Promise<void> {
      for (let i = 0; i < n; i++) await c().send({ tenant, group, sender, text: "m", ...(mentions ? { mentions } : {}) });
    }

    function counters(r: ConversationRow | null) {
      return r && { unread: r.unread, exact: r.unreadExact, mentions: r.mentions, mentionFirst: r.mentionFirstSeq, head: r.lastActivitySeq };
    }

    /** The same row from every path that computes it: the stored/live row, a reconcile, a rebuild. */
    async function everyPath(tenant: Uuid, user: Uuid, group: Uuid) {
      const live = counters(await list().row(tenant, user, group));
      const check = await list().drillCheck(tenant, user);
      const reconciled = await list().reconcile(tenant, user);
      const afterReconcile = counters(await list().row(tenant, user, group));
      await list().rebuild(tenant, user);
      const rebuilt = counters(await list().row(tenant, user, group));
      const summary = await c().conversationSummary({ tenant, group, user });
      return { live, differences: check.differences, drift: reconciled.drift.rows, afterReconcile, rebuilt, summary: { unread: summary.unread, exact: summary.unreadExact } };
    }

    test("defect 1: delete before any message keeps deleted_before 0; message 1 revives the conversation", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const { group } = await c().createGroup({ tenant, owner, members: [u] });
      const deleted = await list().delete(tenant, u, group);
      // §7: deleted_before = head.latest, and there is no message yet
      assert.equal(deleted.deletedBeforeSeq, 0);
      assert.equal(deleted.deleted, true);
      assert.deepEqual(await list().rows(tenant, u), []);
      // a rebuild keeps it out of the list (the choice survives, deleted_before 0 in force)
      await list().rebuild(tenant, u);
      assert.deepEqual(await list().rows(tenant, u), []);

      await c().send({ tenant, group, sender: owner, text: "1" });
      await fx.settle();
      // by hand: base = max(read 0, hidden 0, joined 0, deleted 0) = 0, seq 1 from the owner → unread 1
      let row = await list().row(tenant, u, group);
      assert.ok(row, "message 1 revives the conversation");
      assert.equal(row.unread, 1);
      assert.equal(row.deleted, false);
      assert.equal((await list().badge(tenant, u)).totalUnread, 1);

      await c().send({ tenant, group, sender: owner, text: "2" });
      await fx.settle();
      row = await list().row(tenant, u, group);
      assert.equal(row?.unread, 2);
      assert.equal((await list().badge(tenant, u)).totalUnread, 2);
      const paths = await everyPath(tenant, u, group);
      assert.deepEqual(paths.differences, []);
      assert.equal(paths.drift, 0);
      assert.equal(paths.rebuilt?.unread, 2);
      assert.deepEqual(paths.summary, { unread: 2, exact: true });
      const history = await c().history({ tenant, group, user: u });
      assert.deepEqual(history.records.map((r) => r.conversationSeq), [1, 2]);
    });

    test("defect 2: the issue's steps — 150 of the owner's and 52 of u's own give 200 inexact on every path", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const { group } = await c().createGroup({ tenant, owner, members: [u] });
      await sendMany(tenant, group, owner, 1);
      await fx.settle();
      await sendMany(tenant, group, owner, 149);
      await sendMany(tenant, group, u, 52);
      // by hand: seqs 1..202, base 0, latest − base = 202 > 200 → unread 200, exact false (§3.3),
      // although only 150 are the owner's
      await fx.deliver();
      const heldView = counters(await list().row(tenant, u, group));
      assert.deepEqual({ unread: heldView?.unread, exact: heldView?.exact }, { unread: 200, exact: false }, "the live view (records held, not yet written)");
      await fx.settle();
      const want = { unread: 200, exact: false, mentions: 0, mentionFirst: null, head: 202 };
      const paths = await everyPath(tenant, u, group);
      assert.deepEqual(paths.live, want, "the incremental path (the compaction flush)");
      assert.deepEqual(paths.differences, [], "the drill's check against the definition");
      assert.equal(paths.drift, 0, "reconcile finds no drift");
      assert.deepEqual(paths.afterReconcile, want);
      assert.deepEqual(paths.rebuilt, want, "J-6: a rebuild equals what was there before");
      assert.deepEqual(paths.summary, { unread: 200, exact: false }, "the definitional read");
      assert.equal((await list().badge(tenant, u)).totalUnread, 200);
    });

    test("defect 2: the exactness boundary with the user's own messages in the span", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const { group } = await c().createGroup({ tenant, owner, members: [u] });
      await sendMany(tenant, group, owner, 100);
      await fx.settle();
      await sendMany(tenant, group, u, 100);
      await fx.settle();
      // by hand: seqs 1..100 the owner's, 101..200 u's; latest − base = 200 ≤ 200 → exact, unread 100
      let paths = await everyPath(tenant, u, group);
      assert.deepEqual(paths.live, { unread: 100, exact: true, mentions: 0, mentionFirst: null, head: 200 });
      assert.deepEqual(paths.rebuilt, paths.live);
      assert.deepEqual(paths.summary, { unread: 100, exact: true });
      assert.equal(paths.drift, 0);

      await sendMany(tenant, group, u, 1);
      await fx.settle();
      // seq 201 is u's own: it counts for nothing, but latest − base = 201 > 200 → 200, inexact
      paths = await everyPath(tenant, u, group);
      assert.deepEqual(paths.live, { unread: 200, exact: false, mentions: 0, mentionFirst: null, head: 201 });
      assert.deepEqual(paths.rebuilt, paths.live);
      assert.deepEqual(paths.summary, { unread: 200, exact: false });
      assert.deepEqual(paths.differences, []);

      await c().markRead({ tenant, group, user: u, seq: 1 });
      // base 1: latest − base = 200 → exact again, the owner's seqs 2..100 → 99
      paths = await everyPath(tenant, u, group);
      assert.deepEqual(paths.live, { unread: 99, exact: true, mentions: 0, mentionFirst: null, head: 201 });
      assert.deepEqual(paths.rebuilt, paths.live);
      assert.deepEqual(paths.summary, { unread: 99, exact: true });
    });

    test("defect 2: past the limit, mentions count over the newest 200 seqs on every path", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const { group } = await c().createGroup({ tenant, owner, members: [u] });
      await sendMany(tenant, group, owner, 1, [u]); // seq 1 mentions u
      await sendMany(tenant, group, owner, 3); // 2..4
      await sendMany(tenant, group, owner, 1, [u]); // seq 5 mentions u
      await fx.settle();
      assert.deepEqual(counters(await list().row(tenant, u, group)), { unread: 5, exact: true, mentions: 2, mentionFirst: 1, head: 5 });
      await sendMany(tenant, group, owner, 196); // 6..201
      await fx.settle();
      // by hand: latest 201, base 0 → 200 inexact; mentions over (1, 201]: seq 5 only
      let paths = await everyPath(tenant, u, group);
      const want201 = { unread: 200, exact: false, mentions: 1, mentionFirst: 5, head: 201 };
      assert.deepEqual(paths.live, want201);
      assert.deepEqual(paths.afterReconcile, want201);
      assert.deepEqual(paths.rebuilt, want201);
      await sendMany(tenant, group, owner, 4); // 202..205: the window (5, 205] holds no mention
      await fx.deliver();
      assert.deepEqual(counters(await list().row(tenant, u, group)), { unread: 200, exact: false, mentions: 0, mentionFirst: null, head: 205 }, "live view");
      await fx.settle();
      paths = await everyPath(tenant, u, group);
      const want205 = { unread: 200, exact: false, mentions: 0, mentionFirst: null, head: 205 };
      assert.deepEqual(paths.live, want205);
      assert.deepEqual(paths.rebuilt, want205);
      assert.equal(paths.drift, 0);
    });

    test("defect 3, same mistake elsewhere: a rebuild of the session projection ranks a cleared conversation by its last activity", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const groups: Uuid[] = [];
      for (let i = 0; i < 3; i++) groups.push((await c().createGroup({ tenant, owner, members: [u] })).group);
      for (const g of groups) await sendMany(tenant, g, owner, 1);
      await sendMany(tenant, groups[0]!, owner, 1); // G0 now has the newest activity
      await fx.settle();
      await fx.engine.projection.registration.drainAll();
      await list().clear(tenant, u, groups[0]!);
      const sessions = fx.engine.projection.sessions;
      await sessions.wipeUser(tenant, u);
      await fx.engine.projection.epoch.bump("test: projection lost", "test");
      // by hand: activity order G0 (cleared, but the clear hides content, not its place), G2, G1;
      // page 1 of 2 holds G0 and G2 — ranking G0 by first_seen_at would leave it off the page
      const page = await sessions.listSessions({ tenant, user: u, limit: 2 });
      assert.equal(page.rebuilt, true);
      assert.deepEqual(new Set(page.sessions.map((x) => x.group)), new Set([groups[0]!, groups[2]!]));
      assert.equal(page.sessions.find((x) => x.group === groups[0])?.head, null, "its content stays hidden");
    });

    for (const action of ["clear", "delete"] as const) {
      test(`defect 3: history and summaries after ${action} show nothing at or below the watermark`, async () => {
        const tenant = fx.tenant();
        const [owner, u] = [newUuid(), newUuid()];
        const { group } = await c().createGroup({ tenant, owner, members: [u] });
        await sendMany(tenant, group, owner, 3);
        await fx.settle();
        await list()[action](tenant, u, group);
        // by hand: watermark 3; base = max(read 0, 3) = 3 → unread 0, no head, no record ≤ 3
        let summary = await c().conversationSummary({ tenant, group, user: u });
        assert.equal(summary.unread, 0);
        assert.equal(summary.head, null);
        let history = await c().history({ tenant, group, user: u });
        assert.deepEqual(history.records, []);
        assert.equal(history.earliestAvailableConversationSeq, 4);
        const [batch] = await c().conversationSummaries(tenant, u, [group]);
        assert.equal(batch?.unread, 0);
        assert.equal(batch?.head, null);
        // the owner, who did nothing, still sees all three
        assert.deepEqual((await c().history({ tenant, group, user: owner })).records.map((r) => r.conversationSeq), [1, 2, 3]);

        await sendMany(tenant, group, owner, 1);
        await fx.settle();
        // seq 4 is above the watermark: unread 1, head 4, history [4]
        summary = await c().conversationSummary({ tenant, group, user: u });
        assert.equal(summary.unread, 1);
        assert.equal(summary.head?.conversationSeq, 4);
        history = await c().history({ tenant, group, user: u });
        assert.deepEqual(history.records.map((r) => r.conversationSeq), [4]);
        assert.deepEqual((await c().history({ tenant, group, user: u, after: 1 })).records.map((r) => r.conversationSeq), [4]);
        const row = await list().row(tenant, u, group);
        assert.equal(row?.unread, 1);
        assert.equal(row?.deleted, false);
      });
    }
  });
}
