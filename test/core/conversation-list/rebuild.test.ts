/**
 * J-6 (spec 002 §9): delete every projection row of a user, rebuild from the authority, the
 * history and the user's own choices: order, unread and mentions field by field as before, and
 * cleared and deleted conversations stay distinguishable (§7: two watermarks in two fields).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, type ConversationRow, type Uuid } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);

    const fields = (rows: ConversationRow[]) => rows
      .filter((r) => !r.deleted)
      .sort((a, b) => (a.lastActivityId < b.lastActivityId ? 1 : a.lastActivityId > b.lastActivityId ? -1 : a.conversation < b.conversation ? -1 : 1))
      .map((r) => ({
        conversation: r.conversation, lastActivityId: r.lastActivityId, lastActivitySeq: r.lastActivitySeq, unread: r.unread, unreadExact: r.unreadExact,
        mentions: r.mentions, mentionFirstSeq: r.mentionFirstSeq, pinRank: r.pinRank, muted: r.muted, archived: r.archived,
        hiddenBeforeSeq: r.hiddenBeforeSeq, deletedBeforeSeq: r.deletedBeforeSeq, membership: r.membership, readSeq: r.readSeq,
      }));

    test("J-6: wipe every projection row of a user and rebuild: order, unread, mentions and choices field by field; cleared ≠ deleted", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const list = fx.engine.conversationList.service;
      const g: Uuid[] = [];
      for (let i = 0; i < 7; i++) g.push((await c.createGroup({ tenant, owner, members: [u] })).group);
      for (const [i, group] of g.entries()) {
        for (let m = 0; m <= i; m++) await c.send({ tenant, group, sender: owner, text: `${i}.${m}`, ...(m % 2 === 0 ? { mentions: [u] } : {}) });
      }
      await fx.settle();
      await c.markRead({ tenant, group: g[3]!, user: u, seq: 2 });
      await list.clear(tenant, u, g[1]!); // cleared: stays, unread 0
      await list.delete(tenant, u, g[2]!); // deleted: leaves the list
      await list.delete(tenant, u, g[4]!);
      await c.send({ tenant, group: g[4]!, sender: owner, text: "revives", mentions: [u] }); // deleted, then revived by a newer message
      await list.mute(tenant, u, g[5]!);
      await list.archive(tenant, u, g[6]!);
      await list.pin(tenant, u, g[0]!, { rank: 2 });
      await c.removeMembers({ tenant, group: g[3]!, users: [u] });
      await fx.settle();

      const before = await list.rows(tenant, u);
      const badgeBefore = await list.badge(tenant, u);
      // by hand: cleared g1 listed with unread 0; deleted g2 absent; g4 back with only the new message
      const byConv = new Map(before.map((r) => [r.conversation, r]));
      assert.deepEqual({ listed: byConv.has(g[1]!), unread: byConv.get(g[1]!)?.unread, hidden: byConv.get(g[1]!)?.hiddenBeforeSeq }, { listed: true, unread: 0, hidden: 2 });
      assert.equal(byConv.has(g[2]!), false);
      assert.deepEqual({ unread: byConv.get(g[4]!)?.unread, mentions: byConv.get(g[4]!)?.mentions, deleted: byConv.get(g[4]!)?.deletedBeforeSeq }, { unread: 1, mentions: 1, deleted: 5 });
      // g3: read to 2 of 4, removed at 5: unread (2, 4] = 2, mentions at 3 → 1; not ACTIVE → not in the badge's sums
      assert.deepEqual({ unread: byConv.get(g[3]!)?.unread, mentions: byConv.get(g[3]!)?.mentions, membership: byConv.get(g[3]!)?.membership }, { unread: 2, mentions: 1, membership: "REMOVED" });

      // J-6: delete every projection row — the list's rows and badge, and the session projection
      await fx.engine.projection.registration.drainAll();
      await list.wipeUser(tenant, u);
      await fx.engine.projection.sessions.wipeUser(tenant, u);
      assert.deepEqual(await list.rows(tenant, u), []);

      const rebuilt = await list.rebuild(tenant, u);
      assert.equal(rebuilt.drift.rows, 0);
      const after = await list.rows(tenant, u);
      assert.deepEqual(fields(after), fields(before));
      const badgeAfter = await list.badge(tenant, u);
      assert.deepEqual({ ...badgeAfter, version: 0 }, { ...badgeBefore, version: 0 });
      assert.ok(badgeAfter.version > badgeBefore.version, "the version keeps growing across a rebuild");
      // the badge by hand: unread g0 1, g1 0, g4 1, g5 muted 3 → out, g6 archived 4 → out; g3 removed → out
      assert.deepEqual({ u: badgeAfter.totalUnread, mu: badgeAfter.mutedUnread }, { u: 2, mu: 6 });
    });
  });
}
