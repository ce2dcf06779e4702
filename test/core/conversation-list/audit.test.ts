/**
 * The unread audit (spec 002 §3.4): rows with unread and no activity for 24 h, sampled, compared
 * with the definition; drift reported and exported as unread_drift_ratio, nothing corrected.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, registry, uuidToHex } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);

    test("audit: a row whose cache drifted is reported; idle rows only; unread_drift_ratio set; reconcile fixes it", async () => {
      const tenant = fx.tenant();
      const [owner, u, v] = [newUuid(), newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const list = fx.engine.conversationList.service;
      const { group } = await c.createGroup({ tenant, owner, members: [u, v] });
      for (let i = 0; i < 3; i++) await c.send({ tenant, group, sender: owner, text: String(i) });
      await fx.settle();
      // corrupt u's cached unread by hand (what a lost update would leave): 3 → 7
      const k = list.listKeys(tenant, u);
      const client = fx.store.clientFor(k.tag);
      const raw = (await client.hget(k.rows, uuidToHex(group)))!;
      const f = raw.split("|");
      f[12] = "7";
      await client.hset(k.rows, uuidToHex(group), f.join("|"));

      // the service's clock at the messages' time: not idle for 24 h yet, nothing is a candidate
      fx.clock.now = fx.msgClock.now + 1;
      const fresh = await list.audit({ sampleRate: 1, idleMs: 24 * 3600_000 });
      assert.equal(fresh.drifts.filter((d) => d.tenant === tenant).length, 0);

      const report = await list.audit({ sampleRate: 1, idleMs: 0 });
      const mine = report.drifts.filter((d) => d.tenant === tenant);
      assert.deepEqual(mine.map((d) => [d.user, d.cachedUnread, d.definitionalUnread]), [[u, 7, 3]]);
      assert.ok(report.sampled >= 2 && report.drifted >= 1);
      const gauge = await registry.getSingleMetric("unread_drift_ratio")!.get();
      assert.equal(gauge.values[0]?.value, report.drifted / report.sampled);

      const fixed = await list.reconcile(tenant, u);
      assert.equal(fixed.drift.rows, 1);
      assert.equal(fixed.drift.unread, 4);
      assert.equal((await list.row(tenant, u, group))?.unread, 3);
      assert.equal((await list.badge(tenant, u)).totalUnread, 3);
    });
  });
}
