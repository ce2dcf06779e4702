/**
 * Issue 22: a send to a group above the member budget is dispatched by a fanout job, in chunks of
 * at most `fanoutChunkRecipients` recipients (lowered to 100 here, so that a 5,000-member group
 * makes 50 and more chunks). Checked from the log against the member set the test itself added:
 * the union of a seq's chunks is exactly the group's members, every chunk within the size; a
 * small group's send committed into the same bucket after the big one is relayed before the big
 * job ends (order across conversations is not held up), while the big group's next message comes
 * after all of its first message's chunks (order per conversation). And the session projection's
 * durable consumer does not take a seq's chunk 0 for written when the low-latency path wrote
 * another chunk of it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  commitBucket, ConversationService, fanoutKeys, newUuid, OutboxRelay, ProjectionStack, RedisHashAuthority, RedisStreamsDispatchLog, registry, userKeys, uuidToHex,
  type DispatchEntry, type DispatchRecord, type Uuid,
} from "../../core/index.js";
import { useEngine } from "./fixture.js";

const MEMBERS = 5000;
const CHUNK = 100;

const sorted = (xs: Iterable<Uuid>) => [...xs].sort();

async function counter(name: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? []).reduce((a, x) => a + Number(x.value), 0);
}

/** A group id of `tenant` whose conversation lands in `bucket` (so that it shares the big group's outbox and partition). */
function groupInBucket(tenant: Uuid, bucket: number): Uuid {
  for (;;) {
    const g = newUuid();
    if (commitBucket(tenant, g) === bucket) return g;
  }
}

