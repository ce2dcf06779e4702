import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  OutboxRelay,
  ProjectionRefusedError,
  ProjectionStack,
  RedisHashAuthority,
  RedisStreamsDispatchLog,
  registry,
  SessionProjector,
  ProjectionEpoch,
  decodeRegistration,
  encodeRegistration,
  RegistrationTask,
  uuidToHex,
  LOW_LATENCY_MAX_INFLIGHT,
  type DispatchRecord,
} from "../../core/index.js";
import { ALL_TOPOLOGIES } from "../harness/redis.js";
import { useEngine } from "./fixture.js";
import { acceptance5, assertListsMatchEngine, buildWorld, drillCatchesCorruption, newStack, registrationCrash } from "./projection-scenarios.js";
import { checkpointKey, drillLockKey, ucsDeadKey, ucsPendingKey, userKeys } from "../../core/index.js";
import { newUuid } from "../../core/index.js";

async function counter(name: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? []).reduce((a, x) => a + Number(x.value), 0);
}

for (const kind of ALL_TOPOLOGIES) {
  describe(`session projection on ${kind}`, () => {
    const fx = useEngine(kind);

    it("every recipient's list holds the group with the engine's head and definitional unread; the authority has each once", async () => {
      const authority = new RedisHashAuthority(fx.store, fx.engine.keys);
      const stack = newStack(fx, authority);
      await stack.start();
      const w = await buildWorld(fx);
      const applied = await stack.projector.catchUp();
      assert.ok(applied > 0);
      const written = await stack.registration.drainAll();
      await assertListsMatchEngine(fx, stack, w);
      let rows = 0;
      for (const user of w.users) {
        const set = await authority.conversations(w.tenant, user);
        const list = await stack.sessions.listSessions({ tenant: w.tenant, user, all: true });
        assert.deepEqual(set.map((r) => r.conversation).sort(), list.sessions.map((s) => s.group).sort());
        rows += set.length;
      }
      assert.equal(written, rows, "one registration per (user, conversation), however many messages");
      const status = await stack.status();
      assert.ok(status.partitions.every((p) => p.verdict === "OK" && p.lag === 0), JSON.stringify(status.partitions));
      assert.equal(status.pendingPerInstance.reduce((a, p) => a + p.depth, 0), 0);
      await stack.stop();
    });

    it("acceptance 5 on the Redis-hash authority: cleared projection + checkpoint over the window → same set and unread", async () => {
      const { stack } = await acceptance5(fx, () => new RedisHashAuthority(fx.store, fx.engine.keys));
      await stack.stop();
    });
  });
}

