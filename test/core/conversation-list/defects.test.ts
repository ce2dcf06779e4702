/**
 * The two defects of the phase-1 list (issue 12), each with a user who has more conversations
 * than a page: page 1 must be the conversations with the newest VISIBLE activity — both in the
 * session projection's page (`convs` + UserSessionProjection.listSessions) and in the list rows.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, type Uuid } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);

    async function rowsPage(tenant: Uuid, user: Uuid, n: number): Promise<Uuid[]> {
      const rows = await fx.engine.conversationList.service.rows(tenant, user);
      return rows.filter((r) => r.lastActivityId !== "").sort((a, b) => (a.lastActivityId < b.lastActivityId ? 1 : -1)).slice(0, n).map((r) => r.conversation);
    }

    test("defect 1: after a rebuild, page 1 holds the newest activity, not the first seen", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const groups: Uuid[] = [];
      for (let i = 0; i < 5; i++) groups.push((await c.createGroup({ tenant, owner, members: [u] })).group);
      // first seen in order G0..G4, then newer activity in G0 and G1: by hand the newest two are G1, G0
      for (const g of groups) await c.send({ tenant, group: g, sender: owner, text: "first" });
      await c.send({ tenant, group: groups[0]!, sender: owner, text: "again" });
      await c.send({ tenant, group: groups[1]!, sender: owner, text: "again" });
      await fx.settle();
      await fx.engine.projection.registration.drainAll();
      const sessions = fx.engine.projection.sessions;
      const want = [groups[1]!, groups[0]!];
      assert.deepEqual((await sessions.listSessions({ tenant, user: u, limit: 2 })).sessions.map((s) => s.group), want);

      // the projection is lost: wipe it, bump the epoch, rebuild on the next pull
      await sessions.wipeUser(tenant, u);
      await fx.engine.projection.epoch.bump("test: projection lost", "test");
      const page = await sessions.listSessions({ tenant, user: u, limit: 2 });
      assert.equal(page.rebuilt, true);
      assert.deepEqual(page.sessions.map((s) => s.group), want);

      await fx.engine.conversationList.service.rebuild(tenant, u);
      assert.deepEqual(await rowsPage(tenant, u, 2), want);
    });

    test("defect 2: a removed user's conversation is not ranked by their own removal event", async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const groups: Uuid[] = [];
      for (let i = 0; i < 4; i++) groups.push((await c.createGroup({ tenant, owner, members: [u] })).group);
      for (const g of groups) await c.send({ tenant, group: g, sender: owner, text: "m" });
      // the removal from G0 is the newest event, but u cannot see it: by hand page 1 = G3, G2
      await c.removeMembers({ tenant, group: groups[0]!, users: [u] });
      await fx.settle();
      const want = [groups[3]!, groups[2]!];
      const sessions = fx.engine.projection.sessions;
      assert.deepEqual((await sessions.listSessions({ tenant, user: u, limit: 2 })).sessions.map((s) => s.group), want);
      assert.deepEqual(await rowsPage(tenant, u, 2), want);
      const g0 = await fx.engine.conversationList.service.row(tenant, u, groups[0]!);
      assert.equal(g0?.membership, "REMOVED");
      assert.equal(g0?.lastActivitySeq, 1, "the head is clipped before the removal (left_at = 2)");

      await fx.engine.projection.registration.drainAll();
      await sessions.wipeUser(tenant, u);
      await fx.engine.projection.epoch.bump("test: projection lost", "test");
      assert.deepEqual((await sessions.listSessions({ tenant, user: u, limit: 2 })).sessions.map((s) => s.group), want);
    });
  });
}
