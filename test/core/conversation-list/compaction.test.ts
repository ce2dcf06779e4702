/**
 * Compaction (spec 002 §2.1, §8): J-1 (write compression with the spec's numbers, counted by
 * Redis MONITOR — independent of the engine's own counter) and J-3 (a late low-seq record is
 * still counted; the consumer never reads past what the log holds).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Redis } from "ioredis";
import { ConversationService, newUuid, uuidToHex, type DispatchRecord } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);

    // J-1 counts writes with MONITOR on the one server; the compaction logic it measures is the same on a cluster
    if (kind === "single") test("J-1: 1000-member group, 1000 messages at 20 msg/s over 50 s, window 5 s: ≤ ceil(50/5)+1 = 11 row writes per member, ratio ≥ 90", { timeout: 900_000 }, async () => {
      const MEMBERS = 1000;
      const MESSAGES = 1000;
      const RATE = 20; // msg/s
      const WINDOW_MS = 5000;
      const tenant = fx.tenant();
      const owner = newUuid();
      const members = [owner, ...Array.from({ length: MEMBERS - 1 }, () => newUuid())];
      const c = fx.engine.conversations;
      const { group } = await c.createGroup({ tenant, owner, members });
      const groupHex = uuidToHex(group);

      // MONITOR sees every applyRows call with its keys and arguments: count per user the rows of this conversation written
      const addr = fx.topology.config.kind === "instances" ? fx.topology.config.addrs[0]! : "";
      const [host, port] = addr.split(":");
      const monitorClient = new Redis({ host, port: Number(port), lazyConnect: true });
      await monitorClient.connect();
      const monitor = await monitorClient.monitor();
      const writes = new Map<string, number>();
      monitor.on("monitor", (_time: string, args: string[]) => {
        if (args[0]?.toLowerCase() !== "evalsha" || !args[3]?.includes(":clrows:")) return;
        const user = args[3].slice(-32);
        // ARGV of applyRows-4: includeMuted, drivingEventId, fullBadge, then 5 per row
        const argv = args.slice(3 + Number(args[2]));
        for (let i = 3; i < argv.length; i += 5) if (argv[i] === groupHex) writes.set(user, (writes.get(user) ?? 0) + 1);
      });

      const compactor = fx.engine.conversationList.compactor;
      const start = fx.clock.now;
      const stepMs = 250; // deliver and poll every 250 ms of the injected clock: 5 messages per step
      for (let sent = 0; sent < MESSAGES;) {
        for (let i = 0; i < (RATE * stepMs) / 1000 && sent < MESSAGES; i++, sent++) {
          const sender = members[1 + (sent % (MEMBERS - 1))]!;
          await c.send({ tenant, group, sender, text: String(sent) });
        }
        await fx.engine.relay.drainAll();
        await compactor.poll();
        await compactor.flushIfDue();
        fx.clock.now += stepMs;
      }
      const spanMs = fx.clock.now - start - stepMs;
      assert.ok(spanMs <= 50_000, `span ${spanMs}`);
      // the stream ends: the closing flush (the "+1")
      await compactor.poll();
      fx.clock.now += WINDOW_MS;
      await compactor.flushIfDue();
      // MONITOR delivers asynchronously: a PING through the monitored server comes after every write
      await fx.store.clientFor("{u000}").ping();
      await new Promise((r) => setTimeout(r, 200));
      monitor.disconnect();
      await monitorClient.quit();

      const bound = Math.ceil(50 / 5) + 1;
      assert.equal(writes.size, MEMBERS, "every member's row was written");
      const max = Math.max(...writes.values());
      const total = [...writes.values()].reduce((a, b) => a + b, 0);
      assert.ok(max <= bound, `at most ${bound} writes per member, saw ${max}`);
      const ratio = MESSAGES / max;
      assert.ok(ratio >= 90, `compression ratio ${ratio}`);
      // and the rows are right: every member but the sender of a message counts it; by hand
      const row = await fx.engine.conversationList.service.row(tenant, owner, group);
      assert.deepEqual({ unread: row?.unread, exact: row?.unreadExact }, { unread: 200, exact: false });
      process.stdout.write(`J-1: ${MEMBERS} members, ${MESSAGES} messages, max writes per member ${max}, mean ${(total / MEMBERS).toFixed(2)}, ratio ${ratio.toFixed(1)}\n`);
    });

    /**
     * A group of the owner and u behind a writer nobody relays: its commits stay in the outbox,
     * and the test hands or appends their dispatch records (`record`) in the order it wants.
     */
    const quietGroup = async () => {
      const tenant = fx.tenant();
      const [owner, u] = [newUuid(), newUuid()];
      const quiet = new ConversationService(fx.store, { keyPrefix: fx.engine.keys.prefix });
      const { group } = await quiet.createGroup({ tenant, owner, members: [u] });
      const k = quiet.conversationKeys(tenant, group);
      const record = async (seq: number): Promise<DispatchRecord> => {
        const entry = (await fx.store.clientFor(k.tag).zrangebyscore(k.hist, seq, seq))[0]!;
        return { tenant, conversation: group, conversationSeq: seq, version: 1, entry, recipients: [owner, u], chunk: 0 };
      };
      return { tenant, owner, u, group, quiet, record };
    };

    test("J-3: a late low-seq record (a retry that completes after a newer one) is still counted; the consumer never passes the log's high watermark", async () => {
      const { tenant, owner, u, group, quiet, record } = await quietGroup();
      const log = fx.engine.dispatchLog;
      const compactor = fx.engine.conversationList.compactor;
      const list = fx.engine.conversationList.service;
      const neverPast = async () => {
        for (const cp of compactor.checkpoints()) {
          const w = await log.watermarks(cp.partition);
          assert.ok(cp.next.offset <= w.high, `partition ${cp.partition}: read up to ${cp.next.offset} > high ${w.high}`);
          assert.ok((cp.stored?.offset ?? 0) <= cp.next.offset);
        }
      };
      const round = async () => {
        await compactor.poll();
        await neverPast();
        fx.clock.now += 60_000;
        await compactor.flushIfDue();
        await neverPast();
      };

      await quiet.send({ tenant, group, sender: owner, text: "1" });
      await log.append([await record(1)]);
      await round();
      for (let i = 2; i <= 4; i++) await quiet.send({ tenant, group, sender: owner, text: String(i), mentions: i === 2 ? [u] : [] });
      await log.append([await record(3), await record(4)]);
      await round();
      // by hand so far: delivered 1, 3, 4 — cached 3, the head 4 (2 is committed, not yet delivered)
      let row = await list.row(tenant, u, group);
      assert.deepEqual({ head: row?.lastActivitySeq, unread: row?.unread }, { head: 4, unread: 3 });
      // the retried record 2 (mentions u) completes late, after 3 and 4
      await log.append([await record(2)]);
      await round();
      row = await list.row(tenant, u, group);
      // by hand: 1..4 all from the owner → 4 unread; seq 2 mentions u
      assert.deepEqual({ unread: row?.unread, mentions: row?.mentions, first: row?.mentionFirstSeq }, { unread: 4, mentions: 1, first: 2 });
      // the same late record delivered again (at-least-once) is not counted twice
      await log.append([await record(2)]);
      await round();
      row = await list.row(tenant, u, group);
      assert.equal(row?.unread, 4);
      assert.equal((await list.badge(tenant, u)).totalUnread, 4);
    });

    test("a record is held once per row in a window, in whatever order and how often the hand-off and the log bring it", async () => {
      const { tenant, owner, u, group, quiet, record } = await quietGroup();
      for (let i = 1; i <= 4; i++) await quiet.send({ tenant, group, sender: owner, text: String(i) });
      const compactor = fx.engine.conversationList.compactor;
      const [r1, r2, r3, r4] = [await record(1), await record(2), await record(3), await record(4)];
      // in order, then a repeat of the newest, then older ones out of order, then repeats of each
      compactor.lowLatency([r3]);
      compactor.lowLatency([r3]);
      compactor.lowLatency([r1]);
      compactor.lowLatency([r2, r1, r3]);
      compactor.lowLatency([r4, r2]);
      const held = (user: string) => [...(compactor.heldOf(tenant, user as typeof u).values())].flat().map((e) => e.seq);
      // by hand: each seq once, in the order each first came
      assert.deepEqual(held(u), [3, 1, 2, 4]);
      assert.deepEqual(held(owner), [3, 1, 2, 4]);
      fx.clock.now += 60_000;
      await compactor.flushIfDue();
      // by hand: 4 messages from the owner, each counted once for u
      const row = await fx.engine.conversationList.service.row(tenant, u, group);
      assert.deepEqual({ unread: row?.unread, head: row?.lastActivitySeq }, { unread: 4, head: 4 });
    });

    test("the log read passes by the records the relay's hand-off held: rows written at the flush are not held or written again", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const [u1, u2] = [newUuid(), newUuid()];
      const c = fx.engine.conversations;
      const { group } = await c.createGroup({ tenant, owner, members: [u1, u2] });
      const compactor = fx.engine.conversationList.compactor;
      const list = fx.engine.conversationList.service;
      // nothing else held: earlier tests' records are read and written first
      await fx.settle();
      for (let i = 1; i <= 3; i++) await c.send({ tenant, group, sender: owner, text: String(i) });
      await fx.engine.relay.drainAll();
      await new Promise((r) => setImmediate(r)); // the hand-off runs right after the append
      assert.equal(compactor.held().rows, 3, "the hand-off held the group's row of each of the 3 members");
      fx.clock.now += 60_000;
      assert.equal(await compactor.flushIfDue(), true);
      const written = await list.row(tenant, u1, group);
      assert.deepEqual({ head: written?.lastActivitySeq, unread: written?.unread }, { head: 3, unread: 3 }, "by hand: seqs 1–3 from the owner");
      // the log read now reaches the same 3 records
      assert.ok(await compactor.poll() >= 3);
      assert.equal(compactor.held().rows, 0, "nothing held again");
      fx.clock.now += 60_000;
      await compactor.flushIfDue();
      const after = await list.row(tenant, u1, group);
      assert.deepEqual({ version: after?.version, unread: after?.unread }, { version: written?.version, unread: 3 }, "the row is not written again");
    });
  });
}
