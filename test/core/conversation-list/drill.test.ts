/**
 * The rebuild drill also compares the conversation list (issue 12 "the rebuild drill also
 * compares unread cache, mentions and badges"): the drill's `compare` hook, fed by the list's
 * drillCheck, reports a row whose cached unread was corrupted on purpose and a corrupted badge,
 * and nothing on a clean list. The expected values are counted by hand from what the test sent.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, uuidToHex, type DrillReport, type Uuid } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);

    function drill(users: { tenant: Uuid; user: Uuid }[]): Promise<DrillReport> {
      return fx.engine.projection.drill.run({ users, wipe: "projection", by: "test", compare: fx.engine.conversationList.drillComparator });
    }

    test("drill: a clean list compares with zero mismatches; a corrupted row's unread and a corrupted badge are reported", async () => {
      const tenant = fx.tenant();
      const [owner, u, v] = [newUuid(), newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const { group: g1 } = await c.createGroup({ tenant, owner, members: [u, v] });
      const { group: g2 } = await c.createGroup({ tenant, owner, members: [u] });
      for (let i = 0; i < 3; i++) await c.send({ tenant, group: g1, sender: owner, text: `g1-${i}`, mentions: i === 1 ? [u] : [] });
      await c.send({ tenant, group: g2, sender: owner, text: "g2" });
      await fx.settle();
      // by hand: u has g1 (3 unread, 1 mention) and g2 (1 unread); v has g1 (3 unread); the owner sent everything (0 unread, 2 rows)
      const users = [owner, u, v].map((user) => ({ tenant, user }));

      const clean = await drill(users);
      assert.deepEqual(clean.differences, []);
      assert.equal(clean.ok, true);
      assert.equal(clean.listRowsCompared, 2 + 2 + 1, "owner 2 rows, u 2, v 1");

      // corrupt u's row of g1: its cached unread field (13th of row.ts's layout) 3 → 7, the badge untouched
      const k = fx.engine.conversationList.service.listKeys(tenant, u);
      const redis = fx.store.clientFor(k.tag);
      const raw = (await redis.hget(k.rows, uuidToHex(g1)))!;
      const f = raw.split("|");
      assert.equal(f[12], "3");
      f[12] = "7";
      await redis.hset(k.rows, uuidToHex(g1), f.join("|"));
      // and v's badge: total_unread 3 → 99
      const kv = fx.engine.conversationList.service.listKeys(tenant, v);
      await fx.store.clientFor(kv.tag).hset(kv.badge, "total_unread", 99);

      const dirty = await drill(users);
      assert.equal(dirty.ok, false);
      const shown = dirty.differences.map((d) => ({ user: d.user, conversation: d.conversation, field: d.field, before: d.before, after: d.after }));
      assert.deepEqual(shown.sort((a, b) => (a.field < b.field ? -1 : 1)), [
        // the stored badge of v against the sum over v's definitional rows (3)
        { user: v, conversation: "", field: "badgeTotalUnread", before: 99, after: 3 },
        // the cached unread of u in g1 against the definition (3 by hand)
        { user: u, conversation: g1, field: "listUnread", before: 7, after: 3 },
      ]);
      // the projection part of the drill found nothing: every difference is the list's
      assert.ok(dirty.differences.every((d) => d.field.startsWith("list") || d.field.startsWith("badge")));

      // reconcile corrects both; the next drill is clean again
      await fx.engine.conversationList.service.reconcile(tenant, u);
      await fx.engine.conversationList.service.reconcile(tenant, v);
      assert.deepEqual((await drill(users)).differences, []);
    });
  });
}
