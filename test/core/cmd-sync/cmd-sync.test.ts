/**
 * The CmdSync module as the runtime builds it (runtime.cmd) on a real Redis: send → intent → the
 * owner's buffer → sync/ack; NoPersist makes nothing; the receiver side of a routed intent is all
 * or nothing; the *Local operations refuse a user whose slot is another node's; a replayed
 * catch-up scan changes no durable row and resurrects nothing acknowledged. Expected messages come
 * from the test's own record of what it sent.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  cmdStateField, cmdStateKeys, EngineRuntime, InvalidArgumentError, KeySpace, newUuid, RedisHashAuthority, RedisStore, slotOfUser, StaleOwnerError,
  type CmdMessage, type Uuid,
} from "../../../core/index.js";
import { startRedis, type RedisServer } from "../../harness/redis.js";

const bytes = (s: string) => new TextEncoder().encode(s);

function runtime(store: RedisStore, keyPrefix: string, extra: Partial<ConstructorParameters<typeof EngineRuntime>[0]> = {}): EngineRuntime {
  return new EngineRuntime({
    store, keyPrefix, dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 2 },
    authority: new RedisHashAuthority(store, new KeySpace(keyPrefix)), projection: { background: false }, relayIntervalMs: 0,
    conversationList: { compactor: { background: false } },
    cmd: { catchUpIntervalMs: 0, flushIntervalMs: 0 },
    log: () => {},
    ...extra,
  });
}

/** A user's whole sync/ack loop until nothing is left: every message returned, in order of return. */
async function drain(rt: EngineRuntime, tenant: Uuid, user: Uuid, limit = 3): Promise<CmdMessage[]> {
  const out: CmdMessage[] = [];
  for (let i = 0; i < 100; i++) {
    const r = await rt.cmd.syncLocal(tenant, user, limit);
    if (r.messages.length === 0) return out;
    out.push(...r.messages);
    await rt.cmd.ackLocal(tenant, user, r.messages[r.messages.length - 1]!.messageSeq);
  }
  throw new Error("sync did not converge");
}