for (const kind of ["single", "cluster"] as const) {
  describe(`fanout jobs on ${kind}`, () => {
    const fx = useEngine(kind);

    /** The entries of one partition in log order. */
    const partitionOf = async (log: RedisStreamsDispatchLog, tenant: Uuid, group: Uuid): Promise<DispatchEntry[]> => {
      const p = log.partitionOf(tenant, group);
      return (await fx.dispatched()).filter((e) => log.partitionOf(e.record.tenant, e.record.conversation) === p);
    };

    /** A group of MEMBERS members besides its owner, and a small group in the same bucket. */
    const world = async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const members = Array.from({ length: MEMBERS }, () => newUuid());
      const big = await fx.engine.createGroup({ tenant, owner, members });
      assert.equal(big.memberCount, MEMBERS + 1);
      const bucket = commitBucket(tenant, big.group);
      const small = await fx.engine.createGroup({ tenant, owner, group: groupInBucket(tenant, bucket), members: [members[0]!] });
      return { tenant, owner, members, everyone: sorted([owner, ...members]), big: big.group, small: small.group, bucket };
    };

    it("the durable consumer projects chunk 0 of a seq although the low-latency path projected only its chunk 1 (what it skips is keyed by chunk too)", async () => {
      // first in the file: the stack catches up from the log's current end, not through the big groups below
      const stack = new ProjectionStack({ store: fx.store, keys: fx.engine.keys, conversations: fx.engine, log: fx.log, authority: new RedisHashAuthority(fx.store, fx.engine.keys) }, { background: false });
      await stack.start();
      try {
        const tenant = fx.tenant();
        const conversation = newUuid();
        const [first, second] = [[newUuid(), newUuid()], [newUuid(), newUuid()]];
        const entry = `1|${uuidToHex(newUuid())}|${uuidToHex(first[0]!)}|N|1|1700000000000|text/plain|aGk=`;
        const chunk0: DispatchRecord = { tenant, conversation, conversationSeq: 1, version: 1, entry, recipients: first, chunk: 0 };
        const chunk1: DispatchRecord = { ...chunk0, recipients: second, chunk: 1 };
        await fx.log.append([chunk0, chunk1]);
        // the low-latency path got chunk 1 only (it skips batches while busy)
        await stack.projector.projectRecords([chunk1]);
        await stack.projector.catchUp();
        for (const u of [...first, ...second]) {
          const k = userKeys(fx.engine.keys, tenant, u);
          assert.notEqual(await fx.store.clientFor(k.tag).zscore(k.convs, uuidToHex(conversation)), null, `recipient of chunk ${first.includes(u) ? 0 : 1}`);
        }
      } finally {
        await stack.stop();
      }
    });

    it("chunks of at most 100 whose union is the member set; a small group's later send in the same bucket goes first; the big group's next seq after every chunk", async () => {
      const w = await world();
      const relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log, { fanoutChunkRecipients: CHUNK });
      const m1 = await fx.engine.send({ tenant: w.tenant, group: w.big, sender: w.owner, text: "to 5,001" });
      const s1 = await fx.engine.send({ tenant: w.tenant, group: w.small, sender: w.owner, text: "small 1" });
      const m2 = await fx.engine.send({ tenant: w.tenant, group: w.big, sender: w.members[1]!, text: "to 5,001 again" });

      // one outbox batch: the small group's send is appended; both big seqs become jobs
      const dispatchedBefore = await counter("qim_relay_dispatched_total");
      assert.equal(await relay.drainBucket(w.bucket), 3);
      assert.equal(await counter("qim_relay_dispatched_total") - dispatchedBefore, 1, "one commit dispatched: the big seqs' members records are not commits dispatched (their jobs are)");
      const f = fanoutKeys(fx.engine.keys, w.bucket);
      const client = fx.store.clientFor(fx.engine.conversationKeys(w.tenant, w.big).tag);
      const bigRef = fx.engine.conversationKeys(w.tenant, w.big).outboxRef;
      assert.deepEqual(await client.lrange(f.fanoutJobs, 0, -1), [`${bigRef}|${m1.conversationSeq}`, `${bigRef}|${m2.conversationSeq}`]);
      // a turn of the jobs, then a small send committed while the big job is far from done
      assert.equal(await relay.fanoutBucket(w.bucket), 8, "FANOUT_CHUNKS_PER_PASS steps per turn");
      const s2 = await fx.engine.send({ tenant: w.tenant, group: w.small, sender: w.members[0]!, text: "small 2" });
      assert.equal(await relay.drainBucket(w.bucket), 1);
      assert.equal(await client.llen(f.fanoutJobs), 2, "the big group's first job is still running");
      await relay.drainAll();

      const entries = await partitionOf(fx.log, w.tenant, w.big);
      const pos = (pred: (r: DispatchRecord) => boolean) => entries.map((e, i) => (pred(e.record) ? i : -1)).filter((i) => i >= 0);
      const bigSeq = (seq: number) => (r: DispatchRecord) => r.conversation === w.big && r.conversationSeq === seq && r.push !== "members";
      const first = pos(bigSeq(m1.conversationSeq));
      const second = pos(bigSeq(m2.conversationSeq));
      // issue 27: each big seq announced to the devices online once, by one members record (no
      // recipients named) appended with the outbox batch, before any chunk; the chunks push nothing
      const announced = pos((r) => r.conversation === w.big && r.push === "members");
      assert.deepEqual(announced.map((i) => [entries[i]!.record.conversationSeq, entries[i]!.record.recipients.length, entries[i]!.record.chunk]),
        [[m1.conversationSeq, 0, -1], [m2.conversationSeq, 0, -1]]);
      assert.ok(announced[1]! < first[0]!, "both announced before the first job's chunks");
      for (const i of [...first, ...second]) assert.equal(entries[i]!.record.push, "none", `the chunk at ${i} pushes nothing`);
      const [small1] = pos((r) => r.conversation === w.small && r.conversationSeq === s1.conversationSeq);
      const [small2] = pos((r) => r.conversation === w.small && r.conversationSeq === s2.conversationSeq);

      // the union of each big seq's chunks is exactly the member set the test created
      for (const [m, at] of [[m1, first], [m2, second]] as const) {
        const records = at.map((i) => entries[i]!.record);
        assert.ok(records.length >= MEMBERS / CHUNK, `seq ${m.conversationSeq}: ${records.length} chunk records`);
        assert.deepEqual(records.map((r) => r.chunk), records.map((_, i) => i), "chunks 0, 1, 2 … in log order");
        for (const r of records) assert.ok(r.recipients.length <= CHUNK, `chunk ${r.chunk} has ${r.recipients.length} recipients`);
        assert.deepEqual(sorted(new Set(records.flatMap((r) => r.recipients))), w.everyone);
        const entry = (await client.zrangebyscore(fx.engine.conversationKeys(w.tenant, w.big).hist, m.conversationSeq, m.conversationSeq))[0];
        for (const r of records) assert.deepEqual([r.entry, r.version], [entry, 1]);
      }
      // order across conversations: the small group's sends did not wait for the big job
      assert.ok(small1! < first[0]!, "the small send of the same outbox batch is appended before the big job starts");
      assert.ok(small2! > first[0]! && small2! < first.at(-1)!, `the small send committed during the job is relayed before it ends (at ${small2}, the job's chunks at ${first[0]}..${first.at(-1)})`);
      // order per conversation: every chunk of the big group's first seq before its second
      assert.ok(first.at(-1)! < second[0]!, "the big group's next seq after all of its first seq's chunks");

      // nothing left: no job, no pending count, nothing RECORDED
      const k = fx.engine.conversationKeys(w.tenant, w.big);
      assert.deepEqual([await client.exists(f.fanoutJobs), await client.exists(f.fanoutState), await client.hexists(f.fanoutPending, bigRef)], [0, 0, 0]);
      assert.deepEqual([await client.zcard(k.vpending), await client.hlen(k.commits), await client.llen(k.outbox)], [0, 0, 0]);
    });

    it("a sweep (drainAll) busy with a big fanout also relays what another process commits meanwhile into another bucket", async () => {
      const w = await world();
      const otherGroup = (await fx.engine.createGroup({ tenant: w.tenant, owner: w.owner, group: (() => {
        for (;;) { const g = newUuid(); if (commitBucket(w.tenant, g) !== w.bucket) return g; }
      })() })).group;
      let other: Promise<{ conversationSeq: number }> | undefined;
      // fx.engine reports no commits to this relay (no kicks): as if another process committed
      const relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log, {
        fanoutChunkRecipients: 10,
        onAppended: (records) => {
          if (!other && records.some((r) => r.conversation === w.big)) other = fx.engine.send({ tenant: w.tenant, group: otherGroup, sender: w.owner, text: "elsewhere" });
        },
      });
      await fx.engine.send({ tenant: w.tenant, group: w.big, sender: w.owner, text: "big" });
      await relay.drainAll();
      assert.ok(other);
      const sent = await other;
      const records = (await fx.dispatched()).map((e) => e.record);
      const logged = records.filter((r) => r.conversation === otherGroup && r.conversationSeq === sent.conversationSeq);
      assert.equal(logged.length, 1, "the same pass relayed the other bucket's commit");
      const k = fx.engine.conversationKeys(w.tenant, otherGroup);
      assert.equal(await fx.store.clientFor(k.tag).llen(k.outbox), 0);
      assert.deepEqual(sorted(new Set(records.filter((r) => r.conversation === w.big).flatMap((r) => r.recipients))), w.everyone);
    });

    it("with kicks: a small group's send during the big fanout is relayed between two of its turns, and the big group's next messages wait for it", async () => {
      const w = await world();
      const k = fx.engine.conversationKeys(w.tenant, w.big);
      let relay!: OutboxRelay;
      const engine = new ConversationService(fx.store, { keyPrefix: fx.engine.keys.prefix, onCommit: (b) => relay.kick(b) });
      let smallSent: Promise<unknown> | undefined;
      relay = new OutboxRelay(fx.store, engine.keys, fx.log, {
        // chunks of 10: 500 and more chunks, 8 per turn
        fanoutChunkRecipients: 10,
        onAppended: (records) => {
          // the moment the big job's first chunk is out, the small group sends (and kicks)
          if (!smallSent && records.some((r) => r.conversation === w.big && r.push === "none")) {
            smallSent = engine.send({ tenant: w.tenant, group: w.small, sender: w.owner, text: "small during the fanout" });
          }
        },
      });
      // no sweep during the test: only kicks move commits
      relay.start(3_600_000);
      try {
        const m1 = await engine.send({ tenant: w.tenant, group: w.big, sender: w.owner, text: "big" });
        const f = fanoutKeys(engine.keys, w.bucket);
        const client = fx.store.clientFor(k.tag);
        // the kicks' worker finishes the job by itself: wait by state
        for (let i = 0; i < 4000 && (!smallSent || (await client.llen(f.fanoutJobs)) > 0 || (await client.llen(k.outbox)) > 0); i++) await new Promise((r) => setTimeout(r, 25));
        assert.ok(smallSent, "the big job appended a chunk");
        await smallSent;
        const m2 = await engine.send({ tenant: w.tenant, group: w.big, sender: w.owner, text: "big 2" });
        for (let i = 0; i < 400 && ((await client.llen(f.fanoutJobs)) > 0 || (await client.llen(k.outbox)) > 0); i++) await new Promise((r) => setTimeout(r, 25));
        assert.equal(await client.llen(f.fanoutJobs), 0, "the kicks worked the jobs to the end");

        const entries = await partitionOf(fx.log, w.tenant, w.big);
        const at = (pred: (r: DispatchRecord) => boolean) => entries.map((e, i) => (pred(e.record) ? i : -1)).filter((i) => i >= 0);
        const first = at((r) => r.conversation === w.big && r.conversationSeq === m1.conversationSeq && r.push !== "members");
        const second = at((r) => r.conversation === w.big && r.conversationSeq === m2.conversationSeq && r.push !== "members");
        const small = at((r) => r.conversation === w.small);
        assert.equal(small.length, 1);
        assert.ok(small[0]! > first[0]! && small[0]! < first.at(-1)!, `the small send is relayed during the job (at ${small[0]}, its chunks at ${first[0]}..${first.at(-1)})`);
        assert.ok(first.at(-1)! < second[0]!);
        assert.deepEqual(sorted(new Set(first.flatMap((i) => entries[i]!.record.recipients))), w.everyone);
        assert.deepEqual(sorted(new Set(second.flatMap((i) => entries[i]!.record.recipients))), w.everyone);
      } finally {
        await relay.stop();
      }
    });
  });
}
