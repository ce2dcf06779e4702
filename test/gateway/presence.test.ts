/**
 * Presence subscriptions (issue 28, spec 003 §2.1, core/presence) on two REAL node processes
 * sharing one Redis, devices on both, driven frame by frame (test/gateway/device.ts). A device
 * watches members of a group it is in; what it is told is checked against what the test did (which
 * devices it opened and closed, and where) — never against a read of the node's state. The crash
 * case SIGKILLs the node that holds a watched user's only connection.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Redis } from "ioredis";
import { sleep, until } from "../cluster/processes.js";
import { ok, run } from "../e2e/qimctl.js";
import { Device, show, type Body } from "./device.js";
import { startTwoNodes, type NodeSlot, type TwoNodes } from "./two-nodes.js";
import type { AdminClient } from "../../admin-api/client.js";
import { KeySpace, presenceWatchKey, type Uuid } from "../../core/index.js";

/** The engine's numbers (core/base/limits.ts), written out: the test's own. */
const MERGE_WINDOW_MS = 2000;
const SUB_MAX_USERS = 100;
const SUB_BURST = 5;
const MAX_PER_CONNECTION = 500;

type Ack = Extract<Body, { $case: "presenceSubAck" }>["presenceSubAck"];
type State = { user: string; online: boolean };

/** The PRESENCE_UPDATE pushes a device got, in arrival order, with their arrival times. */
const updates = (d: Device): { at: number; states: State[] }[] =>
  d.received.filter((r) => r.frame.requestId === 0n && r.frame.body?.$case === "presenceUpdate")
    .map((r) => ({ at: r.at, states: (r.frame.body as Extract<Body, { $case: "presenceUpdate" }>).presenceUpdate.states }));
/** What the device was told of `user` last: the answer's state, then each update's, in order. */
const lastTold = (d: Device, user: string, answered: boolean): boolean => {
  let s = answered;
  for (const u of updates(d)) for (const st of u.states) if (st.user === user) s = st.online;
  return s;
};

