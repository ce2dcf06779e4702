import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, registry } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);

    test("rows: unread and mentions from delivered messages, read, clear, delete and revive", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const { group } = await c.createGroup({ tenant, owner, members: [u] });
      await c.send({ tenant, group, sender: owner, text: "1" });
      await c.send({ tenant, group, sender: owner, text: "2", mentions: [u] });
      await c.send({ tenant, group, sender: u, text: "3" });
      await c.send({ tenant, group, sender: owner, text: "4" });
      await fx.settle();
      const list = fx.engine.conversationList.service;
      let row = await list.row(tenant, u, group);
      assert.ok(row);
      // by hand: seqs 1,2,4 are the owner's (counted), 3 is u's own; 2 mentions u
      assert.equal(row.unread, 3);
      assert.equal(row.mentions, 1);
      assert.equal(row.mentionFirstSeq, 2);
      assert.equal(row.lastActivitySeq, 4);
      assert.deepEqual(await list.badge(tenant, u), { totalUnread: 3, totalMention: 1, mutedUnread: 0, version: row.version });

      await c.markRead({ tenant, group, user: u, seq: 2 });
      row = await list.row(tenant, u, group);
      assert.equal(row?.unread, 1);
      assert.equal(row?.mentions, 0);
      assert.equal(row?.mentionFirstSeq, null);

      row = await list.clear(tenant, u, group);
      assert.equal(row.unread, 0);
      assert.equal(row.hiddenBeforeSeq, 4);
      assert.equal(row.deleted, false);
      assert.equal((await list.rows(tenant, u)).length, 1);

      await c.send({ tenant, group, sender: owner, text: "5" });
      await fx.settle();
      row = await list.delete(tenant, u, group);
      assert.equal(row.deleted, true);
      assert.equal(row.deletedBeforeSeq, 5);
      assert.equal((await list.rows(tenant, u)).length, 0);
      assert.equal((await list.badge(tenant, u)).totalUnread, 0);

      await c.send({ tenant, group, sender: owner, text: "6" });
      await fx.settle();
      row = await list.row(tenant, u, group);
      assert.equal(row?.deleted, false);
      assert.equal(row?.unread, 1);
      assert.equal(row?.deletedBeforeSeq, 5);
      assert.equal((await list.badge(tenant, u)).totalUnread, 1);
    });

    async function recomputes(cause: string): Promise<number> {
      const m = await registry.getSingleMetric("qim_conversation_list_recompute_total")!.get();
      return m.values.find((v) => v.labels.cause === cause)?.value ?? 0;
    }

    test("three-state (a): a read inside the window with the records in hand decrements unread and mentions together, no recompute", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const list = fx.engine.conversationList.service;
      const { group } = await c.createGroup({ tenant, owner, members: [u] });
      await c.send({ tenant, group, sender: owner, text: "1" });
      await fx.settle();
      await c.markRead({ tenant, group, user: u, seq: 1 });
      // window: seqs 2 (mentions u), 3 (mentions u), 4 — delivered, not flushed
      await c.send({ tenant, group, sender: owner, text: "2", mentions: [u] });
      await c.send({ tenant, group, sender: owner, text: "3", mentions: [u] });
      await c.send({ tenant, group, sender: owner, text: "4" });
      await fx.deliver();
      const before = await recomputes("read");
      const row = await c.markRead({ tenant, group, user: u, seq: 2 }).then(() => list.row(tenant, u, group));
      assert.equal(await recomputes("read"), before, "no recompute: (ob, nb] = (1, 2] is in hand");
      // by hand: unread over (2, 4] = {3, 4}; mentions {3}
      assert.deepEqual({ unread: row?.unread, mentions: row?.mentions, first: row?.mentionFirstSeq }, { unread: 2, mentions: 1, first: 3 });
      assert.equal((await list.badge(tenant, u)).totalMention, 1);
    });

    test("three-state (c): another device moves read to a non-latest position outside the window: recompute, never clear", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const list = fx.engine.conversationList.service;
      const { group } = await c.createGroup({ tenant, owner, members: [u] });
      for (let i = 0; i < 6; i++) await c.send({ tenant, group, sender: owner, text: String(i), mentions: i === 4 ? [u] : [] });
      await fx.settle();
      const before = await recomputes("read");
      await c.markRead({ tenant, group, user: u, seq: 3 });
      const row = await list.row(tenant, u, group);
      assert.equal(await recomputes("read"), before + 1);
      // by hand: (3, 6] = 3 unread; the mention is seq 5
      assert.deepEqual({ unread: row?.unread, mentions: row?.mentions, first: row?.mentionFirstSeq }, { unread: 3, mentions: 1, first: 5 });
    });

    test("unread_precise_limit: more than 200 unread is 200 and inexact; reading to the head makes it exact 0", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const list = fx.engine.conversationList.service;
      const { group } = await c.createGroup({ tenant, owner, members: [u] });
      await Promise.all(Array.from({ length: 205 }, (_, i) => c.send({ tenant, group, sender: owner, text: String(i) })));
      await fx.settle();
      let row = await list.row(tenant, u, group);
      assert.deepEqual({ unread: row?.unread, exact: row?.unreadExact }, { unread: 200, exact: false });
      assert.equal((await list.badge(tenant, u)).totalUnread, 200);
      await c.markRead({ tenant, group, user: u, seq: 100 });
      row = await list.row(tenant, u, group);
      // by hand: (100, 205] = 105 ≤ 200: exact again
      assert.deepEqual({ unread: row?.unread, exact: row?.unreadExact }, { unread: 105, exact: true });
      await c.markRead({ tenant, group, user: u, seq: 205 });
      row = await list.row(tenant, u, group);
      assert.deepEqual({ unread: row?.unread, exact: row?.unreadExact }, { unread: 0, exact: true });
    });
  });
}
