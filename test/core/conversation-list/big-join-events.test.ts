/**
 * A message to a group filled by 1,000-user adds (issue 22): every member's row is made by a
 * recompute whose range spans the later ~21 KB join events (the consumer was behind the adds),
 * and a replay of the send (checkpoints put back, as after a crash between a flush and its
 * checkpoint) recomputes every row again. Rows as worked out by hand, the same after the replay.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { listCheckpointKey, MAX_USERS_PER_MEMBERSHIP_CALL, newUuid, registry, type Uuid } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

async function recomputes(cause: string): Promise<number> {
  const m = await registry.getSingleMetric("qim_conversation_list_recompute_total")!.get();
  return m.values.find((v) => v.labels.cause === cause)?.value ?? 0;
}

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);

    test("1,000-user join events between a member's join and the send: unread and mentions by hand, once, also after a replay", { timeout: 300_000 }, async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const c = fx.engine.conversations;
      const list = fx.engine.conversationList.service;
      const { group } = await c.createGroup({ tenant, owner, members: [] });
      const batches: Uuid[][] = [];
      for (let i = 0; i < 3; i++) {
        const users = Array.from({ length: MAX_USERS_PER_MEMBERSHIP_CALL }, () => newUuid());
        const r = await c.addMembers({ tenant, group, users }); // seqs 1, 2, 3
        assert.equal(r.eventConversationSeq, i + 1);
        batches.push(users);
      }
      const k = c.conversationKeys(tenant, group);
      const client = fx.store.clientFor(k.tag);
      assert.ok((await client.zrangebyscore(k.hist, 1, 1))[0]!.length > 20_000, "a join event of 1,000 users is ~21 KB");
      const [a, b, cc] = [batches[0]![0]!, batches[1]![0]!, batches[2]![0]!];
      await c.send({ tenant, group, sender: owner, text: "4", mentions: [a] }); // 4
      await c.send({ tenant, group, sender: cc, text: "5" }); // 5
      const partitions = fx.engine.dispatchLog.identity.partitionCount;
      const ckptKeys = Array.from({ length: partitions }, (_, p) => listCheckpointKey(fx.engine.keys, fx.engine.dispatchLog.identity.topicId, p));
      const ckptClient = (key: string) => fx.store.clientForKey(key);
      const before = await Promise.all(ckptKeys.map((key) => ckptClient(key).get(key)));
      const newRows = await recomputes("new_row");
      await fx.settle();
      // every member's row (and the owner's) is made after the send: one recompute each
      assert.equal(await recomputes("new_row") - newRows, 3 * MAX_USERS_PER_MEMBERSHIP_CALL + 1);

      // by hand: joined_at = join seq − 1; 1–3 are control messages (never count)
      //   a (joined_at 0): 4 (owner, names a), 5 (cc) → 2, mention at 4
      //   b (joined_at 1): 4, 5 → 2
      //   cc (joined_at 2): 4; 5 is cc's own → 1
      //   owner (joined_at 0): 5 → 1
      const expected: [Uuid, number, number, number | null][] = [[a, 2, 1, 4], [b, 2, 0, null], [cc, 1, 0, null], [owner, 1, 0, null]];
      const check = async (when: string) => {
        for (const [u, unread, mentions, first] of expected) {
          const row = await list.row(tenant, u, group);
          assert.deepEqual([row?.unread, row?.unreadExact, row?.mentions, row?.mentionFirstSeq, row?.headSeq], [unread, true, mentions, first, 5], `${when}: ${u}`);
        }
      };
      await check("after the send");

      // the replay: checkpoints back to before the send, the consumer reads it all again
      for (const [i, key] of ckptKeys.entries()) {
        if (before[i] === null) await ckptClient(key).del(key);
        else await ckptClient(key).set(key, before[i]!);
      }
      await fx.engine.conversationList.compactor.load();
      const replayed = (await recomputes("late_or_repeated")) + (await recomputes("membership"));
      await fx.settle();
      // a member's held records start with their own join event (membership), the owner's with 4 (not newer): one recompute each
      assert.equal((await recomputes("late_or_repeated")) + (await recomputes("membership")) - replayed, 3 * MAX_USERS_PER_MEMBERSHIP_CALL + 1);
      await check("after the replay");
    });
  });
}