describe("presence subscriptions across two nodes", { timeout: 300_000 }, () => {
  let env: TwoNodes;
  let raw: Redis;
  let nodes: NodeSlot[];
  let context: string;
  let tenant: string;
  let ca: Buffer;
  let admin: AdminClient;
  const open: Device[] = [];
  const tokenFor = async (user: string, name: string): Promise<string> =>
    (ok(await run(["token", "issue", "--user", user, "--device", name, "--ttl", "1h"], { context }), "token issue") as { token: string }).token;
  /** A socket upgraded with the token, not yet authenticated (the user is not online through it until AUTH). */
  const openSocket = async (on: 0 | 1, token: string): Promise<Device> => {
    const d = await Device.open(nodes[on]!.url!, ca, token);
    assert.ok(d instanceof Device, `connected: ${show(d)}`);
    open.push(d);
    return d;
  };
  const auth = async (d: Device, name: string): Promise<Device> => {
    const a = await d.request({ $case: "auth", auth: { deviceId: name, clientVersion: "test" } });
    assert.equal(a.body?.$case, "authOk", show(a.body));
    return d;
  };
  const connect = async (on: 0 | 1, name: string, token: string): Promise<Device> => auth(await openSocket(on, token), name);
  const device = async (on: 0 | 1, user: string): Promise<Device> => {
    const name = `dev-${randomUUID().slice(0, 8)}`;
    return connect(on, name, await tokenFor(user, name));
  };
  const closeDevice = async (d: Device) => {
    d.ws.close();
    await d.whenClosed();
  };
  const createGroup = async (owner: string, members: string[]): Promise<string> => {
    const r = await admin.createGroup({ tenant, group: "", owner, members });
    return r.group;
  };
  const sub = async (d: Device, group: string, users: string[], unsubscribe = false): Promise<Body> =>
    (await d.request({ $case: "presenceSub", presenceSub: { group, users, unsubscribe } })).body!;
  const ackOf = (b: Body): Ack => {
    assert.equal(b.$case, "presenceSubAck", show(b));
    return (b as Extract<Body, { $case: "presenceSubAck" }>).presenceSubAck;
  };
  const errorOf = (b: Body) => {
    assert.equal(b.$case, "error", show(b));
    return (b as Extract<Body, { $case: "error" }>).error;
  };
  const watchEntry = async (user: string): Promise<Record<string, string>> => raw.hgetall(presenceWatchKey(new KeySpace("qim"), tenant as Uuid, user as Uuid));

  before(async () => {
    env = await startTwoNodes("qim-presence-");
    ({ raw, nodes, context, tenant, ca, admin } = env);
    await until("both nodes alive", async () => (await admin.listNodes({})).nodes.filter((n) => n.alive).length === 2);
  });

  after(async () => {
    for (const d of open) d.ws.terminate();
    await env?.stop();
  });

  it("a watcher is told when members come online and go offline on either node; a user online on two nodes is offline only when both went; non-members are left out", async () => {
    const [alice, bob, carol, dave] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const group = await createGroup(alice, [bob, carol]);
    const watcher = await device(0, alice);
    const a = ackOf(await sub(watcher, group, [bob, carol, dave]));
    assert.deepEqual(a.states, [{ user: bob, online: false }, { user: carol, online: false }], "nobody else is connected yet");
    assert.deepEqual([a.notMembers, a.subscriptions], [[dave], 2], "dave is not a member: left out, named");
    // node A watches bob in Redis (node B's connections will tell it); nothing else of presence is stored
    assert.deepEqual(Object.keys(await watchEntry(bob)), ["node-a"]);
    assert.deepEqual(await watchEntry(dave), {});

    // bob on node B: told online
    const bobB = await device(1, bob);
    await until("alice is told bob is online", async () => lastTold(watcher, bob, false) || undefined);
    // bob on node A too, then gone from B: still online somewhere — no offline
    const bobA = await device(0, bob);
    await closeDevice(bobB);
    await sleep(MERGE_WINDOW_MS + 1000);
    assert.equal(lastTold(watcher, bob, false), true, "bob still has a connection on node A");
    // and gone from A: offline
    await closeDevice(bobA);
    await until("alice is told bob is offline", async () => !lastTold(watcher, bob, false) || undefined);
    // carol on the watcher's own node
    const carolA = await device(0, carol);
    await until("alice is told carol is online", async () => lastTold(watcher, carol, false) || undefined);
    await closeDevice(carolA);
    await until("alice is told carol is offline", async () => !lastTold(watcher, carol, false) || undefined);

    // the whole history: each user's states alternate (no repeat of what the watcher was told), and no two frames inside a merge window
    const got = updates(watcher);
    for (const u of [bob, carol]) {
      const seq = got.flatMap((f) => f.states.filter((s) => s.user === u).map((s) => s.online));
      assert.deepEqual(seq, [true, false], `${u}: online once, offline once`);
    }
    assert.ok(got.every((f) => f.states.every((s) => s.user !== dave)), "nothing of a non-member");
    for (let i = 1; i < got.length; i++) assert.ok(got[i]!.at - got[i - 1]!.at >= MERGE_WINDOW_MS - 150, `frames ${got[i]!.at - got[i - 1]!.at} ms apart`);

    // unsubscribing bob: his next coming is not told; the watch entry goes with the last watcher on the node
    const un = ackOf(await sub(watcher, group, [bob], true));
    assert.deepEqual([un.removed, un.subscriptions], [1, 1]);
    assert.deepEqual(await watchEntry(bob), {});
    const framesBefore = updates(watcher).length;
    const bobAgain = await device(1, bob);
    await sleep(MERGE_WINDOW_MS + 1000);
    assert.equal(updates(watcher).length, framesBefore, "nothing about a user no longer watched");
    await closeDevice(bobAgain);
    // the watcher goes: its node's watch entries go with it
    assert.deepEqual(Object.keys(await watchEntry(carol)), ["node-a"]);
    await closeDevice(watcher);
    await until("carol's watch entry is removed", async () => Object.keys(await watchEntry(carol)).length === 0);
  });

  it("a watcher who leaves the group is told nothing more through it, and nobody is told of a member removed from it; their watch entries go", async () => {
    const [alice, bob, carol, erin] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const group = await createGroup(alice, [bob, carol, erin]);
    const stays = await device(0, alice);
    const leaves = await device(1, bob);
    for (const w of [stays, leaves]) assert.deepEqual(ackOf(await sub(w, group, [carol, erin])).states, [{ user: carol, online: false }, { user: erin, online: false }]);
    // bob leaves by his own frame; erin is removed by an operator
    const left = await leaves.request({ $case: "leaveGroup", leaveGroup: { group } });
    assert.notEqual(left.body?.$case, "error", show(left.body));
    await admin.removeMembers({ tenant, group, users: [erin], dryRun: false });
    // then carol and erin come online, one on each node
    await device(1, carol);
    await device(0, erin);
    await until("alice is told carol is online", async () => lastTold(stays, carol, false) || undefined);
    // a window more: anything else would have come by now
    await sleep(MERGE_WINDOW_MS + 1000);
    assert.deepEqual(updates(stays).map((u) => u.states), [[{ user: carol, online: true }]], "alice: carol, and nothing of erin, who is no longer a member");
    assert.deepEqual(updates(leaves), [], "bob left the group: nothing more through it");
    // nobody watches erin any more; only alice's node watches carol
    await until("the watch entries of the ended pairs are removed", async () => Object.keys(await watchEntry(erin)).length === 0 && Object.keys(await watchEntry(carol)).join() === "node-a");
    // bob may not subscribe again through the group he left
    assert.equal(errorOf(await sub(leaves, group, [carol])).code, "PERMISSION_DENIED");
  });

  it("a user who goes and comes back inside the merge window is not reported; at most one frame per window carries every change", async () => {
    const [alice, erin, fay, gus] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const group = await createGroup(alice, [erin, fay, gus]);
    const watcher = await device(0, alice);
    ackOf(await sub(watcher, group, [erin, fay, gus]));
    // tokens first: the flaps below are only connects and closes
    const names = ["e1", "e2", "e3", "e4"].map((n) => `${n}-${randomUUID().slice(0, 6)}`);
    const tokens = await Promise.all(names.map((n) => tokenFor(erin, n)));
    const [fayName, gusName] = [`f-${randomUUID().slice(0, 6)}`, `g-${randomUUID().slice(0, 6)}`];
    const [fayToken, gusToken] = [await tokenFor(fay, fayName), await tokenFor(gus, gusName)];
    // the sockets first (TLS and the token's check): inside the window below there are only AUTHs and closes
    const sockets = await Promise.all(tokens.map((tk, i) => openSocket(i % 2 === 0 ? 1 : 0, tk)));
    const [faySocket, gusSocket] = [await openSocket(1, fayToken), await openSocket(0, gusToken)];
    const first = await auth(sockets[0]!, names[0]!);
    await until("alice is told erin is online", async () => updates(watcher).length === 1 || undefined);
    const t0 = updates(watcher)[0]!.at;
    // inside the window that frame opened: erin goes and comes back three times, on both nodes; fay and gus come online
    await closeDevice(first);
    for (let i = 1; i < 4; i++) {
      const d = await auth(sockets[i]!, names[i]!);
      if (i < 3) await closeDevice(d);
    }
    await auth(faySocket, fayName);
    await auth(gusSocket, gusName);
    const spent = performance.now() - t0;
    assert.ok(spent < MERGE_WINDOW_MS, `the flaps took ${spent} ms: inside the window (a slow machine: rerun)`);
    await until("one more frame", async () => updates(watcher).length >= 2 || undefined);
    await sleep(MERGE_WINDOW_MS + 1000);
    const got = updates(watcher);
    assert.equal(got.length, 2, "one frame for everything inside the window");
    assert.ok(got[1]!.at - t0 >= MERGE_WINDOW_MS - 150, "not before the window ended");
    const second = new Map(got[1]!.states.map((s) => [s.user, s.online]));
    assert.deepEqual([second.get(fay), second.get(gus)], [true, true]);
    assert.equal(second.has(erin), false, "erin is online, as the watcher was told: not in it");
  });

  it("random comings and goings of six users on both nodes, three at a time: once quiet, the watcher was last told exactly who has a device open; it was never told the same twice in a row", async () => {
    const alice = randomUUID();
    const people = Array.from({ length: 6 }, () => randomUUID());
    const group = await createGroup(alice, people);
    const watcher = await device(0, alice);
    const answered = ackOf(await sub(watcher, group, people)).states;
    assert.ok(answered.every((s) => !s.online));
    // tokens first: the lanes below only connect and close
    const pool = new Map<string, { name: string; token: string }[]>();
    for (const u of people) pool.set(u, await Promise.all([0, 1, 2, 3].map(async (i) => { const name = `r${i}-${randomUUID().slice(0, 6)}`; return { name, token: await tokenFor(u, name) }; })));
    const openNow = new Map<string, Device[]>(people.map((u) => [u, []]));
    const history: string[] = [];
    let seed = 12345;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const lane = async () => {
      for (let op = 0; op < 14; op++) {
        const u = people[rand(people.length)]!;
        const mine = openNow.get(u)!;
        if (mine.length > 0 && (mine.length >= 2 || rand(2) === 0)) {
          const d = mine.splice(rand(mine.length), 1)[0]!;
          history.push(`close ${u}`);
          await closeDevice(d);
        } else {
          const { name, token } = pool.get(u)![op % 4]!;
          // a token names its device: the same one again is another connection of the same device (allowed)
          const d = await connect(rand(2) as 0 | 1, name, token);
          mine.push(d);
          history.push(`open ${u}`);
        }
      }
    };
    await Promise.all([lane(), lane(), lane()]);
    const opens = history.filter((h) => h.startsWith("open")).length;
    assert.ok(opens >= 10 && history.length === 42, `${opens} opens in ${history.length} operations`);
    await sleep(MERGE_WINDOW_MS + 1500);
    await until("the watcher's view settles on the truth", async () => people.every((u) => lastTold(watcher, u, false) === openNow.get(u)!.length > 0) || undefined);
    // the checker over the whole history of frames: per user, states alternate (each frame says a change)
    for (const u of people) {
      const seq = [false, ...updates(watcher).flatMap((f) => f.states.filter((s) => s.user === u).map((s) => s.online))];
      for (let i = 1; i < seq.length; i++) assert.notEqual(seq[i], seq[i - 1], `${u}: told ${seq[i]} twice in a row (${history.length} operations)`);
    }
    const got = updates(watcher);
    for (let i = 1; i < got.length; i++) assert.ok(got[i]!.at - got[i - 1]!.at >= MERGE_WINDOW_MS - 150);
    for (const ds of openNow.values()) for (const d of ds) await closeDevice(d);
  });

  it("refusals change nothing: a non-member watcher, too many users, a user twice, a bad id, the rate per user and group, the cap per connection", async () => {
    const [alice, bob, mallory] = [randomUUID(), randomUUID(), randomUUID()];
    const members = Array.from({ length: 110 }, () => randomUUID());
    const group = await createGroup(alice, [bob, ...members.slice(0, 99)]);
    for (let i = 99; i < members.length; i += 100) await admin.addMembers({ tenant, group, users: members.slice(i, i + 100), dryRun: false });
    const outsider = await device(0, mallory);
    assert.equal(errorOf(await sub(outsider, group, [bob])).code, "PERMISSION_DENIED");
    const watcher = await device(0, alice);
    const tooMany = errorOf(await sub(watcher, group, members.slice(0, SUB_MAX_USERS + 1)));
    assert.deepEqual([tooMany.code, tooMany.field], ["INVALID_ARGUMENT", "users"]);
    assert.equal(errorOf(await sub(watcher, group, [bob, bob])).code, "INVALID_ARGUMENT");
    assert.equal(errorOf(await sub(watcher, group, ["not-a-uuid"])).code, "INVALID_ARGUMENT");
    assert.equal(errorOf(await sub(watcher, group, [])).code, "INVALID_ARGUMENT");
    // none of them watched anything
    assert.deepEqual(await watchEntry(bob), {});
    // the burst per user and group, then RATE_LIMITED with when to retry
    for (let i = 0; i < SUB_BURST; i++) assert.equal(ackOf(await sub(watcher, group, [members[i]!])).subscriptions, i + 1);
    const limited = errorOf(await sub(watcher, group, [bob]));
    assert.equal(limited.code, "RATE_LIMITED");
    assert.ok(limited.retryAfterMs > 0);
    assert.deepEqual(await watchEntry(bob), {}, "the refused one watched nothing");
    // another group of the same user has its own rate; the cap counts (group, user) pairs on the connection
    const others = Array.from({ length: 5 }, async () => createGroup(alice, members.slice(0, SUB_MAX_USERS)));
    let held = SUB_BURST;
    for (const g of await Promise.all(others)) {
      const r = await sub(watcher, g, members.slice(0, SUB_MAX_USERS));
      if (held + SUB_MAX_USERS > MAX_PER_CONNECTION) {
        assert.equal(errorOf(r).code, "FAILED_PRECONDITION", "past the cap");
        continue;
      }
      held += SUB_MAX_USERS;
      assert.equal(ackOf(r).subscriptions, held);
    }
    assert.equal(held, 405);
    // unsubscribing a whole group ends its pairs
    const un = ackOf(await sub(watcher, group, [], true));
    assert.deepEqual([un.removed, un.subscriptions], [SUB_BURST, held - SUB_BURST]);
  });

  it("the node holding a watched user's only connection is SIGKILLed: the watcher is told offline once the node's lease ends", async () => {
    const [alice, hank] = [randomUUID(), randomUUID()];
    const group = await createGroup(alice, [hank]);
    await device(1, hank);
    const watcher = await device(0, alice);
    assert.deepEqual(ackOf(await sub(watcher, group, [hank])).states, [{ user: hank, online: true }]);
    nodes[1]!.proc!.signal("SIGKILL");
    await nodes[1]!.proc!.exited;
    await until("alice is told hank is offline", async () => !lastTold(watcher, hank, true) || undefined);
    assert.equal(watcher.received.filter((r) => r.frame.body?.$case === "error").length, 0, "no ERROR frame");
    // hank back on the survivor: online again
    await device(0, hank);
    await until("alice is told hank is online again", async () => lastTold(watcher, hank, true) || undefined);
    const seq = updates(watcher).flatMap((f) => f.states.filter((s) => s.user === hank).map((s) => s.online));
    assert.deepEqual(seq, [false, true]);
  });
});