describe("CmdSync (runtime.cmd) on one Redis", { timeout: 180_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;
  let rt: EngineRuntime;
  let prefix: string;

  before(async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    prefix = `cs${newUuid().slice(0, 8)}`;
    rt = runtime(store, prefix);
    await rt.start();
  });
  after(async () => {
    await rt?.stop();
    await store?.close();
    await redis?.stop();
  });

  test("send → the owner's pending view → sync returns each message once per recipient, the sender's own excluded; ack clears", async () => {
    const tenant = newUuid();
    const [owner, a, b] = [newUuid(), newUuid(), newUuid()];
    const g = await rt.conversations.createGroup({ tenant, owner, members: [owner, a, b] });
    const sent: CmdMessage[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await rt.cmd.send({ tenant, channelId: g.group, channelType: 2, from: owner, to: null, noPersist: false, payload: bytes(`g${i}`) });
      assert.equal(r.intentAccepted, true);
      sent.push(r.message);
    }
    const direct = await rt.cmd.send({ tenant, channelId: "direct", channelType: 1, from: null, to: [a], noPersist: false, payload: bytes("d") });
    assert.equal(direct.intentAccepted, true);
    assert.deepEqual(rt.cmd.pendingLocal(tenant, a, 0).map((v) => [v.channel.channelId, v.lastMsgSeq, v.readSeq]).sort(),
      [[`${g.group}____cmd`, 4, 0], ["direct____cmd", 1, 0]].sort());
    assert.deepEqual(rt.cmd.pendingLocal(tenant, owner, 0).map((v) => v.readSeq), [4], "the sender starts from its own seq");

    const gotA = await drain(rt, tenant, a);
    assert.deepEqual(gotA.map((m) => `${m.channel.channelId}#${m.messageSeq}`).sort(), [...sent.map((m) => `${g.group}____cmd#${m.messageSeq}`), "direct____cmd#1"].sort());
    assert.deepEqual((await drain(rt, tenant, b)).map((m) => m.messageSeq), [1, 2, 3, 4]);
    assert.deepEqual(await drain(rt, tenant, owner), [], "the sender's own messages are read");
    assert.deepEqual(rt.cmd.pendingLocal(tenant, a, 0), [], "the ack cleared the pending entries");
    // the ack made the rows durable: a fresh sync finds nothing new
    assert.deepEqual((await rt.cmd.syncLocal(tenant, a, 10)).messages, []);
    const rows = await rt.cmd.stateOf(tenant, a, 10);
    assert.deepEqual(rows.map((r) => [r.channel.channelId, r.readSeq]).sort(), [[`${g.group}____cmd`, 4], ["direct____cmd", 1]].sort());
  });

  test("a user is answered only the messages sent to it: a member added later from the next seq on (#527), no other audience's request-scoped message", async () => {
    const tenant = newUuid();
    const [owner, a, late] = [newUuid(), newUuid(), newUuid()];
    const g = await rt.conversations.createGroup({ tenant, owner, members: [owner, a] });
    const send = (over: object) => rt.cmd.send({ tenant, channelId: g.group, channelType: 2, from: null, to: null, noPersist: false, payload: bytes("x"), ...over });
    await send({});
    await rt.conversations.addMembers({ tenant, group: g.group, users: [late] });
    await send({});
    await send({ to: [a] });
    await send({});
    // by hand: seq 1 → owner, a; seq 2 → owner, a, late; seq 3 → a; seq 4 → owner, a, late
    assert.deepEqual((await drain(rt, tenant, late, 1)).map((m) => m.messageSeq), [2, 4]);
    assert.deepEqual((await drain(rt, tenant, owner, 1)).map((m) => m.messageSeq), [1, 2, 4]);
    assert.deepEqual((await drain(rt, tenant, a, 2)).map((m) => m.messageSeq), [1, 2, 3, 4]);
    for (let i = 0; i < 300; i++) await rt.cmd.send({ tenant, channelId: "shared", channelType: 1, from: null, to: [i === 150 ? late : owner], noPersist: false, payload: bytes("s") });
    assert.deepEqual((await drain(rt, tenant, late, 5)).map((m) => m.messageSeq), [151], "found past 150 messages of another audience");
  });

  test("NoPersist: delivered only — no pending entry, nothing to sync", async () => {
    const tenant = newUuid();
    const a = newUuid();
    const r = await rt.cmd.send({ tenant, channelId: "np", channelType: 1, from: null, to: [a], noPersist: true, payload: bytes("x") });
    assert.equal(r.message.messageSeq, 0);
    assert.deepEqual(r.message.recipients, [a]);
    assert.deepEqual(rt.cmd.pendingLocal(tenant, a, 0), []);
    await rt.cmd.catchUp.round();
    assert.deepEqual(rt.cmd.pendingLocal(tenant, a, 0), []);
    assert.deepEqual((await rt.cmd.syncLocal(tenant, a, 10)).messages, []);
  });

  test("acceptIntent validates first (InvalidArgumentError) and pushes when every user is ours", () => {
    const tenant = newUuid();
    const u = newUuid();
    const channel = { channelId: "x____cmd", channelType: 1 };
    assert.throws(() => rt.cmd.acceptIntent({ tenant, channel, messageSeq: 1, activeAt: 1, userReadSeqs: new Map([[u, 2]]) }), InvalidArgumentError);
    assert.throws(() => rt.cmd.acceptIntent({ tenant, channel: { channelId: "x", channelType: 1 }, messageSeq: 1, activeAt: 1, userReadSeqs: new Map([[u, 0]]) }), InvalidArgumentError);
    assert.equal(rt.cmd.acceptIntent({ tenant, channel, messageSeq: 3, activeAt: 5, userReadSeqs: new Map([[u, 0]]) }), "ok");
    assert.deepEqual(rt.cmd.pendingLocal(tenant, u, 0).map((v) => v.lastMsgSeq), [3]);
  });

  test("a replayed catch-up scan changes no durable row and resurrects nothing acknowledged", async () => {
    const tenant = newUuid();
    const users = Array.from({ length: 6 }, () => newUuid());
    const g = await rt.conversations.createGroup({ tenant, owner: users[0]!, members: users });
    for (let i = 0; i < 5; i++) await rt.cmd.send({ tenant, channelId: g.group, channelType: 2, from: users[0]!, to: null, noPersist: false, payload: bytes(`${i}`) });
    await rt.cmd.send({ tenant, channelId: "side", channelType: 1, from: null, to: users.slice(2), noPersist: false, payload: bytes("s") });
    await rt.cmd.flush();
    // user 1 reads everything before the replays
    assert.equal((await drain(rt, tenant, users[1]!)).length, 5);
    const rows = async () => {
      const out: string[] = [];
      for (const u of users) {
        const k = cmdStateKeys(new KeySpace(prefix), slotOfUser(tenant, u));
        for (const ch of [`${g.group}____cmd`, "side____cmd"]) {
          const raw = await store.clientForKey(k.state).hget(k.state, cmdStateField(tenant, u, { channelId: ch, channelType: ch === "side____cmd" ? 1 : 2 }));
          // read|deletedTo|activeAt|updatedAt: updatedAt is the flush's own time
          out.push(`${u} ${ch} ${raw === null ? "none" : raw.split("|").slice(0, 3).join("|")}`);
        }
      }
      return out;
    };
    const first = await rows();
    for (let replay = 0; replay < 2; replay++) {
      await rt.cmd.catchUp.prime(); // cursors back to the flush points less the overlap: everything again
      await rt.cmd.catchUp.round();
      await rt.cmd.flush();
      assert.deepEqual(await rows(), first, `replay ${replay + 1}`);
    }
    assert.deepEqual(await drain(rt, tenant, users[1]!), [], "user 1 acknowledged everything before the replays");
    assert.deepEqual((await drain(rt, tenant, users[2]!)).length, 6);
  });
});

