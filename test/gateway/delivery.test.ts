/**
 * Delivery to online devices (issue 27, core/delivery) on two REAL node processes sharing one
 * Redis: node A takes every unit (it owns the dispatch partitions, so its delivery consumer reads
 * every commit and the conversation lists are written there), node B only relay buckets (an API
 * node): a device on B gets its pushes through node RPC Deliver, a read mark taken on B reaches A's
 * devices through PushUserEvents. Devices are the `ws` client driven frame by frame
 * (test/gateway/device.ts). Expected values come from what the test did: the SEND_ACKs it got (seq
 * and message id), the leave's event seq, the seqs it marked read, the messages it sent — never from
 * a read of the node's state.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { counter, sleep, until } from "../cluster/processes.js";
import { failed, ok, run } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { Device, show, type Body } from "./device.js";

/** The read-sync merge window of spec 003 §2.2 (READ_SYNC_MERGE_WINDOW_MS), written out: the test's own number. */
const MERGE_WINDOW_MS = 3000;

type Msg = Extract<Body, { $case: "message" }>["message"];

/** The messages of `group` a device got, in arrival order. */
const messagesOf = (d: Device, group: string): Msg[] => d.pushes("message").map((b) => b.message).filter((m) => m.group === group);

/** Seqs in arrival order after dropping repeats of a message id (what a device shows after its dedupe). */
function deduped(ms: Msg[]): number[] {
  const seen = new Set<string>();
  const out: number[] = [];
  for (const m of ms) {
    if (seen.has(m.messageId)) continue;
    seen.add(m.messageId);
    out.push(Number(m.conversationSeq));
  }
  return out;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("delivery to online devices across two nodes", { timeout: 300_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  const nodes: { id: string; units: string[]; proc?: ServerProcess; url?: string }[] = [
    { id: "node-a", units: [] },
    { id: "node-b", units: ["--cluster-units", "relay"] },
  ];
  let context: string;
  let tenant: string;
  let ca: Buffer;
  let admin: AdminClient;
  const open: Device[] = [];

  const device = async (user: string, name: string, on: 0 | 1): Promise<Device> => {
    const { token } = ok(await run(["token", "issue", "--user", user, "--device", name, "--ttl", "1h"], { context }), "token issue") as { token: string };
    const d = await Device.open(nodes[on]!.url!, ca, token);
    assert.ok(d instanceof Device, `connected: ${show(d)}`);
    const a = await d.request({ $case: "auth", auth: { deviceId: name, clientVersion: "test" } });
    assert.equal(a.body?.$case, "authOk", show(a.body));
    open.push(d);
    return d;
  };
  const createGroup = async (owner: string, members: string[]): Promise<string> =>
    ok(await run(["group", "create", "--owner", owner, ...members.flatMap((m) => ["--member", m])], { context }), "group create").group as string;
  /** Sends `n` messages pipelined from one device; resolves with seq → message id from the acks. */
  const sendMany = async (d: Device, group: string, n: number, tag: string, bytes = 0): Promise<Map<number, string>> => {
    const acks = await Promise.all(range(1, n).map((i) => d.request({
      $case: "send", send: { clientMsgNo: `${tag}-${i}`, group, payload: bytes > 0 ? Buffer.alloc(bytes, i % 251) : Buffer.from(`${tag} ${i}`), contentType: "text", mentions: [] },
    })));
    const out = new Map<number, string>();
    for (const a of acks) {
      assert.equal(a.body?.$case, "sendAck", show(a.body));
      if (a.body?.$case === "sendAck") out.set(Number(a.body.sendAck.conversationSeq), a.body.sendAck.messageId);
    }
    return out;
  };
  const metric = async (i: 0 | 1, name: string, labels: Record<string, string> = {}) => counter(await (await fetch(nodes[i]!.proc!.metricsUrl!)).text(), name, labels);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-delivery-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    ca = readFileSync(pki.ca.certPath);
    redis = await startRedis();
    const keys = path.join(dir, "token-keys.json");
    context = path.join(dir, "context.json");
    ok(await run(["token", "keygen", "--keys", keys]), "token keygen");
    for (const n of nodes) {
      n.proc = await startServerProcess({
        redisAddr: redis.addr, pki, auditLog: path.join(dir, `${n.id}.audit.log`), metricsListen: "127.0.0.1:0",
        extraArgs: [
          "--node-id", n.id, "--data-dir", path.join(dir, n.id), ...n.units,
          "--cluster-lease-ttl", "5s", "--cluster-heartbeat-interval", "1s",
          "--node-listen", "127.0.0.1:0", "--node-tls-cert", pki.nodeA.certPath, "--node-tls-key", pki.nodeA.keyPath,
          "--gateway-listen", "127.0.0.1:0", "--tokens-keys", keys, "--gateway-user-msg-rate", "1000000", // streams of sends from one user: the limit has its own test (flood.test.ts)
        ],
      });
      n.url = /client gateway on (wss:\/\/\S+)/.exec(await n.proc.waitForLog(/client gateway on /))![1]!.replace("127.0.0.1", "localhost");
    }
    tenant = randomUUID();
    writeFileSync(context, JSON.stringify({ endpoint: nodes[0]!.proc!.endpoint, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant }));
    admin = connectAdmin({
      endpoint: nodes[0]!.proc!.endpoint, caPem: readFileSync(pki.ca.certPath, "utf8"), certPem: readFileSync(pki.admin.certPath, "utf8"),
      keyPem: readFileSync(pki.admin.keyPath, "utf8"), deadlineMs: 8000,
    });
    // both alive, node A owning every partition and slot, node B none
    await until("node A owns the partitions and slots, node B is alive", async () => {
      const r = await admin.listNodes({});
      const a = r.nodes.find((n) => n.nodeId === "node-a");
      const b = r.nodes.find((n) => n.nodeId === "node-b");
      return a?.alive && b?.alive && a.owned?.slots === 256 && (a.owned?.partitions ?? 0) > 0 && b.owned?.partitions === 0;
    });
  });

  after(async () => {
    for (const d of open) d.ws.terminate();
    admin?.close();
    for (const n of nodes) await n.proc?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a committed message reaches every online device of its audience once and in order, on either node; no one else", async () => {
    const [alice, bob, carol] = [randomUUID(), randomUUID(), randomUUID()];
    const group = await createGroup(alice, [bob]);
    const alicePhone = await device(alice, "phone", 0);
    const aliceTablet = await device(alice, "tablet", 0);
    const bobPhone = await device(bob, "phone", 1);
    const bobLaptop = await device(bob, "laptop", 0);
    const carolPhone = await device(carol, "phone", 0);
    // a fresh group made with its members has no event yet: the sends are seqs 1..10
    const acks = await sendMany(alicePhone, group, 10, "m");
    assert.deepEqual([...acks.keys()].sort((a, b) => a - b), range(1, 10));
    const audience = { alicePhone, aliceTablet, bobPhone, bobLaptop };
    for (const [name, d] of Object.entries(audience)) {
      await until(`${name} has the 10 messages`, async () => deduped(messagesOf(d, group)).length >= 10);
      const got = messagesOf(d, group);
      // once each (no repeat in a quiet run), in seq order, with the ids the acks named
      assert.deepEqual(got.map((m) => Number(m.conversationSeq)), range(1, 10), `${name}: ${got.map((m) => m.conversationSeq).join(",")}`);
      assert.deepEqual(got.map((m) => m.messageId), range(1, 10).map((s) => acks.get(s)));
      assert.deepEqual(got.map((m) => m.payload.toString()), range(1, 10).map((s) => `m ${s}`));
      assert.ok(got.every((m) => m.sender === alice && m.kind === "normal"));
    }
    // carol is no member: after a round trip behind everything above, still nothing for her
    assert.equal((await carolPhone.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    assert.deepEqual(carolPhone.pushes("message"), []);
    // node A's dashboard counts its devices: the 4 connections of this test still open there, of 3 users (alice, bob's laptop, carol)
    const last = ok(await run(["dashboard", "--count", "1"], { context }), "dashboard") as { devices: { connections: number; onlineUsers: number; pushes: number } };
    assert.deepEqual([last.devices.connections, last.devices.onlineUsers], [4, 3]);
    // 10 messages to alice's two devices and bob's laptop here: 30 pushes at least
    assert.ok(last.devices.pushes >= 30, show(last.devices));
    // node B's devices were served through node RPC Deliver
    assert.ok(await metric(0, "qim_delivery_forwarded_total", { outcome: "ok" }) > 0);
    assert.ok(await metric(1, "qim_delivery_pushes_total") >= 10);
  });

  it("a group above the member budget (a fanout job): each message is pushed once from its members record to exactly the members visible at its seq, on either node; one who left before, one who joined after and a non-member get nothing", async () => {
    const [alice, bob, carol, dave, erin, frank] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    // 1,205 member entries: above REDIS_CALL_MEMBER_BUDGET (1,000), so every send goes through a fanout job
    const filler = Array.from({ length: 1200 }, () => randomUUID());
    const { group } = await admin.createGroup({ tenant, group: "", owner: alice, members: [bob, carol, dave, ...filler] });
    const records = async () => await metric(0, "qim_delivery_members_records_total");
    const before = await records();
    const alicePhone = await device(alice, "phone", 0);
    const bobPhone = await device(bob, "phone", 1);
    const carolPhone = await device(carol, "phone", 0);
    const davePhone = await device(dave, "phone", 0);
    const erinPhone = await device(erin, "phone", 1);
    const frankPhone = await device(frank, "phone", 0);
    // dave leaves first (seq 1), then five messages (2..6), then erin joins (seq 7), then one more (8)
    const left = await davePhone.request({ $case: "leaveGroup", leaveGroup: { group } });
    assert.equal(left.body?.$case, "memberListBatch", show(left.body));
    assert.equal(left.body?.$case === "memberListBatch" ? Number(left.body.memberListBatch.eventSeq) : -1, 1);
    const first = await sendMany(alicePhone, group, 5, "big");
    assert.deepEqual([...first.keys()].sort((a, b) => a - b), range(2, 6));
    const joined = await admin.addMembers({ tenant, group, users: [erin], dryRun: false });
    assert.equal(Number(joined.eventConversationSeq), 7);
    const last = await sendMany(alicePhone, group, 1, "big-last");
    assert.deepEqual([...last.keys()], [8]);
    const ids = new Map([...first, ...last]);
    const normal = (d: Device) => messagesOf(d, group).filter((m) => m.kind === "normal");
    for (const [name, d] of Object.entries({ alicePhone, bobPhone, carolPhone })) {
      await until(`${name} has the 6 messages`, async () => deduped(normal(d)).length >= 6);
      const got = normal(d);
      assert.deepEqual(got.map((m) => Number(m.conversationSeq)), [2, 3, 4, 5, 6, 8], `${name}: ${got.map((m) => m.conversationSeq).join(",")}`);
      assert.deepEqual(got.map((m) => m.messageId), [2, 3, 4, 5, 6, 8].map((s) => ids.get(s)));
    }
    await until("erin has seq 8", async () => deduped(normal(erinPhone)).includes(8));
    // a round trip behind everything above on each of the others' sockets
    for (const d of [davePhone, frankPhone, erinPhone]) assert.equal((await d.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    assert.deepEqual(deduped(normal(erinPhone)), [8], "erin joined at 7: only what came after");
    assert.deepEqual(deduped(normal(davePhone)), [], "dave left at 1");
    assert.deepEqual(frankPhone.pushes("message"), [], "frank is no member");
    // the six messages went out from their members records (the jobs' chunks push nothing)
    assert.ok(await records() - before >= 6, `members records ${await records() - before}`);
  });

  it("spec 000's leave boundary holds for pushes: zero deliveries at or after left_at while sends are in flight", async () => {
    const [alice, bob] = [randomUUID(), randomUUID()];
    const group = await createGroup(alice, [bob]);
    const alicePhone = await device(alice, "phone", 0);
    const aliceTablet = await device(alice, "tablet", 0);
    const bobPhone = await device(bob, "phone", 1);
    const sending = sendMany(alicePhone, group, 30, "l");
    await until("bob got a few messages", async () => messagesOf(bobPhone, group).length >= 5);
    const left = await bobPhone.request({ $case: "leaveGroup", leaveGroup: { group } });
    assert.equal(left.body?.$case, "memberListBatch", show(left.body));
    const leftAt = left.body?.$case === "memberListBatch" ? Number(left.body.memberListBatch.eventSeq) : -1;
    const acks = await sending;
    // 30 messages and the leave: seqs 1..31, the leave one of them
    assert.deepEqual([...acks.keys(), leftAt].sort((a, b) => a - b), range(1, 31));
    await until("alice's tablet has all 31", async () => deduped(messagesOf(aliceTablet, group)).length >= 31);
    assert.deepEqual(deduped(messagesOf(aliceTablet, group)), range(1, 31));
    // a barrier: the partition's consumer starts a step only once the previous one's forwards to node B
    // returned, so once seq 32 reached the tablet every push for bob of seqs up to 31 is on his socket,
    // and a ping's answer comes after them
    await sendMany(alicePhone, group, 1, "barrier");
    await until("the tablet has seq 32", async () => deduped(messagesOf(aliceTablet, group)).includes(32));
    assert.equal((await bobPhone.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    const bobSeqs = deduped(messagesOf(bobPhone, group));
    assert.deepEqual(bobSeqs.filter((s) => s >= leftAt), [], `bob got ${bobSeqs.join(",")}, left at ${leftAt}`);
    // and everything before his leave (he was online and a member for all of it)
    assert.deepEqual(bobSeqs, range(1, leftAt - 1));
  });

  it("C-4 read sync: ten marks in a window are one event; the marking device gets no echo, the user's other devices (here and on the other node) get it once, then their badge and list follow; a device on a node that writes no list gets its SESSION_DELTA relayed", async () => {
    const [dave, bob, erin] = [randomUUID(), randomUUID(), randomUUID()];
    const group = await createGroup(bob, [dave, erin]);
    const davePhone = await device(dave, "phone", 0);
    const daveTablet = await device(dave, "tablet", 0);
    const daveLaptop = await device(dave, "laptop", 1);
    const bobPhone = await device(bob, "phone", 1);
    // erin's only device is on node B, which writes no list: her list's changes come from node A
    const erinLaptop = await device(erin, "laptop", 1);
    await sendMany(bobPhone, group, 12, "r");
    for (const d of [davePhone, daveTablet, daveLaptop]) await until("dave's device has the 12 messages", async () => deduped(messagesOf(d, group)).length >= 12);
    // the list is written on node A: the tablet there sees the conversation at seq 12 with 12 unread
    const deltas = () => daveTablet.pushes("sessionDelta").flatMap((b) => b.sessionDelta.changed).filter((e) => e.group === group);
    await until("the tablet's SESSION_DELTA shows seq 12", async () => deltas().some((e) => e.headSeq === 12n));
    assert.equal(deltas().find((e) => e.headSeq === 12n)!.unread, 12n);
    const erinDeltas = () => erinLaptop.pushes("sessionDelta").flatMap((b) => b.sessionDelta.changed).filter((e) => e.group === group);
    await until("erin's laptop on node B gets the SESSION_DELTA relayed from node A", async () => erinDeltas().some((e) => e.headSeq === 12n));
    assert.equal(erinDeltas().find((e) => e.headSeq === 12n)!.unread, 12n);
    await until("and her badge", async () => erinLaptop.pushes("badgeUpdate").at(-1)?.badgeUpdate.badge?.totalUnread === 12n);
    const eventsBefore = await metric(0, "qim_delivery_read_sync_events_total");
    // ten marks, seqs 1..10, sent together so that they fall inside one 3 s window however slow the
    // machine is (spaced out they did not, on a loaded CI run); each answer is the stored read seq, at least its own
    const acks = await Promise.all(range(1, 10).map((s) => davePhone.request({ $case: "markRead", markRead: { group, readSeq: BigInt(s) } })));
    acks.forEach((ack, i) => assert.ok(ack.body?.$case === "markReadAck" && ack.body.markReadAck.readSeq >= BigInt(i + 1), show(ack.body)));
    for (const d of [daveTablet, daveLaptop]) await until("the READ_SYNC arrived", async () => d.pushes("readSync").length >= 1);
    // one more window's length: no second event for the same marks
    await sleep(MERGE_WINDOW_MS + 500);
    assert.equal((await davePhone.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    assert.deepEqual(davePhone.pushes("readSync"), [], "the marking device gets its own event 0 times");
    for (const d of [daveTablet, daveLaptop]) {
      assert.deepEqual(d.pushes("readSync").map((b) => [b.readSync.group, Number(b.readSync.readSeq)]), [[group, 10]]);
      // 12 messages from bob, 10 read: 2 unread (dave has no other conversation); the last badge says so
      await until("the badge follows", async () => d.pushes("badgeUpdate").at(-1)?.badgeUpdate.badge?.totalUnread === 2n);
    }
    assert.equal(await metric(0, "qim_delivery_read_sync_events_total") - eventsBefore, 1, "10 marks in 3 s: one event");
    await until("the tablet's list shows 2 unread", async () => deltas().at(-1)?.unread === 2n);
    // a mark taken on node B reaches node A's devices through node RPC, and not the laptop itself
    await daveLaptop.request({ $case: "markRead", markRead: { group, readSeq: 12n } });
    await until("node A's devices got the laptop's mark", async () => davePhone.pushes("readSync").length === 1 && daveTablet.pushes("readSync").length === 2);
    assert.deepEqual(davePhone.pushes("readSync").map((b) => Number(b.readSync.readSeq)), [12]);
    await sleep(MERGE_WINDOW_MS + 500);
    assert.equal(daveLaptop.pushes("readSync").length, 1);
  });

  it("reactions, typing and calls across the nodes: a REACT taken on either node reaches the members' devices on both as REACTION_UPDATE, at most one per message per window, ending at the counts made; a non-member's device gets none", async () => {
    const [fred, gina, hal] = [randomUUID(), randomUUID(), randomUUID()];
    const group = await createGroup(fred, [gina]);
    const fredA = await device(fred, "rx-a", 0);
    const fredB = await device(fred, "rx-b", 1);
    const ginaB = await device(gina, "rx-b", 1);
    const halA = await device(hal, "rx-a", 0);
    const seqs = await sendMany(fredA, group, 1, "rx");
    assert.deepEqual([...seqs.keys()], [1]);
    const react = async (d: Device, key: string) => {
      const r = await d.request({ $case: "react", react: { group, conversationSeq: 1n, reactionKey: key, remove: false } });
      assert.equal(r.body?.$case, "reactAck", show(r.body));
    };
    // taken on node B (gina), then on node A (fred), then on B again, back to back: versions 1, 2, 3
    await react(ginaB, "👍");
    await react(fredA, "👍");
    await react(ginaB, "🎉");
    const final = "3:👍=2,🎉=1";
    const seen = (d: Device) => d.pushes("reactionUpdate").map((b) => `${b.reactionUpdate.reactions!.summaryVersion}:${b.reactionUpdate.reactions!.counts.map((c) => `${c.key}=${c.count}`).join(",")}`);
    for (const d of [fredA, fredB, ginaB]) await until("the device holds the final counts", async () => seen(d).at(-1) === final);
    // one window more: nothing else comes; each device got the first at once and the last, never more than 3 updates
    await sleep(2000 + 500);
    for (const d of [fredA, fredB, ginaB]) {
      const got = seen(d);
      assert.equal(got.at(-1), final);
      assert.ok(got.length >= 1 && got.length <= 2, `${got.length} frames: ${got.join(" | ")}`);
      assert.deepEqual([...got].sort(), got.slice().sort(), "versions only grow");
    }
    assert.deepEqual(halA.pushes("reactionUpdate"), [], "a non-member's device gets none");
    // TYPING taken on node B reaches fred's device on node A (and his on B), not gina's own; RTC signals cross both ways
    const typed = await ginaB.request({ $case: "typing", typing: { group, typing: true } });
    assert.equal(typed.body?.$case === "typingAck" ? typed.body.typingAck.forwarded : show(typed.body), true);
    for (const d of [fredA, fredB]) {
      const t = await d.next((f) => f.body?.$case === "typingUpdate");
      assert.deepEqual(t.body?.$case === "typingUpdate" ? [t.body.typingUpdate.user, t.body.typingUpdate.typing] : show(t.body), [gina, true]);
    }
    assert.deepEqual([ginaB.pushes("typingUpdate").length, halA.pushes("typingUpdate").length], [0, 0]);
    const call = randomUUID();
    const invite = await fredA.request({ $case: "rtcSignal", rtcSignal: { group, targetUser: gina, callId: call, kind: 1, signalPayload: Buffer.from("sfu=a") } });
    assert.deepEqual(invite.body?.$case === "rtcSignalAck" ? [invite.body.rtcSignalAck.outcome, invite.body.rtcSignalAck.devices] : show(invite.body), ["ringing", 1], "gina's one device, on node B");
    const rang = await ginaB.next((f) => f.body?.$case === "rtcSignalPush");
    assert.deepEqual(rang.body?.$case === "rtcSignalPush" ? [rang.body.rtcSignalPush.fromUser, rang.body.rtcSignalPush.callId, Buffer.from(rang.body.rtcSignalPush.signalPayload).toString()] : show(rang.body), [fred, call, "sfu=a"]);
    const accept = await ginaB.request({ $case: "rtcSignal", rtcSignal: { group, targetUser: fred, callId: call, kind: 2, signalPayload: Buffer.alloc(0) } });
    assert.equal(accept.body?.$case === "rtcSignalAck" ? accept.body.rtcSignalAck.outcome : show(accept.body), "delivered");
    // both of fred's devices get the ACCEPT: the one on node A from node B over node RPC
    for (const d of [fredA, fredB]) assert.equal((await d.next((f) => f.body?.$case === "rtcSignalPush" && f.body.rtcSignalPush.kind === 2)).body?.$case, "rtcSignalPush");
    await ginaB.request({ $case: "rtcSignal", rtcSignal: { group, targetUser: fred, callId: call, kind: 5, signalPayload: Buffer.alloc(0) } });
  });

  it("back-pressure: a device that stops reading gets one RESYNC and no more pushes until it pulls its list; it catches up with no gap; the fast device got everything", async () => {
    const [alice, bob] = [randomUUID(), randomUUID()];
    const group = await createGroup(alice, [bob]);
    const alicePhone = await device(alice, "phone", 0);
    const slow = await device(bob, "slow", 0);
    const fast = await device(bob, "fast", 1);
    const soft = () => metric(0, "qim_gateway_back_pressure_total", { mark: "soft" });
    const softBefore = await soft();
    slow.pause();
    // 60 KB messages until node A says the slow device passed its soft mark (the kernel's socket buffers fill first)
    let sent = 0;
    while ((await soft()) === softBefore) {
      assert.ok(sent < 1000, "the soft mark was never reached");
      await sendMany(alicePhone, group, 32, `bp${sent}`, 60_000);
      sent += 32;
    }
    await until("the fast device has every message", async () => deduped(messagesOf(fast, group)).length >= sent).catch((err: unknown) => {
      throw new Error(`${String(err)}; it has ${deduped(messagesOf(fast, group)).length} of ${sent}; node A: ${nodes[0]!.proc!.log().split("\n").filter((l) => /delivery|gateway/.test(l)).slice(-5).join(" | ")}`);
    });
    assert.deepEqual(deduped(messagesOf(fast, group)), range(1, sent));
    slow.resume();
    await until("the slow device read its RESYNC", async () => slow.pushes("resync").length >= 1);
    assert.equal((await slow.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    const frames = slow.pushes("message").length + slow.pushes("resync").length;
    assert.ok(frames > 0);
    // what it got: a gapless prefix, then the one RESYNC and nothing pushed after it
    const got = deduped(messagesOf(slow, group));
    const k = got.length;
    assert.ok(k < sent, `held back some (${k} of ${sent})`);
    assert.deepEqual(got, range(1, k));
    assert.equal(slow.pushes("resync").length, 1);
    // catching up: its list, then history after its last seq, page by page (pages bounded in bytes)
    const list = await slow.request({ $case: "pullSessionList", pullSessionList: { cursor: "", limit: 50 } });
    assert.equal(list.body?.$case, "sessionList");
    const pulled: number[] = [];
    for (let after = k; ;) {
      const h = await slow.request({ $case: "pullHistory", pullHistory: { group, afterSeq: BigInt(after), limit: 100 } });
      assert.equal(h.body?.$case, "historyBatch", show(h.body));
      if (h.body?.$case !== "historyBatch") break;
      pulled.push(...h.body.historyBatch.messages.map((m) => Number(m.conversationSeq)));
      if (!h.body.historyBatch.more) break;
      after = pulled.at(-1)!;
    }
    assert.deepEqual([...got, ...pulled], range(1, sent), "no gap, no duplicate");
    // pushes resumed with the pull
    const next = await sendMany(alicePhone, group, 1, "after");
    await until("the next message is pushed again", async () => deduped(messagesOf(slow, group)).includes(sent + 1));
    assert.deepEqual([...next.keys()], [sent + 1]);
  });

  it("resume: a connection dropped mid-stream reconnects and re-syncs from its seqs with no gap, every repeat dedupable", async () => {
    const [alice, bob] = [randomUUID(), randomUUID()];
    const group = await createGroup(alice, [bob]);
    const alicePhone = await device(alice, "phone", 0);
    const first = await device(bob, "phone", 1);
    const sending = sendMany(alicePhone, group, 40, "x");
    await until("some arrived", async () => messagesOf(first, group).length >= 8);
    first.ws.terminate();
    const before = messagesOf(first, group);
    const second = await device(bob, "phone", 1);
    const acks = await sending;
    // re-sync: history after the last seq it had before the drop
    const last = Math.max(...before.map((m) => Number(m.conversationSeq)));
    const h = await second.request({ $case: "pullHistory", pullHistory: { group, afterSeq: BigInt(last), limit: 100 } });
    assert.equal(h.body?.$case, "historyBatch", show(h.body));
    const pulled = h.body?.$case === "historyBatch" ? h.body.historyBatch.messages : [];
    await sleep(500);
    const all = [...before, ...pulled.map((m) => ({ ...m })), ...messagesOf(second, group)];
    // every seq 1..40 is there, and a seq seen twice is the same message (its id), so a device dedupes it
    const byId = new Map<number, string>();
    for (const m of all) {
      const s = Number(m.conversationSeq);
      if (byId.has(s)) assert.equal(byId.get(s), m.messageId, `seq ${s} came with two ids`);
      byId.set(s, m.messageId);
    }
    assert.deepEqual([...byId.keys()].sort((a, b) => a - b), range(1, 40));
    assert.deepEqual(range(1, 40).map((s) => byId.get(s)), range(1, 40).map((s) => acks.get(s)));
  });

  it("operators: connections list across the nodes (--user, --node), kick closes exactly the named device (4410, audited), bad input changes nothing", async () => {
    const [u1, u2] = [randomUUID(), randomUUID()];
    const phone = await device(u1, "phone", 0);
    const laptop = await device(u1, "laptop", 1);
    await device(u2, "tab", 0);
    type Row = { nodeId: string; user: string; device: string; framesIn: number; remoteAddress: string };
    const list = async (...args: string[]) => ok(await run(["connections", "list", ...args], { context }), "connections list") as { connections: Row[]; truncated: boolean; unreachableNodes: string[] };
    // asked on node A: its own connection and node B's (through the registry)
    const mine = await list("--user", u1);
    assert.deepEqual(mine.connections.map((c) => [c.nodeId, c.device]).sort(), [["node-a", "phone"], ["node-b", "laptop"]]);
    assert.deepEqual(mine.unreachableNodes, []);
    // each connection got its AUTH frame in at least
    assert.ok(mine.connections.every((c) => c.user === u1 && c.framesIn >= 1 && /127\.0\.0\.1/.test(c.remoteAddress)), JSON.stringify(mine));
    const onB = await list("--node", "node-b", "--limit", "1000");
    assert.ok(onB.connections.every((c) => c.nodeId === "node-b"));
    assert.deepEqual(onB.connections.filter((c) => c.user === u1 || c.user === u2).map((c) => c.device), ["laptop"]);
    const all = await list("--limit", "1000");
    assert.deepEqual(all.connections.filter((c) => c.user === u2).map((c) => [c.nodeId, c.device]), [["node-a", "tab"]]);
    // cluster nodes shows each node's connections as it published them (every 5 s): they come to
    // equal what connections list counts per node
    await until("cluster nodes counts each node's connections as connections list does", async () => {
      const rows = (await list("--limit", "1000")).connections;
      const nodes = (ok(await run(["cluster", "nodes"], { context }), "cluster nodes") as { nodes: { nodeId: string; connections: number | null }[] }).nodes;
      return nodes.length === 2 && nodes.every((n) => n.connections === rows.filter((r) => r.nodeId === n.nodeId).length);
    });
    // bad input: refused before anything is asked
    failed(await run(["connections", "kick", "--user", "not-a-uuid"], { context }), 2, "kick a bad user");
    failed(await run(["connections", "list", "--user", u1, "--node", "node-a"], { context }), 2, "list with --user and --node");
    failed(await run(["connections", "list", "--node", "no-such-node"], { context }), 2, "list a node that is not there");
    // kick the laptop only: it is closed with 4410, the phone still answers
    const kicked = ok(await run(["connections", "kick", "--user", u1, "--device", "laptop"], { context }), "connections kick") as { closed: number; nodes: string[] };
    assert.deepEqual([kicked.closed, kicked.nodes], [1, ["node-b"]]);
    assert.equal((await laptop.whenClosed()).code, 4410);
    assert.equal((await phone.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    assert.deepEqual((await list("--user", u1)).connections.map((c) => c.device), ["phone"]);
    // nothing left to kick of the laptop: success, 0 closed
    assert.equal((ok(await run(["connections", "kick", "--user", u1, "--device", "laptop"], { context }), "kick again") as { closed: number }).closed, 0);
    // audited on the node that answered, with the user and the device
    const audit = readFileSync(path.join(dir, "node-a.audit.log"), "utf8").split("\n").filter((l) => l.includes("KickConnections"));
    assert.ok(audit.some((l) => l.includes(u1) && l.includes("laptop")), audit.join("\n"));
  });

  it("a device that reads nothing and keeps asking is closed with 4429 past the hard mark", async () => {
    const [alice, bob] = [randomUUID(), randomUUID()];
    const group = await createGroup(alice, [bob]);
    const alicePhone = await device(alice, "phone", 0);
    await sendMany(alicePhone, group, 40, "big", 60_000);
    const reader = await device(bob, "no-reader", 0);
    reader.pause();
    // each answer is a page of about 1 MiB (GATEWAY_MAX_ANSWER_PAYLOAD_BYTES); 60 of them are far past 8 MiB of queue
    const asks = range(1, 60).map(() => reader.request({ $case: "pullHistory", pullHistory: { group, afterSeq: 0n, limit: 40 } }).catch(() => null));
    await until("node A counted a hard mark", async () => (await metric(0, "qim_gateway_back_pressure_total", { mark: "hard" })) >= 1);
    reader.resume();
    assert.equal((await reader.whenClosed()).code, 4429);
    await Promise.all(asks);
    // the node is fine: another device is served
    assert.equal((await alicePhone.request({ $case: "ping", ping: {} })).body?.$case, "pong");
  });
});
