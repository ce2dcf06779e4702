import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  callScript, ConversationService, FailedPreconditionError, IdempotencyConflictError, loadScripts, RedisStreamsDispatchLog, OutboxRelay, PermissionDeniedError, registry, unitLeaseKey, type Uuid,
} from "../../core/index.js";
import { ALL_TOPOLOGIES } from "../harness/redis.js";
import { checkConversation } from "./checker.js";
import { useEngine } from "./fixture.js";
import { newUuid } from "../../core/index.js";

async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? [])
    .filter((x) => Object.entries(labels).every(([k, l]) => x.labels[k] === l))
    .reduce((a, x) => a + Number(x.value), 0);
}

for (const kind of ALL_TOPOLOGIES) {
  describe(`send path, leave and relay on ${kind}`, () => {
    const fx = useEngine(kind, { broadcastMaxMembers: 5 });

    it("a retried client_message_id returns the existing commit and consumes no seq", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner });
      const clientMessageId = newUuid();
      const a = await fx.engine.send({ tenant, group, sender: owner, clientMessageId, text: "once" });
      const b = await fx.engine.send({ tenant, group, sender: owner, clientMessageId, text: "once" });
      assert.equal(a.duplicate, false);
      assert.equal(b.duplicate, true);
      assert.equal(b.conversationSeq, a.conversationSeq);
      assert.equal(b.messageId, a.messageId);
      assert.equal((await fx.engine.getGroup(tenant, group)).conversationSeq, 1);
    });

    it("a retry answers the original commit with its real version, also after the version moved", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const mentioned = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner, members: [mentioned] });
      const clientMessageId = newUuid();
      const req = { tenant, group, sender: owner, clientMessageId, text: "once", mentions: [mentioned] };
      const a = await fx.engine.send(req);
      assert.deepEqual([a.conversationSeq, a.version, a.duplicate], [1, 1, false]);
      await fx.engine.addMembers({ tenant, group, users: [newUuid()] }); // seq 2, version 2
      const b = await fx.engine.send({ ...req, mentions: [mentioned, mentioned] });
      assert.deepEqual([b.conversationSeq, b.messageId, b.version, b.duplicate], [1, a.messageId, 1, true]);
    });

    it("a client_message_id reused with other content is an IDEMPOTENCY_CONFLICT naming the id; nothing written, no seq consumed", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const other = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner, members: [other] });
      const clientMessageId = newUuid();
      await fx.engine.send({ tenant, group, sender: owner, clientMessageId, text: "once" });
      const before = await fx.digest(tenant, group);
      const variants = [
        { sender: owner, text: "twice" },
        { sender: other, text: "once" },
        { sender: owner, text: "once", mentions: [other] },
        { sender: owner, payload: Buffer.from("once"), contentType: "text/markdown" },
      ];
      for (const v of variants) {
        await assert.rejects(fx.engine.send({ tenant, group, clientMessageId, ...v }), (err: unknown) => {
          assert.ok(err instanceof IdempotencyConflictError, String(err));
          assert.equal(err.code, "IDEMPOTENCY_CONFLICT");
          assert.deepEqual(err.details, { clientMessageId, conversationSeq: 1 });
          assert.match(err.message, new RegExp(`client message id ${clientMessageId} was already used for a different message \\(seq 1\\)`));
          return true;
        }, JSON.stringify(v));
      }
      assert.equal(await fx.digest(tenant, group), before, "a refused reuse writes nothing");
      assert.equal((await fx.engine.getGroup(tenant, group)).conversationSeq, 1, "no seq consumed");
      const next = await fx.engine.send({ tenant, group, sender: owner, text: "next" });
      assert.equal(next.conversationSeq, 2);
    });

    it("group commit: concurrent sends to one group share calls and each gets its own answer", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const members = Array.from({ length: 3 }, () => newUuid());
      const { group } = await fx.engine.createGroup({ tenant, owner, members });
      const batchesBefore = await counter("qim_writer_commit_batch_size_count");
      const repeated = newUuid();
      const stranger = newUuid();
      const sends = Array.from({ length: 40 }, (_, i) =>
        fx.engine.send(i % 10 === 5
          ? { tenant, group, sender: members[0]!, text: "repeated", clientMessageId: repeated } // a client's retries: same content
          : { tenant, group, sender: members[i % 3]!, text: `m${i}` }));
      const refused = fx.engine.send({ tenant, group, sender: stranger, text: "not a member" });
      const results = await Promise.all(sends);
      await assert.rejects(refused, PermissionDeniedError);
      const calls = (await counter("qim_writer_commit_batch_size_count")) - batchesBefore;
      assert.ok(calls < 41, `41 sends in ${calls} calls`);
      const fresh = results.filter((r) => !r.duplicate);
      assert.equal(fresh.length, 37, "the repeated client_message_id commits once");
      assert.deepEqual(fresh.map((r) => r.conversationSeq).sort((a, b) => a - b), Array.from({ length: 37 }, (_, i) => i + 1));
      const firstOfRepeated = results[5]!;
      for (const i of [15, 25, 35]) {
        assert.equal(results[i]!.conversationSeq, firstOfRepeated.conversationSeq);
        assert.equal(results[i]!.messageId, firstOfRepeated.messageId);
      }
      const h = await fx.engine.history({ tenant, group, user: owner, limit: 1000 });
      assert.equal(h.records.length, 37);
      for (const r of fresh) assert.equal(h.records[r.conversationSeq - 1]!.messageId, r.messageId);
    });

    it("leave: the recorded sender and actor are the leaver; retrying after it took effect commits nothing new", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const u = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner, members: [u] });
      const eventsBefore = await counter("qim_writer_membership_events_total", { op: "leave" });
      const left = await fx.engine.leaveGroup({ tenant, group, user: u });
      assert.equal(left.outcome, "committed");
      assert.equal(await counter("qim_writer_membership_events_total", { op: "leave" }), eventsBefore + 1);
      const again = await fx.engine.leaveGroup({ tenant, group, user: u });
      assert.equal(again.outcome, "duplicate");
      assert.equal(again.eventConversationSeq, left.eventConversationSeq);
      assert.equal(again.memberCount, 1);
      assert.equal((await fx.engine.getGroup(tenant, group)).conversationSeq, 1, "no second event");
      const h = await fx.engine.history({ tenant, group, user: owner });
      const ev = h.records[0]!;
      assert.equal(ev.kind, "control");
      assert.equal(ev.senderId, u);
      assert.deepEqual(ev.membership, { op: 2, actor: u, users: [u] });
      const hu = await fx.engine.history({ tenant, group, user: u });
      assert.equal(hu.state, "LEFT");
      assert.deepEqual(hu.records, [], "the leave event itself is at left_at, outside the interval");
      // an admin add records the owner as sender and actor 0
      const joined = await fx.engine.addMembers({ tenant, group, users: [u] });
      const rec = (await fx.engine.history({ tenant, group, user: owner, after: joined.eventConversationSeq! - 1 })).records[0]!;
      assert.equal(rec.senderId, owner);
      assert.deepEqual(rec.membership, { op: 1, actor: "00000000-0000-0000-0000-000000000000", users: [u] });
    });

    it("above the broadcast threshold a control message goes to the affected users only", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const members = Array.from({ length: 5 }, () => newUuid());
      const { group } = await fx.engine.createGroup({ tenant, owner, members });
      const newcomer = newUuid();
      const add = await fx.engine.addMembers({ tenant, group, users: [newcomer] });
      assert.equal(add.memberCount, 7);
      assert.equal(add.audienceSize, 1);
      const remove = await fx.engine.removeMembers({ tenant, group, users: [members[0]!, members[1]!] });
      assert.equal(remove.memberCount, 5);
      assert.equal(remove.audienceSize, 5 + 2, "at the threshold: post-change members ∪ affected");
      await fx.relay.drainAll();
      const records = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group);
      assert.deepEqual(records.find((r) => r.conversationSeq === add.eventConversationSeq)!.recipients, [newcomer]);
      assert.deepEqual(checkConversation([owner, ...members], records, 5).violations, []);
    });

    it("relay: a crash after the append and before the mark appends again (at-least-once), never loses", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner });
      const sent: number[] = [];
      for (let i = 0; i < 5; i++) sent.push((await fx.engine.send({ tenant, group, sender: owner, text: `m${i}` })).conversationSeq);
      const k = fx.engine.conversationKeys(tenant, group);
      const client = fx.store.clientFor(k.tag);
      // simulate the crash: the mark step fails once, after the log append has happened
      const mark = loadScripts().get("markCommitted")!;
      const originalCall = (client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[mark.command]!;
      let crashed = false;
      (client as unknown as Record<string, unknown>)[mark.command] = async (...a: unknown[]) => {
        if (!crashed) { crashed = true; throw new Error("relay killed"); }
        return originalCall.apply(client, a);
      };
      try {
        await assert.rejects(fx.relay.drainBucket(k.bucket), /relay killed/);
      } finally {
        (client as unknown as Record<string, unknown>)[mark.command] = originalCall;
      }
      assert.equal(await client.llen(k.outbox) >= 5, true, "still RECORDED: nothing is COMMITTED that the mark did not reach");
      await fx.relay.drainAll();
      assert.equal(await client.hlen(k.commits), 0);
      const seqs = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group).map((r) => r.conversationSeq);
      assert.deepEqual([...new Set(seqs)].sort((a, b) => a - b), sent, "every commit is in the log");
      assert.equal(seqs.length, 10, "each appended twice: once before the crash, once on resume");
    });

    it("a relay without a cluster on a bucket a cluster node leases: each pass ends, the batch is appended once, its entries stay, it says so once", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner });
      for (let i = 0; i < 3; i++) await fx.engine.send({ tenant, group, sender: owner, text: `m${i}` });
      const k = fx.engine.conversationKeys(tenant, group);
      const client = fx.store.clientFor(k.tag);
      // a node of an engine cluster takes the bucket's relay lease, as ClusterMembership does
      const lease = unitLeaseKey(fx.engine.keys, "relay", k.bucket);
      const took = await callScript(fx.store.clientForKey(lease), "acquireUnit", [lease], ["", "0", "node-b"]);
      assert.equal(Number(took[0]), 0, `acquireUnit: ${JSON.stringify(took)}`);
      const errors: unknown[] = [];
      const relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log, { onError: (e) => errors.push(e) });
      const ours = async () => (await fx.dispatched()).filter((e) => e.record.conversation === group).length;
      try {
        // before the fix the first drainAll never returned: it appended the same batch at every turn of its loop
        for (let pass = 0; pass < 3; pass++) await relay.drainAll();
        assert.equal(await ours(), 3, "the first pass appended the 3 commits before its mark was refused; no pass appended them again");
        assert.equal(await client.llen(k.outbox), 3, "nothing was marked: the entries stay for the lease's node");
        assert.equal(errors.length, 1);
        assert.match(String(errors[0]), /relay bucket \d+ is leased by a node of an engine cluster/);
        // the lease gone (the cluster left this key space), the relay works the bucket again: at-least-once, 3 appended again
        await fx.store.clientForKey(lease).del(lease);
        await relay.drainAll();
        assert.equal(await client.llen(k.outbox), 0);
        assert.equal(await ours(), 6);
      } finally {
        await relay.stop();
      }
    });

    it("relay kick: a commit reported through onCommit is relayed without waiting for a sweep", async () => {
      const relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log);
      const engine = new ConversationService(fx.store, { keyPrefix: fx.engine.opts.keyPrefix, onCommit: (b) => relay.kick(b) });
      relay.start(3_600_000); // one sweep now (nothing of ours yet), the next in an hour
      try {
        const tenant = fx.tenant();
        const owner = newUuid();
        const { group } = await engine.createGroup({ tenant, owner });
        const sent = await engine.send({ tenant, group, sender: owner, text: "kicked" });
        const added = await engine.addMembers({ tenant, group, users: [newUuid()] });
        const k = engine.conversationKeys(tenant, group);
        const client = fx.store.clientFor(k.tag);
        for (let i = 0; i < 200 && (await client.llen(k.outbox)) > 0; i++) await new Promise((r) => setTimeout(r, 10));
        const seqs = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group).map((r) => r.conversationSeq);
        assert.deepEqual(seqs.sort((a, b) => a - b), [sent.conversationSeq, added.eventConversationSeq]);
      } finally {
        await relay.stop();
      }
    });

    it("the dispatch log keeps the identity it was first given and refuses a different one", async () => {
      await fx.log.ensureIdentity(); // the same identity again is fine
      const other = new RedisStreamsDispatchLog(fx.store, fx.engine.keys, { ...fx.log.identity, partitionCount: fx.log.identity.partitionCount + 1 });
      await assert.rejects(other.ensureIdentity(), (e: unknown) => e instanceof FailedPreconditionError && /partition_count is 4, this process expects 5/.test(e.message));
    });

    it("markRead only moves forward and stops at the visible head", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const u: Uuid = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner, members: [u] });
      for (let i = 0; i < 4; i++) await fx.engine.send({ tenant, group, sender: owner, text: `m${i}` });
      assert.equal((await fx.engine.conversationSummary({ tenant, group, user: u })).unread, 4);
      assert.equal((await fx.engine.markRead({ tenant, group, user: u, seq: 3 })).readConversationSeq, 3);
      assert.equal((await fx.engine.markRead({ tenant, group, user: u, seq: 1 })).readConversationSeq, 3);
      assert.equal((await fx.engine.conversationSummary({ tenant, group, user: u })).unread, 1);
      await fx.engine.removeMembers({ tenant, group, users: [u] });
      await fx.engine.send({ tenant, group, sender: owner, text: "after" });
      assert.equal((await fx.engine.markRead({ tenant, group, user: u, seq: 99 })).readConversationSeq, 4);
      const s = await fx.engine.conversationSummary({ tenant, group, user: u });
      assert.equal(s.unread, 0);
      assert.equal(s.head!.conversationSeq, 4);
    });
  });
}