describe("session projection details (single instance)", () => {
  const fx = useEngine("single");

  it("regression: the low-latency path arriving first registers a conversation exactly once, and the authority reads it back", async () => {
    const authority = new RedisHashAuthority(fx.store, fx.engine.keys);
    const stack = newStack(fx, authority);
    await stack.start();
    const tenant = fx.tenant();
    const owner = newUuid();
    const members = [newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner, members });
    for (let i = 0; i < 5; i++) await fx.engine.send({ tenant, group, sender: owner, text: `m${i}` });
    // capture what the relay appends and hand it to the low-latency path before the durable one
    const captured: DispatchRecord[] = [];
    const relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log, {
      onAppended: (records) => { captured.push(...records); },
    });
    await relay.drainAll();
    assert.equal(captured.length, 5);
    const pendingBefore = await counter("qim_session_conversation_state_pending_total");
    await stack.lowLatency(captured);
    assert.equal(await counter("qim_session_conversation_state_pending_total") - pendingBefore, 3, "one registration per member");
    await stack.projector.catchUp();
    await stack.lowLatency(captured);
    assert.equal(await counter("qim_session_conversation_state_pending_total") - pendingBefore, 3, "neither path registers it again");
    const queued = (await Promise.all(Array.from({ length: 256 }, (_, b) => fx.store.clientForKey(ucsPendingKey(fx.engine.keys, b)).lrange(ucsPendingKey(fx.engine.keys, b), 0, -1)))).flat()
      .map(decodeRegistration).filter((i) => i.conversation === group);
    assert.deepEqual(queued.map((i) => i.user).sort(), [owner, ...members].sort());
    await stack.registration.drainAll();
    for (const user of [owner, ...members]) {
      const rows = await authority.conversations(tenant, user);
      assert.deepEqual(rows.map((r) => r.conversation), [group]);
    }
    await stack.stop();
  });

  it("a batch with several records of one conversation: each user's entry scores the newest message, and registers once with the first", async () => {
    const authority = new RedisHashAuthority(fx.store, fx.engine.keys);
    const stack = newStack(fx, authority);
    await stack.start();
    const tenant = fx.tenant();
    const owner = newUuid();
    const [stay, leaver] = [newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner, members: [stay, leaver] });
    // a first message puts the group into every member's set; the three sends and the leave come after it, in one batch
    await fx.engine.send({ tenant, group, sender: owner, text: "first" });
    const setup: DispatchRecord[] = [];
    await new OutboxRelay(fx.store, fx.engine.keys, fx.log, { onAppended: (r) => { setup.push(...r); } }).drainAll();
    assert.equal(setup.length, 1);
    await stack.lowLatency(setup);
    const queue = async () => (await Promise.all(Array.from({ length: 256 }, (_, b) => fx.store.clientForKey(ucsPendingKey(fx.engine.keys, b)).lrange(ucsPendingKey(fx.engine.keys, b), 0, -1)))).flat()
      .map(decodeRegistration).filter((i) => i.conversation === group);
    // a user whose set does not hold the group yet: the batch below must add it
    const k = userKeys(fx.engine.keys, tenant, stay);
    await fx.store.clientForKey(k.convs).zrem(k.convs, uuidToHex(group));
    const before = new Set((await queue()).map((i) => JSON.stringify(i)));
    for (let i = 0; i < 3; i++) {
      await fx.engine.send({ tenant, group, sender: owner, text: `m${i}` });
      await new Promise((r) => setTimeout(r, 5)); // distinct created_at for each message
    }
    await fx.engine.leaveGroup({ tenant, group, user: leaver });
    const captured: DispatchRecord[] = [];
    await new OutboxRelay(fx.store, fx.engine.keys, fx.log, { onAppended: (r) => { captured.push(...r); } }).drainAll();
    assert.equal(captured.length, 4, "three sends and the leave, handed over together");
    await stack.lowLatency(captured);
    // expected from the history itself: the batch's seqs in order are the three sends, then the leave
    const history = (await fx.engine.history({ tenant, group, user: owner })).records;
    const seqs = captured.map((r) => r.conversationSeq);
    assert.deepEqual(history.filter((r) => seqs.includes(r.conversationSeq)).map((r) => r.kind), ["normal", "normal", "normal", "control"]);
    const at = (i: number) => history.find((r) => r.conversationSeq === seqs[i - 2])!.createdAt;
    assert.ok(at(2) < at(3) && at(3) < at(4), "the sends' created_at differ");
    for (const user of [owner, stay, leaver]) {
      const uk = userKeys(fx.engine.keys, tenant, user);
      // the leaver's own leave does not rank (score 0 under GT): the newest send still does
      assert.equal(Number(await fx.store.clientForKey(uk.convs).zscore(uk.convs, uuidToHex(group))), user === leaver ? at(4) : Math.max(at(4), at(5)), `score of ${user === owner ? "owner" : user === stay ? "stay" : "leaver"}`);
    }
    const added = (await queue()).filter((i) => !before.has(JSON.stringify(i))); // the queues are per user bucket: not one order
    assert.deepEqual(added.map((i) => [i.user, i.firstSeenAt]), [[stay, at(2)]], "only the user whose set lacked the group registers, once, with the first message of the batch");
    await stack.stop();
  });

  it("a stuck low-latency path holds at most LOW_LATENCY_MAX_INFLIGHT batches; the rest is counted and projected by the durable consumer", async () => {
    const authority = new RedisHashAuthority(fx.store, fx.engine.keys);
    const stack = newStack(fx, authority);
    await stack.start();
    let calls = 0;
    const never = new Promise<void>(() => {});
    const relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log, { onAppended: () => { calls++; return never; } });
    const skippedBefore = await counter("qim_relay_low_latency_skipped_total");
    const tenant = fx.tenant();
    const owner = newUuid();
    const groups: string[] = [];
    for (let g = 0; g < LOW_LATENCY_MAX_INFLIGHT + 4; g++) {
      const { group } = await fx.engine.createGroup({ tenant, owner, members: [newUuid()] });
      groups.push(group);
      await fx.engine.send({ tenant, group, sender: owner, text: "hello" });
      await relay.drainAll(); // one appended batch per group
    }
    assert.equal(calls, LOW_LATENCY_MAX_INFLIGHT, "never more batches in flight than the bound");
    assert.ok(await counter("qim_relay_low_latency_skipped_total") - skippedBefore >= 4);
    await stack.projector.catchUp();
    const list = await stack.sessions.listSessions({ tenant, user: owner, all: true });
    assert.deepEqual(list.sessions.map((x) => x.group).sort(), groups.sort(), "the durable consumer projected every group");
    await stack.stop();
  });

  it("start-up catches up to the high watermarks before it returns (spec 002 §2.2: serve only once caught up)", async () => {
    const authority = new RedisHashAuthority(fx.store, fx.engine.keys);
    const first = newStack(fx, authority);
    await first.start();
    await first.stop();
    const w = await buildWorld(fx, 4, 2); // appended while no consumer runs
    const lines: string[] = [];
    const stack = newStack(fx, authority, lines); // no background polling: only start() projects
    await stack.start();
    const status = await stack.status();
    assert.ok(status.partitions.every((p) => p.verdict === "OK" && p.lag === 0), JSON.stringify(status.partitions));
    assert.ok(lines.some((l) => /caught up \d+ record\(s\) before serving$/.test(l)), lines.join("\n"));
    await assertListsMatchEngine(fx, stack, w);
    await stack.stop();
  });

  it("a conversation in a user's list without a membership interval is hidden and counted in qim_session_group_interval_missing_total", async () => {
    const authority = new RedisHashAuthority(fx.store, fx.engine.keys);
    const stack = newStack(fx, authority);
    const tenant = fx.tenant();
    const [owner, stranger] = [newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner, members: [] });
    // a projection entry that membership does not back (what the metric exists to catch)
    const uk = userKeys(fx.engine.keys, tenant, stranger);
    await fx.store.clientFor(uk.tag).zadd(uk.convs, 1, uuidToHex(group));
    await fx.store.clientFor(uk.tag).hset(uk.epochMarks, uk.ref, await stack.epoch.get());
    const before = await counter("qim_session_group_interval_missing_total");
    const list = await stack.sessions.listSessions({ tenant, user: stranger });
    assert.deepEqual([list.total, list.sessions.length, list.hidden], [1, 0, 1]);
    assert.equal(await counter("qim_session_group_interval_missing_total") - before, 1);
  });

  it("an undecodable pending registration is dead-lettered: the items before and after it still reach the authority", async () => {
    const authority = new RedisHashAuthority(fx.store, fx.engine.keys);
    const errors: string[] = [];
    const task = new RegistrationTask(fx.store, fx.engine.keys, authority, { onError: (e) => errors.push((e as Error).message) });
    const tenant = fx.tenant();
    const user = newUuid();
    const uk = userKeys(fx.engine.keys, tenant, user);
    const conv = () => ({ tenant, user, conversation: newUuid(), kind: "group" as const, firstSeenAt: Date.now() });
    const [a, b, c] = [conv(), conv(), conv()];
    const bad = ["written|by|hand", `${encodeRegistration(a).slice(0, -1)}x`];
    const client = fx.store.clientForKey(uk.ucsPending);
    await client.rpush(uk.ucsPending, encodeRegistration(a), bad[0]!, encodeRegistration(b), bad[1]!, encodeRegistration(c));
    const deadBefore = await counter("qim_session_conversation_state_dead_letter_total");

    await task.drainAll();
    assert.equal(await client.llen(uk.ucsPending), 0, "nothing blocks the queue");
    assert.deepEqual(await client.lrange(ucsDeadKey(fx.engine.keys, uk.bucket), 0, -1), bad);
    assert.equal(await counter("qim_session_conversation_state_dead_letter_total") - deadBefore, 2);
    assert.deepEqual((await authority.conversations(tenant, user)).map((r) => r.conversation).sort(), [a, b, c].map((x) => x.conversation).sort());
    // what projection status reports per instance
    assert.deepEqual((await task.depthPerInstance()).map((q) => q.deadLetters), [2]);
    assert.equal(errors.length, 2, errors.join("\n"));
    for (const e of errors) assert.match(e, new RegExp(`^registration: moved an undecodable item from ${uk.ucsPending.replace(/[{}]/g, "\\$&")} to .*ucs_dead: malformed pending registration`));
  });

  it("a registration task killed between the authority write and the pop loses and duplicates nothing (Redis-hash)", async () => {
    await registrationCrash(fx, () => new RedisHashAuthority(fx.store, fx.engine.keys), "redis-hash");
  });

  it("the rebuild drill reports nothing on a clean run and names the user and conversation of a removed authority row", async () => {
    await drillCatchesCorruption(fx, () => new RedisHashAuthority(fx.store, fx.engine.keys), true);
  });

  it("running in the background, wired to the relay: checkpoints reach the high watermark and the authority fills by themselves", async () => {
    const authority = new RedisHashAuthority(fx.store, fx.engine.keys);
    const lines: string[] = [];
    const stack = new ProjectionStack({ store: fx.store, keys: fx.engine.keys, conversations: fx.engine, log: fx.log, authority }, {
      projector: { pollIntervalMs: 50 }, registration: { intervalMs: 50 }, retentionMs: 0,
      log: (l) => lines.push(l), onError: (e) => lines.push(`error: ${(e as Error).message}`),
    });
    await stack.start();
    const relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log, { onAppended: stack.lowLatency });
    relay.start(50);
    const tenant = fx.tenant();
    const users = [newUuid(), newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner: users[0]!, members: users.slice(1) });
    for (let i = 0; i < 20; i++) await fx.engine.send({ tenant, group, sender: users[i % 3]!, text: `bg ${i}` });
    let settled = false;
    for (let attempt = 0; attempt < 400 && !settled; attempt++) {
      await new Promise((r) => setTimeout(r, 25));
      const st = await stack.status();
      const rows = await Promise.all(users.map((u) => authority.conversations(tenant, u)));
      settled = st.partitions.every((p) => p.lag === 0) && st.pendingPerInstance.every((p) => p.depth === 0) && rows.every((r) => r.length === 1);
    }
    assert.ok(settled, `projection and registration caught up (${lines.join("; ")})`);
    for (const user of users) {
      const list = await stack.sessions.listSessions({ tenant, user });
      assert.deepEqual(list.sessions.map((s) => s.group), [group]);
    }
    assert.deepEqual(lines.filter((l) => l.startsWith("error")), []);
    await relay.stop();
    await stack.stop();
  });

  it("only one rebuild drill runs at a time against one engine; the lock is released afterwards", async () => {
    const stack = newStack(fx, new RedisHashAuthority(fx.store, fx.engine.keys));
    await stack.start();
    const w = await buildWorld(fx, 3, 1);
    await stack.projector.catchUp();
    const users = w.users.map((user) => ({ tenant: w.tenant, user }));
    const lock = drillLockKey(fx.engine.keys);
    await fx.store.clientForKey(lock).set(lock, "someone-else", "PX", 60_000);
    await assert.rejects(stack.drill.run({ users, wipe: "projection", by: "test" }), /another rebuild drill is running \(someone-else\)/);
    await fx.store.clientForKey(lock).del(lock);
    const [a, b] = await Promise.allSettled([
      stack.drill.run({ users, wipe: "projection", by: "test" }),
      stack.drill.run({ users, wipe: "projection", by: "test" }),
    ]);
    assert.deepEqual([a.status, b.status].sort(), ["fulfilled", "rejected"]);
    const report = await stack.drill.run({ users, wipe: "projection", by: "test" });
    assert.equal(report.ok, true);
    assert.equal(await fx.store.clientForKey(lock).exists(lock), 0);
    await stack.stop();
  });

  it("the list is ordered by last_activity_id DESC then conversation_id ASC, and limit cuts it", async () => {
    const stack = newStack(fx, new RedisHashAuthority(fx.store, fx.engine.keys));
    await stack.start();
    const tenant = fx.tenant();
    const user = newUuid();
    const groups = [];
    for (let i = 0; i < 5; i++) {
      const { group } = await fx.engine.createGroup({ tenant, owner: user });
      groups.push(group);
    }
    // the oldest group gets the newest message
    for (const g of [...groups].reverse()) await fx.engine.send({ tenant, group: g, sender: user, text: "x" });
    await fx.engine.send({ tenant, group: groups[4]!, sender: user, text: "newest" });
    await fx.relay.drainAll();
    await stack.projector.catchUp();
    const list = await stack.sessions.listSessions({ tenant, user, limit: 200 });
    assert.deepEqual(list.sessions.map((s) => s.group), [groups[4], groups[0], groups[1], groups[2], groups[3]]);
    const ids = list.sessions.map((s) => s.head!.messageId);
    assert.deepEqual([...ids].sort().reverse(), ids);
    const page = await stack.sessions.listSessions({ tenant, user, limit: 2 });
    assert.equal(page.sessions.length, 2);
    assert.equal(page.total, 5);
    await assert.rejects(stack.sessions.listSessions({ tenant, user, limit: 0 }), /limit/);
    await assert.rejects(stack.sessions.listSessions({ tenant, user: "nope", limit: 5 }), /user/);
    await stack.stop();
  });

  it("start-up: beyond the high watermark refuses with a clear line and changes nothing", async () => {
    const stack = newStack(fx, new RedisHashAuthority(fx.store, fx.engine.keys));
    await stack.start();
    await buildWorld(fx, 3, 1);
    await stack.projector.catchUp();
    await stack.stop();
    const key = checkpointKey(fx.engine.keys, "dispatch", 0);
    const client = fx.store.clientForKey(key);
    const saved = await client.hget(key, "pos");
    await client.hset(key, "pos", "999999|99999999999999-0");
    const epochBefore = await stack.epoch.get();
    const lines: string[] = [];
    const again = newStack(fx, new RedisHashAuthority(fx.store, fx.engine.keys), lines);
    await assert.rejects(again.start(), (err: unknown) => err instanceof ProjectionRefusedError && /partition 0 BEYOND_HIGH/.test(err.message));
    assert.ok(lines.some((l) => /partition 0 BEYOND_HIGH: checkpoint 999999 is beyond the high watermark/.test(l)), lines.join("\n"));
    assert.equal(await stack.epoch.get(), epochBefore);
    assert.equal(await client.hget(key, "pos"), "999999|99999999999999-0", "the refused start moved nothing");
    await client.hset(key, "pos", saved!);
  });

  it("start-up: a log whose identity differs refuses to start", async () => {
    const other = new RedisStreamsDispatchLog(fx.store, fx.engine.keys, { clusterId: "test", topicId: "dispatch", partitionCount: 5 });
    const lines: string[] = [];
    const projector = new SessionProjector(fx.store, fx.engine.keys, other, new ProjectionEpoch(fx.store, fx.engine.keys), { log: (l) => lines.push(l) });
    await assert.rejects(projector.start(), (err: unknown) => err instanceof ProjectionRefusedError && /IDENTITY_MISMATCH/.test(err.message));
    assert.ok(lines.some((l) => /IDENTITY_MISMATCH: the log records cluster_id=test topic_id=dispatch partition_count=4, this process expects .*partition_count=5/.test(l)), lines.join("\n"));
  });

  it("a checkpoint lost at runtime with a trimmed log bumps the epoch and continues from the low watermark", async () => {
    const lines: string[] = [];
    const stack = newStack(fx, new RedisHashAuthority(fx.store, fx.engine.keys), lines);
    await stack.start();
    await buildWorld(fx, 3, 2);
    await stack.projector.catchUp();
    await fx.log.trim(Date.now() + 1);
    await stack.projector.wipeCheckpoints();
    const before = await stack.epoch.get();
    await stack.projector.catchUp();
    const after = await stack.epoch.get();
    const trimmedPartitions = (await stack.projector.audit()).filter((a) => a.low > 0).length;
    assert.equal(after - before, trimmedPartitions, "one bump per partition that had lost records");
    assert.ok((await stack.projector.audit()).every((a) => a.verdict === "OK"));
    assert.ok(lines.some((l) => /NO_CHECKPOINT with low watermark \d+: epoch bumped/.test(l)));
    await stack.stop();
  });
});

describe("session projection: a registration task in a child process, on secure", () => {
  // the child builds its store from the JSON topology alone: the ACL user, the password and the
  // PEM text must survive the trip (issue 15)
  const fx = useEngine("secure");

  it("a registration task killed between the authority write and the pop loses and duplicates nothing (Redis-hash)", async () => {
    await registrationCrash(fx, () => new RedisHashAuthority(fx.store, fx.engine.keys), "redis-hash");
  });
});