describe("CmdSync on two cluster nodes (in one process) over one Redis", { timeout: 180_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;
  const nodes: EngineRuntime[] = [];

  before(async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    const prefix = `cn${newUuid().slice(0, 8)}`;
    for (const id of ["n1", "n2"]) nodes.push(runtime(store, prefix, { cluster: { nodeId: id, address: "", version: "test", leaseTtlMs: 3000, heartbeatIntervalMs: 500 } }));
    await nodes[0]!.start();
    await nodes[1]!.start();
    // until the slots are split between both
    for (let i = 0; i < 100; i++) {
      await Promise.all(nodes.map((n) => n.cluster!.tick()));
      const counts = nodes.map((n) => n.cluster!.ownedUnits("slot").length);
      if (counts[0]! + counts[1]! === 256 && Math.abs(counts[0]! - counts[1]!) <= 1) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("slots not balanced");
  });
  after(async () => {
    for (const n of nodes) await n.stop();
    await store?.close();
    await redis?.stop();
  });

  test("the *Local operations refuse another node's user; acceptIntent is all or nothing; the other owner's scan derives what the default router could not deliver", async () => {
    const [n1, n2] = nodes as [EngineRuntime, EngineRuntime];
    const tenant = newUuid();
    let mine: Uuid | null = null;
    let theirs: Uuid | null = null;
    while (mine === null || theirs === null) {
      const u = newUuid();
      if (n1.cmd.ownsUser(tenant, u)) mine ??= u; else theirs ??= u;
    }
    assert.equal(n2.cmd.ownsUser(tenant, theirs), true);
    await assert.rejects(n1.cmd.syncLocal(tenant, theirs, 10), StaleOwnerError);
    await assert.rejects(n1.cmd.ackLocal(tenant, theirs, 1), StaleOwnerError);
    assert.throws(() => n1.cmd.pendingLocal(tenant, theirs!, 10), StaleOwnerError);

    const channel = { channelId: "both____cmd", channelType: 1 };
    assert.equal(n1.cmd.acceptIntent({ tenant, channel, messageSeq: 1, activeAt: 1, userReadSeqs: new Map([[mine, 0], [theirs, 0]]) }), "stale_owner");
    assert.deepEqual(n1.cmd.pendingLocal(tenant, mine, 0), [], "nothing of a refused intent was kept");

    const r = await n1.cmd.send({ tenant, channelId: "both", channelType: 1, from: null, to: [mine, theirs], noPersist: false, payload: bytes("b") });
    assert.equal(r.intentAccepted, false, "the default router pushes only this node's users");
    assert.deepEqual(n1.cmd.pendingLocal(tenant, mine, 0).map((v) => v.lastMsgSeq), [1]);
    assert.deepEqual(n2.cmd.pendingLocal(tenant, theirs, 0), []);
    assert.deepEqual((await n2.cmd.syncLocal(tenant, theirs, 10)).messages, [], "before n2's scan its user has nothing");
    await n2.cmd.catchUp.round(); // (the round's flush point flushes what it pushed: pending or durable, sync sees both)
    assert.deepEqual((await drain(n2, tenant, theirs)).map((m) => m.messageSeq), [1], "n2's scan derived its own user's update");
    assert.deepEqual((await drain(n1, tenant, mine)).map((m) => m.messageSeq), [1]);
  });
});
