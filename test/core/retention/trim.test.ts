/**
 * Retention (issue 26) through the whole engine on a real redis-server: a tenant's policy or a
 * group's own rule, the trimming round at the relay buckets' owner, and what every reader sees
 * afterwards. Every expected value is computed here from what the test sent and the rule, never
 * read back from the trimmer: which seqs remain, earliest_available = max(floor, joined_at + 1),
 * and the definitional unread (spec 002 §3.1) over the records that remain.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  CmdLog, EngineRuntime, KeySpace, RedisHashAuthority, RedisStore, cmdChannelDirectoryKey, cmdChannelKeys, conversationKeys, newUuid, uuidToHex, type CmdSendRequest, type Uuid,
} from "../../../core/index.js";
import { startTopology, type TestTopology } from "../../harness/redis.js";

describe("retention trims history, its unread index and idempotency ids; readers honour the floor", () => {
  let topology: TestTopology;
  let store: RedisStore;
  let rt: EngineRuntime;
  let keys: KeySpace;
  const clock = { now: 1_700_000_000_000 };
  const trimClock = { now: 0 };

  before(async () => {
    topology = await startTopology("single");
    store = new RedisStore(topology.config);
    const keyPrefix = `rt${newUuid().slice(0, 8)}`;
    keys = new KeySpace(keyPrefix);
    rt = new EngineRuntime({
      store, keyPrefix,
      dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 4 },
      authority: new RedisHashAuthority(store, keys),
      projection: { background: false },
      conversation: { now: () => clock.now },
      relayIntervalMs: 0,
      conversationList: { compactor: { background: false } },
      unreadAudit: { intervalMs: 0 },
      // rounds only when a test runs one; steps of 7 records, 2 steps per conversation a round
      retention: { intervalMs: 0, now: () => trimClock.now, stepRecords: 7, stepsPerConversation: 2 },
    });
    await rt.start();
  });
  after(async () => {
    await rt?.stop();
    await store?.close();
    await topology?.stop();
  });

  /** The seqs a conversation's history and unread index hold, read from Redis. */
  async function stored(tenant: Uuid, group: Uuid): Promise<{ hist: number[]; idx: number[]; earliest: string | null }> {
    const k = conversationKeys(keys, tenant, group);
    const c = store.clientFor(k.tag);
    const scores = async (key: string) => (await c.zrange(key, "0", "-1", "WITHSCORES")).filter((_, i) => i % 2 === 1).map(Number);
    return { hist: await scores(k.hist), idx: await scores(k.unreadidx), earliest: await c.hget(k.grpmeta, "earliest_seq") };
  }
  const range = (lo: number, hi: number) => Array.from({ length: Math.max(0, hi - lo + 1) }, (_, i) => lo + i);

  it("a count rule of the tenant's default class keeps the last N seqs; history, earliest_available, unread and idempotency follow", async () => {
    const tenant = newUuid();
    const [a, b, c] = [newUuid(), newUuid(), newUuid()];
    const { group } = await rt.conversations.createGroup({ tenant, owner: a, members: [b, c] });
    // seqs 1..25: odd ones from a, even ones from b (initial members: no control message)
    const cmid: string[] = [];
    for (let i = 1; i <= 25; i++) {
      cmid[i] = newUuid();
      const r = await rt.conversations.send({ tenant, group, sender: i % 2 ? a : b, text: `m${i}`, clientMessageId: cmid[i] });
      assert.equal(r.conversationSeq, i);
    }
    await rt.conversations.markRead({ tenant, group, user: c, seq: 12 });
    await rt.relay.drainAll();
    await rt.retention.policies.setTenantClass(tenant, "standard", { maxAgeMs: 0, maxCount: 10 }, true);

    // dry run first: says what would go, changes nothing
    const dry = await rt.retention.runRound({ dryRun: true, tenant: tenant });
    assert.equal(dry.trims.length, 1);
    // keep the last 10 of 25 → seqs 1..15 go; one dry step shows at most 7 of them
    assert.equal(dry.trims[0]!.histRemoved, 7);
    assert.equal(dry.trims[0]!.more, true);
    assert.deepEqual((await stored(tenant, group)).hist, range(1, 25));

    // a round: 2 steps of 7 → 14 records; the rule wants one more (behind)
    const r1 = await rt.retention.runRound();
    assert.equal(r1.histRemoved, 14);
    assert.equal(r1.behind, 1);
    assert.deepEqual((await stored(tenant, group)).hist, range(15, 25));
    const r2 = await rt.retention.runRound();
    assert.equal(r2.histRemoved, 1);
    assert.equal(r2.behind, 0);
    const s = await stored(tenant, group);
    assert.deepEqual(s.hist, range(16, 25));
    assert.deepEqual(s.idx, range(16, 25), "the unread index drops the same seqs");
    assert.equal(s.earliest, "16");

    // history: nothing older than the floor; earliest_available = max(16, joined_at + 1 = 1)
    const h = await rt.conversations.history({ tenant, group, user: b });
    assert.equal(h.earliestAvailableConversationSeq, 16);
    assert.deepEqual(h.records.map((x) => x.conversationSeq), range(16, 25));

    // definitional unread over what remains: b counts a's messages (odd seqs) in 16..25; c counts every one
    // above max(read 12, floor − 1): without retention c would have 13 and b 13 − 6 = 7
    const oddIn = (lo: number, hi: number) => range(lo, hi).filter((x) => x % 2 === 1).length;
    assert.equal((await rt.conversations.conversationSummary({ tenant, group, user: b })).unread, oddIn(16, 25));
    assert.equal((await rt.conversations.conversationSummary({ tenant, group, user: c })).unread, 10);

    // a user who joins now: joined_at = 25 (the join event is seq 26): earliest_available = 26
    await rt.conversations.addMembers({ tenant, group, users: [newUuid()] });
    const d = newUuid();
    await rt.conversations.addMembers({ tenant, group, users: [d] });
    const hd = await rt.conversations.history({ tenant, group, user: d });
    assert.equal(hd.joinedAt, 26);
    assert.equal(hd.earliestAvailableConversationSeq, 27);

    // idempotency: a kept message's id still answers its commit; a trimmed one's id is gone with it
    // (the round's HSCAN page of idem has dropped the ids below the floor)
    await rt.relay.drainAll();
    await rt.retention.runRound();
    const k = conversationKeys(keys, tenant, group);
    const idem = await store.clientFor(k.tag).hgetall(k.idem);
    const kept = range(1, 25).filter((i) => idem[uuidToHex(cmid[i] as Uuid)] !== undefined);
    // the count rule now keeps the last 10 of 27 → floor 18
    assert.deepEqual(kept, range(18, 25));
    const dup = await rt.conversations.send({ tenant, group, sender: a, text: "m25", clientMessageId: cmid[25] });
    assert.equal(dup.duplicate, true);
    assert.equal(dup.conversationSeq, 25);
  });

  it("an age rule of a group's own setting trims by created_at; another group of the tenant keeps everything", async () => {
    const tenant = newUuid();
    const [a, b] = [newUuid(), newUuid()];
    const { group } = await rt.conversations.createGroup({ tenant, owner: a, members: [b] });
    const { group: other } = await rt.conversations.createGroup({ tenant, owner: a, members: [b] });
    const t0 = clock.now;
    const sentAt: number[] = [];
    for (let i = 1; i <= 12; i++) {
      clock.now = t0 + i * 1000;
      sentAt[i] = clock.now;
      await rt.conversations.send({ tenant, group, sender: a, text: `g${i}` });
      await rt.conversations.send({ tenant, group: other, sender: a, text: `o${i}` });
    }
    await rt.relay.drainAll();
    // the tenant has a policy whose default class keeps everything; the group has its own 5.5 s rule
    await rt.retention.policies.setTenantClass(tenant, "forever", { maxAgeMs: 0, maxCount: 0 }, true);
    await rt.retention.policies.setGroup(tenant, group, { retentionClass: null, rule: { maxAgeMs: 5_500, maxCount: 0 } });
    trimClock.now = t0 + 12_000;
    // expected from the send times: kept iff sentAt >= now − 5.5 s
    const keep = range(1, 12).filter((i) => sentAt[i]! >= trimClock.now - 5_500);
    await rt.retention.runRound({ tenant: tenant });
    assert.deepEqual((await stored(tenant, group)).hist, keep);
    assert.deepEqual((await stored(tenant, other)).hist, range(1, 12));
    assert.equal((await rt.conversations.history({ tenant, group, user: b })).earliestAvailableConversationSeq, keep[0]);
    assert.equal((await rt.conversations.conversationSummary({ tenant, group, user: b })).unread, keep.length);
    // later, everything is past the age: the history is empty and the floor is past the last seq
    trimClock.now = t0 + 60_000;
    await rt.retention.runRound({ tenant: tenant });
    const s = await stored(tenant, group);
    assert.deepEqual(s.hist, []);
    assert.equal(s.earliest, "13");
    const h = await rt.conversations.history({ tenant, group, user: b });
    assert.equal(h.earliestAvailableConversationSeq, 13);
    assert.deepEqual(h.records, []);
    const sum = await rt.conversations.conversationSummary({ tenant, group, user: b });
    assert.equal(sum.unread, 0);
    assert.equal(sum.head, null);
  });

  it("the conversation list's cached unread follows a trim: the rebuild drill finds no difference", async () => {
    const tenant = newUuid();
    const [a, b, c] = [newUuid(), newUuid(), newUuid()];
    const { group } = await rt.conversations.createGroup({ tenant, owner: a, members: [b, c] });
    // 20 messages from a; c reads up to 17 (its unread, 3, counts nothing that goes); b reads nothing
    for (let i = 1; i <= 20; i++) await rt.conversations.send({ tenant, group, sender: a, text: `d${i}` });
    await rt.conversations.markRead({ tenant, group, user: c, seq: 17 });
    const deliver = async () => {
      await rt.relay.drainAll();
      await rt.projection.projector.catchUp();
      await rt.conversationList.compactor.poll();
      await rt.conversationList.compactor.flush("window");
    };
    await deliver();
    assert.equal((await rt.conversationList.service.row(tenant, b, group))?.unread, 20);
    assert.equal((await rt.conversationList.service.row(tenant, c, group))?.unread, 3);
    // keep the last 6 seqs → floor 15: b's cached 20 becomes 6, c's 3 stays 3
    await rt.retention.policies.setTenantClass(tenant, "standard", { maxAgeMs: 0, maxCount: 6 }, true);
    await rt.retention.runRound({ tenant });
    await rt.retention.runRound({ tenant });
    assert.deepEqual((await stored(tenant, group)).hist, range(15, 20));
    assert.equal((await rt.conversationList.service.row(tenant, b, group))?.unread, 6);
    assert.equal((await rt.conversationList.service.row(tenant, c, group))?.unread, 3);
    const report = await rt.projection.drill.run({
      users: [a, b, c].map((user) => ({ tenant, user })), wipe: "projection", by: "test", compare: rt.conversationList.drillComparator,
    });
    assert.deepEqual(report.differences, []);
  });

  it("a tenant without a policy is never trimmed", async () => {
    const tenant = newUuid();
    const [a, b] = [newUuid(), newUuid()];
    const { group } = await rt.conversations.createGroup({ tenant, owner: a, members: [b] });
    for (let i = 1; i <= 5; i++) await rt.conversations.send({ tenant, group, sender: a, text: `x${i}` });
    await rt.relay.drainAll();
    trimClock.now = clock.now + 10 * 365 * 86_400_000;
    const r = await rt.retention.runRound({ tenant: tenant });
    assert.equal(r.histRemoved, 0);
    assert.deepEqual((await stored(tenant, group)).hist, range(1, 5));
  });

  // ---- CMD history (issue 26: "CMD history trimmed once … its retention passed")

  const cmdReq = (tenant: Uuid, channelId: string, over: Partial<CmdSendRequest> = {}): CmdSendRequest => ({
    tenant, channelId, channelType: 1, from: null, to: null, noPersist: false, payload: new TextEncoder().encode("p"), ...over,
  });
  /** The seqs a CMD channel's history holds, and its idempotency index's client_msg_nos, read from Redis. */
  async function cmdStored(tenant: Uuid, channelId: string, channelType = 1): Promise<{ hist: number[]; idem: string[] }> {
    // the log stores a channel under its command id (the ____cmd suffix once)
    const k = cmdChannelKeys(keys, tenant, { channelId: channelId.endsWith("____cmd") ? channelId : `${channelId}____cmd`, channelType });
    const c = store.clientFor(k.tag);
    return { hist: (await c.zrange(k.hist, "0", "-1", "WITHSCORES")).filter((_, i) => i % 2 === 1).map(Number), idem: (await c.hkeys(k.idem)).sort() };
  }

  it("CMD channels: the tenant's count rule keeps a channel's last N seqs, a group-sourced channel follows its group's own rule; a dry run writes nothing; the idempotency window is the retention", async () => {
    const tenant = newUuid();
    const [a, b] = [newUuid(), newUuid()];
    const log = new CmdLog(store, keys);
    for (let i = 1; i <= 12; i++) await log.commit(cmdReq(tenant, "orders", { to: [a], clientMsgNo: `m-${i}` }));
    const { group } = await rt.conversations.createGroup({ tenant, owner: a, members: [b] });
    const groupChannel = `${group}____cmd`;
    for (let i = 1; i <= 3; i++) await log.commit(cmdReq(tenant, groupChannel, { channelType: 2, clientMsgNo: `g-${i}` }));
    await rt.retention.policies.setTenantClass(tenant, "standard", { maxAgeMs: 0, maxCount: 5 }, true);
    await rt.retention.policies.setGroup(tenant, group, { retentionClass: null, rule: { maxAgeMs: 0, maxCount: 2 } });
    // dry: one step of at most 7 (stepRecords): 12 − 5 = 7 of orders, 3 − 2 = 1 of the group's channel
    const dry = await rt.retention.runRound({ dryRun: true, tenant });
    assert.equal(dry.cmd.histRemoved, 8);
    assert.deepEqual((await cmdStored(tenant, "orders")).hist, range(1, 12), "a dry run trims nothing");
    assert.equal(await store.clientFor(cmdChannelKeys(keys, tenant, { channelId: "orders____cmd", channelType: 1 }).tag).zcard(cmdChannelDirectoryKey(keys, cmdChannelKeys(keys, tenant, { channelId: "orders____cmd", channelType: 1 }).bucket)), 0, "nor fills the directory");
    const r = await rt.retention.runRound({ tenant });
    assert.deepEqual([r.cmd.histRemoved, r.cmd.behind], [8, 0]);
    // orders keeps 12 − 5 + 1 = 8 … 12; the group's channel keeps its last 2: 2, 3
    assert.deepEqual(await cmdStored(tenant, "orders"), { hist: range(8, 12), idem: range(8, 12).map((i) => `m-${i}`).sort() });
    assert.deepEqual(await cmdStored(tenant, groupChannel, 2), { hist: [2, 3], idem: ["g-2", "g-3"] });
    // a retry of a trimmed message commits again, with the next seq; a retry of a kept one is the first commit's answer
    const again = await log.commit(cmdReq(tenant, "orders", { to: [a], clientMsgNo: "m-1" }));
    const kept = await log.commit(cmdReq(tenant, "orders", { to: [a], clientMsgNo: "m-9" }));
    assert.deepEqual([again.message.messageSeq, again.duplicate, kept.message.messageSeq, kept.duplicate], [13, false, 9, true]);
    // the loaded history (what a CMD sync reads) starts at the floor
    assert.deepEqual((await log.load(tenant, { channelId: "orders____cmd", channelType: 1 }, 0, 100)).map((m) => m.messageSeq), [...range(8, 13)]);
  });

  it("CMD channels: an age rule trims by commit time; a channel with nothing left leaves the directory and its next commit brings it back with the next seq", async () => {
    const tenant = newUuid();
    const a = newUuid();
    const log = new CmdLog(store, keys);
    for (let i = 1; i <= 4; i++) await log.commit(cmdReq(tenant, "pings", { to: [a], clientMsgNo: `p-${i}` }));
    await rt.retention.policies.setTenantClass(tenant, "standard", { maxAgeMs: 3_600_000, maxCount: 0 }, true);
    const k = cmdChannelKeys(keys, tenant, { channelId: "pings____cmd", channelType: 1 });
    const dir = cmdChannelDirectoryKey(keys, k.bucket);
    const ref = `${uuidToHex(tenant)}|1|pings____cmd`;
    // an hour later nothing is past the age: all kept, the channel is in the directory
    trimClock.now = Date.now() + 3_000_000;
    await rt.retention.runRound({ tenant });
    assert.deepEqual((await cmdStored(tenant, "pings")).hist, [1, 2, 3, 4]);
    assert.notEqual(await store.clientFor(k.tag).zscore(dir, ref), null);
    // two hours later every entry is past it: history and idempotency empty, the channel forgotten
    trimClock.now = Date.now() + 7_200_000;
    const r = await rt.retention.runRound({ tenant });
    assert.deepEqual([r.cmd.histRemoved, r.cmd.forgotten], [4, 1]);
    assert.deepEqual(await cmdStored(tenant, "pings"), { hist: [], idem: [] });
    assert.equal(await store.clientFor(k.tag).zscore(dir, ref), null);
    // a new commit: the seq counter was never touched (5, not 1), and the next round walks it again
    const next = await log.commit(cmdReq(tenant, "pings", { to: [a], clientMsgNo: "p-5" }));
    assert.equal(next.message.messageSeq, 5);
    trimClock.now = Date.now();
    await rt.retention.runRound({ tenant });
    assert.notEqual(await store.clientFor(k.tag).zscore(dir, ref), null);
    assert.deepEqual((await cmdStored(tenant, "pings")).hist, [5]);
  });

  it("CMD channels: what every recipient has acknowledged goes without any rule; the idempotency window stays (a retry of a trimmed message is its duplicate, same id and seq)", async () => {
    const tenant = newUuid();
    const [a, b] = [newUuid(), newUuid()];
    // seq: 1 → a, b; 2 → a; 3 → a, b; 4 → b; 5 → a, b (sent through CMD sync: each recipient's pending entry)
    const audiences = [[a, b], [a], [a, b], [b], [a, b]];
    const sent = [];
    for (let i = 0; i < audiences.length; i++) sent.push(await rt.cmd.send(cmdReq(tenant, "acks", { to: audiences[i]!, clientMsgNo: `k-${i + 1}` })));
    assert.deepEqual(sent.map((r) => r.message.messageSeq), [1, 2, 3, 4, 5]);
    const syncAck = async (user: Uuid, limit: number) => {
      const got = await rt.cmd.syncLocal(tenant, user, limit);
      await rt.cmd.ackLocal(tenant, user, 0);
      return got.messages.map((m) => m.messageSeq);
    };
    // a reads 1, 2, 3 (its first three) and acknowledges; b nothing yet: seq 1 waits for b
    assert.deepEqual(await syncAck(a, 3), [1, 2, 3]);
    let r = await rt.retention.runRound({ tenant });
    assert.equal(r.cmd.histRemoved, 0);
    assert.deepEqual((await cmdStored(tenant, "acks")).hist, [1, 2, 3, 4, 5]);
    // b reads 1, 3 (its first two): every recipient of 1, 2, 3 is past them; 4 waits for b (read 3)
    assert.deepEqual(await syncAck(b, 2), [1, 3]);
    r = await rt.retention.runRound({ tenant });
    assert.equal(r.cmd.histRemoved, 3);
    assert.deepEqual(r.cmd.trims.map((t) => [t.channelId, t.ackedThrough, t.histRemoved, t.idemRemoved]), [["acks____cmd", 3, 3, 0]]);
    assert.deepEqual(await cmdStored(tenant, "acks"), { hist: [4, 5], idem: ["k-1", "k-2", "k-3", "k-4", "k-5"] });
    // a retry of seq 1 after its entry went: the duplicate, with the first commit's id, seq and time
    const retry = await rt.cmd.send(cmdReq(tenant, "acks", { to: [a, b], clientMsgNo: "k-1" }));
    assert.deepEqual([retry.duplicate, retry.message.messageSeq, retry.message.messageId, retry.message.timestampMs], [true, 1, sent[0]!.message.messageId, sent[0]!.message.timestampMs]);
    // the rest: a reads 5, b reads 4, 5: nothing is left
    assert.deepEqual(await syncAck(a, 10), [5]);
    assert.deepEqual(await syncAck(b, 10), [4, 5]);
    r = await rt.retention.runRound({ tenant });
    assert.equal(r.cmd.histRemoved, 2);
    assert.deepEqual((await cmdStored(tenant, "acks")).hist, []);
    // and a new message still gets the next seq
    assert.equal((await rt.cmd.send(cmdReq(tenant, "acks", { to: [a], clientMsgNo: "k-6" }))).message.messageSeq, 6);
  });

  it("CMD channels: the acknowledged prefix is found across pages of history (the first page is 8 entries): 20 messages, acknowledged through 13", async () => {
    const tenant = newUuid();
    const [a, b] = [newUuid(), newUuid()];
    for (let i = 1; i <= 20; i++) await rt.cmd.send(cmdReq(tenant, "pages", { to: [a, b], clientMsgNo: `p-${i}` }));
    // a acknowledges all 20, b the first 13: every recipient is past 1..13
    await rt.cmd.syncLocal(tenant, a, 20);
    await rt.cmd.ackLocal(tenant, a, 0);
    await rt.cmd.syncLocal(tenant, b, 13);
    await rt.cmd.ackLocal(tenant, b, 0);
    const r = await rt.retention.runRound({ tenant });
    assert.deepEqual(r.cmd.trims.map((t) => [t.channelId, t.ackedThrough, t.histRemoved]), [["pages____cmd", 13, 13]]);
    assert.deepEqual((await cmdStored(tenant, "pages")).hist, [14, 15, 16, 17, 18, 19, 20]);
  });

  it("CMD channels of a tenant without a policy are never trimmed while their recipients have acknowledged nothing", async () => {
    const tenant = newUuid();
    const log = new CmdLog(store, keys);
    for (let i = 1; i <= 3; i++) await log.commit(cmdReq(tenant, "keep", { to: [newUuid()] }));
    const r = await rt.retention.runRound({ tenant });
    assert.equal(r.cmd.histRemoved, 0);
    assert.deepEqual((await cmdStored(tenant, "keep")).hist, [1, 2, 3]);
  });

  it("rounds never overlap: two asked for at once run one after the other (the second finds nothing left); a dry run stops walking once its list is full", async () => {
    const tenant = newUuid();
    const [a, b] = [newUuid(), newUuid()];
    const groups: Uuid[] = [];
    for (let g = 0; g < 3; g++) {
      const { group } = await rt.conversations.createGroup({ tenant, owner: a, members: [b] });
      for (let i = 0; i < 6; i++) await rt.conversations.send({ tenant, group, sender: a, payload: new TextEncoder().encode(`m${i}`), contentType: "text/plain" });
      groups.push(group);
    }
    await rt.relay.drainAll();
    await rt.retention.policies.setTenantClass(tenant, "standard", { maxAgeMs: 0, maxCount: 2 }, true);
    // each group: 6 messages, keep 2 → 4 go (one step of 7 is enough): 12 in all
    const dry = await rt.retention.runRound({ dryRun: true, tenant, listLimit: 1 });
    assert.deepEqual([dry.trims.length, dry.stoppedEarly], [1, true]);
    const [first, second] = await Promise.all([rt.retention.runRound({ tenant }), rt.retention.runRound({ tenant })]);
    assert.deepEqual([first.histRemoved, second.histRemoved], [12, 0]);
    for (const g of groups) assert.deepEqual((await stored(tenant, g)).hist, [5, 6]);
  });
});
