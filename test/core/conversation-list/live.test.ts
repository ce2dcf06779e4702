/**
 * The low-latency path of the conversation list (spec 002 §2.1 "列表顺序仍走低延迟路径", §8):
 * with a compaction window of 60 s that the test never lets elapse, a send still reaches a
 * watcher's SESSION_DELTA frames and a fresh page — while the stored row, read raw from Redis,
 * has not moved and no flush ran (the order of events, not a clock). Then the flush writes the
 * row once; a record the flush wrote before the log read reached it is not written again.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, registry, SessionDeltaApplier, uuidToHex, type SessionFrame, type Uuid } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

const WINDOW_MS = 60_000;
for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind, { compactor: { windowMs: WINDOW_MS } });

    /** Waits for `ok` (at most tries × 20 ms: a bound on waiting, not an assertion on time). */
    async function until(ok: () => boolean | Promise<boolean>, what: string, tries = 500): Promise<void> {
      for (let i = 0; i < tries && !(await ok()); i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(await ok(), what);
    }

    /** The stored row straight from Redis: [unread, version] (fields 13 and 19 of row.ts's layout), or null. */
    async function storedRow(tenant: Uuid, user: Uuid, group: Uuid): Promise<{ unread: number; version: number } | null> {
      const k = fx.engine.conversationList.service.listKeys(tenant, user);
      const raw = await fx.store.clientFor(k.tag).hget(k.rows, uuidToHex(group));
      if (raw === null) return null;
      const f = raw.split("|");
      return { unread: Number(f[12]), version: Number(f[18]) };
    }

    test("a send reaches the watcher's deltas, the badge and a fresh page before the window flushes the row", async () => {
      const tenant = fx.tenant();
      const [owner, user] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const view = fx.engine.sessionView;
      const compactor = fx.engine.conversationList.compactor;
      const { group: a } = await c.createGroup({ tenant, owner, members: [user] });
      const { group: b } = await c.createGroup({ tenant, owner, members: [user] });
      await c.send({ tenant, group: a, sender: owner, text: "a1" });
      await c.send({ tenant, group: b, sender: owner, text: "b1" });
      await fx.settle();
      // by hand: one message from the owner in each → unread 1 each, b is newer → b first
      assert.deepEqual(await storedRow(tenant, user, a).then((r) => r?.unread), 1);
      assert.deepEqual((await view.page(tenant, user)).rows.map((r) => r.conversation), [b, a]);

      const applier = new SessionDeltaApplier();
      const frames: SessionFrame[] = [];
      const stop = await view.watch(tenant, user, (f) => {
        frames.push(f);
        applier.apply(f);
      });
      const flushesBefore = compactor.flushes;
      const storedBefore = await storedRow(tenant, user, a);

      // a new message in a: the relay's hand-off is the only thing that runs (no poll, no flush)
      await c.send({ tenant, group: a, sender: owner, text: "a2", mentions: [user] });
      await fx.engine.relay.drainAll();
      await until(() => applier.rows.get(a)?.unread === 2, "the delta of a arrived");
      assert.equal(applier.rows.get(a)?.mentions, 1);
      assert.equal(applier.badge?.totalUnread, 3, "badge: 2 in a + 1 in b");
      assert.equal(applier.badge?.totalMention, 1);
      assert.equal(applier.counts.gap, 0);
      // the deltas came first: no flush ran and the stored row is the one from before the send
      assert.equal(compactor.flushes, flushesBefore);
      assert.deepEqual(await storedRow(tenant, user, a), storedBefore);
      // a fresh page shows it too: a is now the newest activity, with its unread
      const page = await view.page(tenant, user);
      assert.deepEqual(page.rows.map((r) => [r.conversation, r.unread]), [[a, 2], [b, 1]]);
      assert.deepEqual((await fx.engine.conversationList.service.badge(tenant, user)).totalUnread, 3);

      // the window's flush then stores the row once, with a version above every live frame
      const liveVersion = applier.rows.get(a)!.version;
      await fx.settle();
      const stored = await storedRow(tenant, user, a);
      assert.equal(stored?.unread, 2);
      assert.ok(stored!.version > liveVersion, `stored version ${stored?.version} above live ${liveVersion}`);
      await until(() => (applier.rows.get(a)?.version ?? 0) >= stored!.version, "the flush's frame arrived");
      assert.equal(applier.rows.get(a)?.unread, 2, "the flush's frame is the same absolute value");
      assert.equal(applier.counts.gap, 0);
      assert.ok(frames.some((f) => f.kind === "delta"));
      stop();
    });

    test("hand-offs in quick succession: at most one live read each, and the last one's state always reaches the watcher", async () => {
      const liveChanges = async () => (await registry.getSingleMetric("qim_conversation_list_live_changes_total")!.get()).values[0]?.value ?? 0;
      const tenant = fx.tenant();
      const [owner, user] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const { group } = await c.createGroup({ tenant, owner, members: [user] });
      await c.send({ tenant, group, sender: owner, text: "0" });
      await fx.settle();
      const applier = new SessionDeltaApplier();
      const stop = await fx.engine.sessionView.watch(tenant, user, (f) => applier.apply(f));
      await until(() => applier.badge?.totalUnread === 1, "the watch's first frame");
      const flushesBefore = fx.engine.conversationList.compactor.flushes;
      const before = await liveChanges();
      // five hand-offs back to back (each a send and a relay drain): most land inside the user's
      // publication interval and wait for its end; none may be lost there
      const HANDOFFS = 5;
      for (let i = 1; i <= HANDOFFS; i++) {
        await c.send({ tenant, group, sender: owner, text: String(i) });
        await fx.engine.relay.drainAll();
      }
      // by hand: 1 + 5 messages from the owner, none read → unread 6, the badge likewise
      await until(() => applier.rows.get(group)?.unread === 1 + HANDOFFS, "the last hand-off's state arrived");
      assert.equal(applier.badge?.totalUnread, 1 + HANDOFFS);
      assert.equal(fx.engine.conversationList.compactor.flushes, flushesBefore, "live frames, not a flush's");
      const reads = await liveChanges() - before;
      assert.ok(reads >= 1 && reads <= HANDOFFS, `${reads} live publications for ${HANDOFFS} hand-offs`);
      assert.equal(applier.counts.gap, 0);
      stop();
    });

    test("a new group's row, not stored yet: one recompute, then the window's records move it (no read per message)", async () => {
      const liveRecomputes = async () => (await registry.getSingleMetric("qim_conversation_list_recompute_total")!.get()).values.find((v) => v.labels.cause === "live")?.value ?? 0;
      const tenant = fx.tenant();
      const [owner, user] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const { group } = await c.createGroup({ tenant, owner, members: [user] });
      await c.send({ tenant, group, sender: owner, text: "1" });
      await fx.engine.relay.drainAll();
      await until(() => fx.engine.conversationList.compactor.heldOf(tenant, user).has(uuidToHex(group)), "the first message is held for the user");
      // no flush wrote the row (the window never elapses here): the user has no stored row of the group
      assert.equal(await storedRow(tenant, user, group), null);
      const before = await liveRecomputes();
      const applier = new SessionDeltaApplier();
      const stop = await fx.engine.sessionView.watch(tenant, user, (f) => applier.apply(f));
      // its first frame is the badge (the live view of every held row: this one recomputed)
      await until(() => applier.badge?.totalUnread === 1, "the watch's first frame: one message from the owner");
      // by hand: each further message from the owner adds one unread; the third mentions the user
      for (const [i, text] of ["2", "3"].entries()) {
        await c.send({ tenant, group, sender: owner, text, ...(i === 1 ? { mentions: [user] } : {}) });
        await fx.engine.relay.drainAll();
        await until(() => applier.rows.get(group)?.unread === i + 2, `the delta of message ${i + 2} arrived`);
      }
      assert.equal(applier.rows.get(group)?.mentions, 1);
      assert.equal(applier.badge?.totalUnread, 3);
      assert.equal(await storedRow(tenant, user, group), null, "every frame was the live view's");
      assert.equal(await liveRecomputes() - before, 1, "the watch's first read recomputed the row; the next two messages moved it");
      // the flush then stores what the frames said
      await fx.settle();
      assert.equal((await storedRow(tenant, user, group))?.unread, 3);
      assert.equal(applier.counts.gap, 0);
      stop();
    });

    test("a record written by a flush before the log read reached it is not held again (one write per window)", async () => {
      const tenant = fx.tenant();
      const [owner, user] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const compactor = fx.engine.conversationList.compactor;
      const { group } = await c.createGroup({ tenant, owner, members: [user] });
      await c.send({ tenant, group, sender: owner, text: "1" });
      await fx.settle();
      await c.send({ tenant, group, sender: owner, text: "2" });
      await fx.engine.relay.drainAll();
      await until(() => compactor.heldOf(tenant, user).size > 0, "the hand-off held the record");
      // the window ends before the log read reached the record: the flush writes it from the hand-off
      fx.clock.now += WINDOW_MS;
      assert.equal(await compactor.flushIfDue(), true);
      const written = await storedRow(tenant, user, group);
      assert.equal(written?.unread, 2);
      // the log read now reaches the same record: nothing is held, the next window writes nothing
      await compactor.poll();
      assert.equal(compactor.heldOf(tenant, user).size, 0);
      fx.clock.now += WINDOW_MS;
      await compactor.flushIfDue();
      assert.deepEqual(await storedRow(tenant, user, group), written);
    });
  });
}
