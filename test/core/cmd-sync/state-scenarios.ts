/**
 * The durable CMD state's cases (spec 001 StateStore), one table for every store: the same
 * expectations, worked out by hand, hold on Redis (state.test.ts: one redis-server and a Redis
 * Cluster) and on Cassandra (state-cassandra.test.ts). Rows are created and max-merged (never moved
 * back by a replay or an older write), listed per user in (activeAt DESC, type, id) order, advanced
 * only where they exist, and every write is fenced by the slot's lease — a write carrying a fence
 * the lease does not name changes nothing.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  CmdFencedError, InvalidArgumentError, newUuid, slotOfUser, type CmdConversationState, type CmdStateStore, type KeySpace, type RedisStore, type Uuid,
} from "../../../core/index.js";
import { SOLO, takeLease, userOutside, usersInSlot } from "./fixture.js";

export interface StateStoreFixture {
  /** The Redis that holds the slots' leases (and, for the Redis store, the rows). */
  readonly store: RedisStore;
  /** A fresh key space and a state store over it (keys and rows of one test only). */
  fresh(): Promise<{ space: KeySpace; states: CmdStateStore }>;
  /** The raw stored rows (and index) of these users, for "nothing changed" checks: equal dumps, equal data. */
  dump(space: KeySpace, tenant: Uuid, users: readonly Uuid[]): Promise<string>;
}

export const ch = (channelId: string, channelType = 2) => ({ channelId, channelType });
export const row = (tenant: Uuid, user: Uuid, channelId: string, readSeq: number, activeAt: number, extra: Partial<CmdConversationState> = {}): CmdConversationState => ({
  tenant, user, channel: ch(channelId, extra.channel?.channelType ?? 2), readSeq, deletedToSeq: 0, activeAt, updatedAt: 1000, lastMsgSeq: 0, ...extra,
});

