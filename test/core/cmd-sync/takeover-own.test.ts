/**
 * Issue 23, suspected: "during a slot's recovery after a takeover the sender's pending read is not
 * yet rebuilt, so a sync may return the sender's own command". Two CmdSync instances on one real
 * redis-server stand for the old and the new owner of the user's slot: the old one holds the
 * sender's own command only in its pending buffer (never flushed) and is abandoned as a SIGKILL
 * leaves it (no stop, so no last flush and no file); the new one starts without a catch-up round,
 * which is the window before its recovery has pushed anything, and serves the user's sync there,
 * then again after its recovery round.
 *
 * It reproduced before the fix: the durable rows of the user's channels were loaded from their read
 * seq + 1 with nothing bounding the load, so the sender's own seq came back while the pending entry
 * that reads it was gone. A sync now loads only unread rows and answers nothing beyond the last seq
 * the state knows to concern the user; a newer message comes with its intent, and the intent
 * carries the sender's read seq.
 *
 * Expected answers are worked out by hand from the sends below.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CmdSync, KeySpace, newUuid, type CmdSendRequest, type Uuid } from "../../../core/index.js";
import { useCmdRedis } from "./fixture.js";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("takeover before recovery: the sender's own command (issue 23)", { timeout: 120_000 }, () => {
  const fx = useCmdRedis();

  test("a sync at the new owner before and after its recovery never answers the user's own command; the other sender's commands come back once", async () => {
    const keys = new KeySpace(`tk${newUuid().slice(0, 8)}`);
    const make = () => new CmdSync({ store: fx.store, keys, cluster: null, log: () => {} }, { catchUpIntervalMs: 0, flushIntervalMs: 0 });
    const tenant = newUuid();
    const user = newUuid();
    const other = newUuid();
    const send = (cmd: CmdSync, channelId: string, from: Uuid, to: Uuid[]) =>
      cmd.send({ tenant, channelId, channelType: 2, from, to, noPersist: false, payload: bytes(`${channelId} from ${from === user ? "user" : "other"}`) } satisfies CmdSendRequest);
    const answer = async (cmd: CmdSync) => (await cmd.syncLocal(tenant, user, 100)).messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`).sort();

    const oldOwner = make();
    await oldOwner.start();
    // a____cmd: other → user (seq 1), read by the user and acked, durable
    // b____cmd: other → user (seq 1), read and acked; then other → user (seq 2), flushed, unread
    await send(oldOwner, "a____cmd", other, [user]);
    await send(oldOwner, "b____cmd", other, [user]);
    await oldOwner.flush();
    assert.deepEqual(await answer(oldOwner), ["a____cmd#1", "b____cmd#1"]);
    await oldOwner.ackLocal(tenant, user, 1);
    await send(oldOwner, "b____cmd", other, [user]);
    await oldOwner.flush();
    // the user's own commands, pending only at the old owner: a____cmd seq 2 (its row is read),
    // b____cmd seq 3 (its row is unread up to 2), c____cmd seq 1 (no row at all)
    await send(oldOwner, "a____cmd", user, [user, other]);
    await send(oldOwner, "b____cmd", user, [user, other]);
    await send(oldOwner, "c____cmd", user, [user, other]);
    // at the old owner the user's own seq 3 on b____cmd reads b up to 3 (spec 001: the sender's read
    // seq is its own seq, a max), so nothing is answered there
    assert.deepEqual(await answer(oldOwner), []);
    assert.equal(oldOwner.pendingEntries(), 6, "the three commands' entries of the user and of the other are only in the old owner's memory");
    // the old owner dies here: never stopped, so nothing of its buffer reaches Redis

    const newOwner = make();
    await newOwner.start();
    try {
      assert.equal(newOwner.pendingEntries(), 0, "before its recovery the new owner has no pending entry of the user");
      // during the window: b____cmd#2 (the other's, unread) and nothing of the user's own
      assert.deepEqual(await answer(newOwner), ["b____cmd#2"]);
      await newOwner.ackLocal(tenant, user, 2);
      assert.deepEqual(await answer(newOwner), [], "nothing else, still before the recovery");
      // the recovery: the scan pushes every commit of the log past the (absent) flush point
      await newOwner.catchUp.round();
      // (its round also flushes, at its first flush point): the user's rows read up to its own seqs
      const read = async (channelId: string) => (await newOwner.states.get(tenant, user, { channelId, channelType: 2 }))?.readSeq;
      assert.deepEqual([await read("a____cmd"), await read("b____cmd"), await read("c____cmd")], [2, 3, 1], "the recovery rebuilt the sender's reads");
      assert.deepEqual(await answer(newOwner), [], "after the recovery: the user's own commands read by their sender");
      await newOwner.flush();
      assert.deepEqual(await answer(newOwner), [], "and once it is durable");
      // the other user (a recipient of the user's commands) gets all three
      const otherGot = (await newOwner.syncLocal(tenant, other, 100)).messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`).sort();
      assert.deepEqual(otherGot, ["a____cmd#2", "b____cmd#3", "c____cmd#1"]);
    } finally {
      await newOwner.stop();
    }
  });
});