/** The cases inside `describe(label)`; `useFixture` runs inside it, so its before/after hooks are the describe's. */
export function cmdStateScenarios(label: string, useFixture: () => StateStoreFixture): void {
  describe(label, () => {
    const fx = useFixture();
    it("upsert creates rows; a second upsert max-merges read, deleted-to, active at and updated at field by field", async () => {
      const { states } = await fx.fresh();
      const tenant = newUuid();
      const user = newUuid();
      await states.upsertStates([row(tenant, user, "g1____cmd", 3, 100, { deletedToSeq: 2, updatedAt: 10 })], SOLO);
      // older read and active time, newer deleted-to and updated-at: each field keeps its max
      await states.upsertStates([row(tenant, user, "g1____cmd", 1, 50, { deletedToSeq: 5, updatedAt: 20 })], SOLO);
      const got = await states.get(tenant, user, ch("g1____cmd"));
      assert.deepEqual(got, { tenant, user, channel: ch("g1____cmd"), readSeq: 3, deletedToSeq: 5, activeAt: 100, updatedAt: 20, lastMsgSeq: 0 });
      // a replay of the same batch changes nothing
      await states.upsertStates([row(tenant, user, "g1____cmd", 1, 50, { deletedToSeq: 5, updatedAt: 20 })], SOLO);
      assert.deepEqual(await states.get(tenant, user, ch("g1____cmd")), got);
      // nothing of read, deleted-to, active at grows: the newer updated at is not written either
      await states.upsertStates([row(tenant, user, "g1____cmd", 3, 100, { deletedToSeq: 5, updatedAt: 99 })], SOLO);
      assert.deepEqual(await states.get(tenant, user, ch("g1____cmd")), got);
      assert.equal(await states.get(tenant, user, ch("g1____cmd", 1)), null, "the type is part of the key");
    });

    it("listActive: one user's rows in (activeAt DESC, type, id) order, limit applied, other users apart", async () => {
      const { states } = await fx.fresh();
      const tenant = newUuid();
      const [u, v] = usersInSlot(tenant, 2);
      await states.upsertStates([
        row(tenant, u!, "b____cmd", 0, 100),
        row(tenant, u!, "a____cmd", 0, 100),
        row(tenant, u!, "a____cmd", 0, 100, { channel: ch("a____cmd", 1) }),
        row(tenant, u!, "old____cmd", 0, 5),
        row(tenant, u!, "new____cmd", 0, 1_700_000_000_000),
        row(tenant, v!, "zzz____cmd", 0, 999_999_999_999_999),
      ], SOLO);
      const ids = (await states.listActive(tenant, u!, 10)).map((s) => `${s.channel.channelType}/${s.channel.channelId}/${s.activeAt}`);
      assert.deepEqual(ids, ["2/new____cmd/1700000000000", "1/a____cmd/100", "2/a____cmd/100", "2/b____cmd/100", "2/old____cmd/5"]);
      assert.deepEqual((await states.listActive(tenant, u!, 2)).map((s) => s.channel.channelId), ["new____cmd", "a____cmd"]);
      assert.deepEqual((await states.listActive(tenant, v!, 10)).map((s) => s.channel.channelId), ["zzz____cmd"]);
      // a newer active time moves the row to the front (the index entry is replaced, not added)
      await states.upsertStates([row(tenant, u!, "old____cmd", 0, 2_000_000_000_000)], SOLO);
      const after = await states.listActive(tenant, u!, 10);
      assert.deepEqual(after.map((s) => s.channel.channelId), ["old____cmd", "new____cmd", "a____cmd", "a____cmd", "b____cmd"]);
    });

    it("listUnread: only rows whose last seq is beyond max(read, deleted-to), in index order; a read advance takes a row out, a newer last seq brings it back (issue 23)", async () => {
      const { states } = await fx.fresh();
      const tenant = newUuid();
      const [u, v] = usersInSlot(tenant, 2);
      await states.upsertStates([
        row(tenant, u!, "a____cmd", 0, 100, { lastMsgSeq: 3 }), // unread: 3 > 0
        row(tenant, u!, "b____cmd", 5, 200, { lastMsgSeq: 5 }), // read
        row(tenant, u!, "c____cmd", 1, 50, { deletedToSeq: 4, lastMsgSeq: 4 }), // read by its deleted-to
        row(tenant, u!, "d____cmd", 2, 300, { lastMsgSeq: 6 }), // unread
        row(tenant, v!, "e____cmd", 0, 400, { lastMsgSeq: 1 }), // another user's
      ], SOLO);
      const ids = async (limit = 10) => (await states.listUnread(tenant, u!, limit)).map((s) => s.channel.channelId);
      assert.deepEqual(await ids(), ["d____cmd", "a____cmd"]);
      assert.deepEqual(await ids(1), ["d____cmd"]);
      assert.deepEqual((await states.listActive(tenant, u!, 10)).map((s) => s.channel.channelId), ["d____cmd", "b____cmd", "a____cmd", "c____cmd"], "listActive lists read rows too");
      await states.advanceReadSeqs([{ tenant, user: u!, channel: ch("d____cmd"), readSeq: 6 }], SOLO, 2000);
      assert.deepEqual(await ids(), ["a____cmd"]);
      // a flush of a newer message (last seq 7, active 400) makes b unread again, at its new place
      await states.upsertStates([row(tenant, u!, "b____cmd", 0, 400, { lastMsgSeq: 7 })], SOLO);
      assert.deepEqual(await ids(), ["b____cmd", "a____cmd"]);
      // a's active time moves while it stays unread: one entry, at its new place
      await states.upsertStates([row(tenant, u!, "a____cmd", 0, 500, { lastMsgSeq: 3 })], SOLO);
      assert.deepEqual(await ids(), ["a____cmd", "b____cmd"]);
      // an older last seq never lowers the stored one; a read up to it (an ack's upsert) takes the row out
      await states.upsertStates([row(tenant, u!, "a____cmd", 3, 500, { lastMsgSeq: 1 })], SOLO);
      assert.equal((await states.get(tenant, u!, ch("a____cmd")))!.lastMsgSeq, 3);
      assert.deepEqual(await ids(), ["b____cmd"]);
      assert.deepEqual((await states.getMany(tenant, u!, [ch("b____cmd"), ch("missing____cmd"), ch("c____cmd")])).map((s) => `${s.channel.channelId}:${s.readSeq}/${s.lastMsgSeq}`),
        ["b____cmd:5/7", "c____cmd:1/4"]);
    });

    it("advanceReadSeqs advances existing rows only, never backwards", async () => {
      const { states } = await fx.fresh();
      const tenant = newUuid();
      const user = newUuid();
      await states.upsertStates([row(tenant, user, "g1____cmd", 4, 100)], SOLO);
      await states.advanceReadSeqs([
        { tenant, user, channel: ch("g1____cmd"), readSeq: 7 },
        { tenant, user, channel: ch("missing____cmd"), readSeq: 9 },
      ], SOLO, 5000);
      assert.deepEqual(await states.get(tenant, user, ch("g1____cmd")), { tenant, user, channel: ch("g1____cmd"), readSeq: 7, deletedToSeq: 0, activeAt: 100, updatedAt: 5000, lastMsgSeq: 0 });
      assert.equal(await states.get(tenant, user, ch("missing____cmd")), null, "a patch for a missing row is a no-op");
      await states.advanceReadSeqs([{ tenant, user, channel: ch("g1____cmd"), readSeq: 3 }], SOLO, 6000);
      assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 7);
      assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.updatedAt, 5000, "a write that advances nothing touches nothing");
    });

    it("a write whose fence the slot's lease does not name is refused whole: CmdFencedError, nothing changed", async () => {
      const { space, states } = await fx.fresh();
      const tenant = newUuid();
      const [a, b] = usersInSlot(tenant, 2);
      const slot = slotOfUser(tenant, a!);
      await states.upsertStates([row(tenant, a!, "g1____cmd", 1, 100)], SOLO);
      const nodeB = await takeLease(fx.store, space, slot);
      const before = await fx.dump(space, tenant, [a!, b!]);
      await assert.rejects(states.upsertStates([row(tenant, a!, "g1____cmd", 9, 900), row(tenant, b!, "g2____cmd", 1, 1)], SOLO),
        (err: unknown) => err instanceof CmdFencedError && err.code === "STALE_OWNER" && err.slot === slot);
      await assert.rejects(states.advanceReadSeqs([{ tenant, user: a!, channel: ch("g1____cmd"), readSeq: 9 }], SOLO), CmdFencedError);
      assert.equal(await fx.dump(space, tenant, [a!, b!]), before);
      // the lease's own owner and token are accepted
      await assert.rejects(states.upsertStates([row(tenant, a!, "g1____cmd", 9, 900)], { owner: "node-b", token: nodeB.token - 1 }), CmdFencedError, "an older token of the owner");
      await states.upsertStates([row(tenant, a!, "g1____cmd", 9, 900)], nodeB);
      assert.equal((await states.get(tenant, a!, ch("g1____cmd")))!.readSeq, 9);
    });

    it("a batch spanning two slots, a non-command channel or a type 0 is rejected before any write", async () => {
      const { states } = await fx.fresh();
      const tenant = newUuid();
      const a = newUuid();
      const b = userOutside(tenant, [slotOfUser(tenant, a)]);
      await assert.rejects(states.upsertStates([row(tenant, a, "g1____cmd", 1, 1), row(tenant, b, "g1____cmd", 1, 1)], SOLO), InvalidArgumentError);
      await assert.rejects(states.upsertStates([row(tenant, a, "plain", 1, 1)], SOLO), InvalidArgumentError);
      await assert.rejects(states.upsertStates([row(tenant, a, "g1____cmd", 1, 1, { channel: ch("g1____cmd", 0) })], SOLO), InvalidArgumentError);
      assert.equal(await states.get(tenant, a, ch("g1____cmd")), null);
    });
  });
}
