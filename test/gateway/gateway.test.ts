/**
 * The client gateway (issue 27) on a real qim-node process over TLS, with device tokens made by the
 * real qimctl (token keygen, token issue, token revoke) and two clients nobody here wrote the
 * WebSocket side of: Debian's Python `websockets` with protoc-built frames (gateway_client.py), and
 * the `ws` client for the hostile cases. Expected values are worked out from what the test did (a
 * fresh group's first message is seq 1; a leave is the next seq), never read from the node first.
 */
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";
import { GATEWAY_MAX_FRAME_BYTES } from "../../core/index.js";
import type { TestPkiFiles } from "../certs/fixture.js";
import { baseEnv, ok, QIMCTL, ROOT, run } from "../e2e/qimctl.js";
import { Device, show, startGatewayNode, type Body, type GatewayNode } from "./device.js";

const PYTHON = "/usr/bin/python3";

describe("the client gateway on a real node", { timeout: 240_000 }, () => {
  let node: GatewayNode;
  let dir: string;
  let pki: TestPkiFiles;
  let context: string;
  let url: string;
  let ca: Buffer;
  const alice = randomUUID();
  const bob = randomUUID();
  const carol = randomUUID();
  let group: string;

  const issue = async (user: string, device: string): Promise<{ token: string; tokenId: string }> => {
    const r = ok(await run(["token", "issue", "--user", user, "--device", device, "--ttl", "1h"], { context }), "token issue");
    return { token: r.token, tokenId: r.claims.tokenId };
  };
  const device = async (user: string, name: string): Promise<Device> => {
    const { token } = await issue(user, name);
    const d = await Device.open(url, ca, token);
    assert.ok(d instanceof Device, `connected: ${show(d)}`);
    const a = await d.request({ $case: "auth", auth: { deviceId: name, clientVersion: "test" } });
    assert.equal(a.body?.$case, "authOk", show(a.body));
    return d;
  };
  const historyOf = async (user: string) => ok(await run(["history", "--group", group, "--as", user], { context }), "history").records as { conversationSeq: number; kind: string }[];

  /** A `qimctl client` process: its JSON lines as they come, its stderr, stdin to type into. */
  const client = (user: string, device: string) => {
    const child: ChildProcess = spawn(process.execPath, [QIMCTL, "client", "--as", user, "--device", device, "--url", url, "--output", "json"], {
      cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: context }, stdio: ["pipe", "pipe", "pipe"],
    });
    const lines: { frame: string; requestId: number; body: Record<string, unknown> }[] = [];
    let err = "";
    let buf = "";
    child.stdout!.on("data", (c: Buffer) => {
      buf += c.toString();
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        lines.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
      }
    });
    child.stderr!.on("data", (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const wait = async (what: string, f: (l: (typeof lines)[number]) => boolean) => {
      for (let i = 0; i < 300; i++) {
        const hit = lines.find(f);
        if (hit) return hit;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`${what}: not printed; stdout ${JSON.stringify(lines)}; stderr ${err}`);
    };
    return { type: (line: string) => child.stdin!.write(`${line}\n`), lines, stderr: () => err, exited, wait, end: () => child.stdin!.end() };
  };
  before(async () => {
    node = await startGatewayNode("qim-gateway-");
    ({ dir, pki, context, url, ca } = node);
    group = ok(await run(["group", "create", "--owner", alice, "--member", bob], { context }), "group create").group;
  });

  after(async () => {
    await node?.stop();
  });

  it("a Python websockets client: AUTH, PING, SEND with a durable ack, the retry's ack, a conflict, the pushed MESSAGE, PULL_HISTORY, an unknown frame, PRESENCE_SUB, a chat room", async () => {
    const { token } = await issue(alice, "py-phone");
    const room = randomUUID();
    const tokenFile = path.join(dir, "py.token");
    writeFileSync(tokenFile, token, { mode: 0o600 });
    const out = await new Promise<string>((resolve, reject) => execFile(PYTHON, [
      path.join(ROOT, "test", "interop", "gateway_client.py"), "--url", url, "--token-file", tokenFile, "--device", "py-phone", "--group", group,
      "--proto-root", path.join(ROOT, "proto"), "--ca", pki.ca.certPath, "--watch", bob, "--room", room,
    ], { timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))));
    const r = JSON.parse(out);
    assert.equal(r.subprotocol, "qim.client.v1");
    assert.deepEqual([r.auth.case, r.auth.user, r.auth.device], ["auth_ok", alice, "py-phone"]);
    assert.equal(r.ping, "pong");
    // a fresh group made with its members: no control message, so the first message is seq 1
    assert.deepEqual([r.send.case, r.send.seq, r.send.duplicate], ["send_ack", 1, false]);
    assert.deepEqual([r.retry.case, r.retry.seq, r.retry.message_id, r.retry.duplicate], ["send_ack", 1, r.send.message_id, true]);
    assert.deepEqual([r.conflict.case, r.conflict.code], ["error", "IDEMPOTENCY_CONFLICT"]);
    assert.deepEqual(r.history.messages, [{ seq: 1, sender: alice, text: "hello from python", kind: "normal" }]);
    assert.deepEqual([r.unknown.case, r.unknown.code], ["error", "UNKNOWN_FRAME"]);
    // its own message pushed to it once (the retry committed nothing new: no second push)
    assert.deepEqual(r.pushes, [{ seq: 1, message_id: r.send.message_id, sender: alice, text: "hello from python" }]);
    // the admin API sees the one message
    assert.deepEqual((await historyOf(alice)).map((m) => m.conversationSeq), [1]);
    // bob has no connection: offline; one subscription held
    assert.deepEqual([r.presence.case, r.presence.states, r.presence.subscriptions], ["presence_sub_ack", [{ user: bob, online: false }], 1]);
    // a fresh room: nothing written yet (latest = epoch << 48), its first message is counter 1 of the join's epoch, pushed back once
    const epoch = BigInt(r.room.epoch);
    assert.deepEqual([r.room.join, r.room.send, r.room.latest, r.room.room_seq], ["room_batch", "room_send_ack", String(epoch << 48n), String((epoch << 48n) | 1n)]);
    assert.deepEqual(r.room.pushed, [{ room, room_seq: r.room.room_seq, sender: alice, text: "hello room from python" }]);
  });

  it("refused at the upgrade: no token, a forged token, a revoked token (HTTP 401, no connection)", async () => {
    const none = await Device.open(url, ca, null);
    assert.ok(!(none instanceof Device) && none.status === 401, JSON.stringify(none));
    const { token, tokenId } = await issue(alice, "tablet");
    const forged = `${token.slice(0, -4)}${token.slice(-4) === "AAAA" ? "BBBB" : "AAAA"}`;
    const bad = await Device.open(url, ca, forged);
    assert.ok(!(bad instanceof Device) && bad.status === 401, JSON.stringify(bad));
    ok(await run(["token", "revoke", "--token-id", tokenId, "--yes"], { context }), "token revoke");
    const revoked = await Device.open(url, ca, token);
    assert.ok(!(revoked instanceof Device) && revoked.status === 401, JSON.stringify(revoked));
    assert.match(revoked.body, /revoked/i);
  });

  it("hostile frames: each gets its code or close code, nothing is written, the node stays healthy", async () => {
    const before = (await historyOf(alice)).length;
    // a request before AUTH
    let d = (await Device.open(url, ca, (await issue(alice, "h1")).token)) as Device;
    const early = await d.request({ $case: "send", send: { clientMsgNo: "x", group, payload: Buffer.from("no"), contentType: "text", mentions: [] } });
    assert.equal(early.body?.$case === "error" && early.body.error.code, "UNAUTHENTICATED");
    assert.equal((await d.whenClosed()).code, 4401);
    // AUTH naming another device than the token's
    d = (await Device.open(url, ca, (await issue(alice, "h2")).token)) as Device;
    const wrong = await d.request({ $case: "auth", auth: { deviceId: "someone-else", clientVersion: "" } });
    assert.equal(wrong.body?.$case === "error" && wrong.body.error.field, "device_id");
    assert.equal((await d.whenClosed()).code, 4403);
    // a text frame, bytes that are not a Frame, a frame over the limit
    d = await device(alice, "h3");
    d.sendRaw("hello", false);
    assert.equal((await d.whenClosed()).code, 1003);
    d = await device(alice, "h4");
    d.sendRaw(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff]));
    assert.equal((await d.whenClosed()).code, 1007);
    d = await device(alice, "h5");
    d.sendRaw(Buffer.alloc(GATEWAY_MAX_FRAME_BYTES + 1));
    assert.equal((await d.whenClosed()).code, 1009);
    // a frame only the node sends, and a request without a request_id
    d = await device(alice, "h6");
    const down = await d.request({ $case: "pong", pong: { serverTimeMs: 0n } });
    assert.equal(down.body?.$case === "error" && down.body.error.code, "UNKNOWN_FRAME");
    d.sendRaw(Buffer.from(Frame.encode({ requestId: 0n, body: { $case: "ping", ping: {} } }).finish()));
    const noId = await d.next((f) => f.body?.$case === "error" && f.body.error.field === "request_id");
    assert.equal(noId.requestId, 0n);
    // a send to a group the user is not in
    const c = await device(carol, "c1");
    const denied = await c.request({ $case: "send", send: { clientMsgNo: "c-1", group, payload: Buffer.from("let me in"), contentType: "text", mentions: [] } });
    assert.equal(denied.body?.$case === "error" && denied.body.error.code, "PERMISSION_DENIED");
    // alice herself, with a token of another tenant: the group (of this tenant) is not hers there —
    // no send, no history, no leave, nothing written
    const otherTenant = randomUUID();
    const foreign = ok(await run(["token", "issue", "--user", alice, "--device", "elsewhere", "--ttl", "1h", "--tenant", otherTenant], { context }), "token issue for another tenant") as { token: string };
    const x = await Device.open(url, ca, foreign.token);
    assert.ok(x instanceof Device, show(x));
    const xa = await x.request({ $case: "auth", auth: { deviceId: "elsewhere", clientVersion: "test" } });
    assert.equal(xa.body?.$case === "authOk" && xa.body.authOk.tenant, otherTenant);
    const crossing: Body[] = [
      { $case: "send", send: { clientMsgNo: "x-1", group, payload: Buffer.from("across tenants"), contentType: "text", mentions: [] } },
      { $case: "pullHistory", pullHistory: { group, afterSeq: 0n, limit: 10 } },
      { $case: "leaveGroup", leaveGroup: { group } },
    ];
    for (const body of crossing) {
      const r = await x.request(body);
      assert.ok(r.body?.$case === "error" && ["PERMISSION_DENIED", "NOT_FOUND"].includes(r.body.error.code), `${body.$case}: ${show(r.body)}`);
    }
    x.ws.close();
    // nothing was written, and a new connection is served
    assert.equal((await historyOf(alice)).length, before);
    const pong = await d.request({ $case: "ping", ping: {} });
    assert.equal(pong.body?.$case, "pong");
    for (const x of [c, d]) x.ws.close();
  });

  it("RECALL and EDIT (spec 003 §2.3): the author's own, acked once the event is in the log; the other member's device gets the events as MESSAGEs naming their target; history shows the states; another's message is refused", async () => {
    const [dan, eve] = [randomUUID(), randomUUID()];
    const g = ok(await run(["group", "create", "--owner", dan, "--member", eve], { context }), "group create").group as string;
    const danPhone = await device(dan, "d-anchor");
    const evePhone = await device(eve, "e-anchor");
    const send = async (no: string, text: string) => {
      const r = await danPhone.request({ $case: "send", send: { clientMsgNo: no, group: g, payload: Buffer.from(text), contentType: "text", mentions: [] } });
      assert.equal(r.body?.$case, "sendAck", show(r.body));
      return r.body?.$case === "sendAck" ? Number(r.body.sendAck.conversationSeq) : -1;
    };
    const [s1, s2] = [await send("r-1", "oops"), await send("r-2", "typo")];
    assert.deepEqual([s1, s2], [1, 2]);
    const recalled = await danPhone.request({ $case: "recall", recall: { group: g, conversationSeq: 1n } });
    assert.equal(recalled.body?.$case, "anchorAck", show(recalled.body));
    const ack = recalled.body?.$case === "anchorAck" ? recalled.body.anchorAck : null;
    assert.deepEqual([ack?.targetSeq, ack?.eventSeq, ack?.duplicate], [1n, 3n, false]);
    // eve's device gets the event: a CONTROL MESSAGE naming seq 1
    const pushed = await evePhone.next((f) => f.body?.$case === "message" && f.body.message.conversationSeq === 3n);
    const m = pushed.body?.$case === "message" ? pushed.body.message : null;
    assert.deepEqual([m?.kind, m?.contentType, m?.targetSeq, m?.targetMessageId !== ""], ["control", "qim.recall.v1", 1n, true]);
    const edited = await danPhone.request({ $case: "edit", edit: { clientMsgNo: "e-1", group: g, conversationSeq: 2n, payload: Buffer.from("typo fixed") } });
    assert.equal(edited.body?.$case, "anchorAck", show(edited.body));
    const again = await danPhone.request({ $case: "edit", edit: { clientMsgNo: "e-1", group: g, conversationSeq: 2n, payload: Buffer.from("typo fixed") } });
    assert.deepEqual(again.body?.$case === "anchorAck" ? [again.body.anchorAck.eventSeq, again.body.anchorAck.duplicate] : again.body, [4n, true], "a retried EDIT answers the first event");
    const editPush = await evePhone.next((f) => f.body?.$case === "message" && f.body.message.conversationSeq === 4n);
    assert.equal(editPush.body?.$case === "message" ? Buffer.from(editPush.body.message.payload).toString() : "", "typo fixed");
    // eve may not recall dan's message; nothing is written
    const refused = await evePhone.request({ $case: "recall", recall: { group: g, conversationSeq: 2n } });
    assert.equal(refused.body?.$case === "error" ? refused.body.error.code : show(refused.body), "PERMISSION_DENIED");
    const page = await evePhone.request({ $case: "pullHistory", pullHistory: { group: g, afterSeq: 0n, limit: 10 } });
    const msgs = page.body?.$case === "historyBatch" ? page.body.historyBatch.messages : [];
    assert.deepEqual(msgs.map((x) => [Number(x.conversationSeq), x.state, Number(x.targetSeq), Buffer.from(x.payload).toString()]), [
      [1, "recalled", 0, ""], [2, "edited", 0, "typo fixed"], [3, "", 1, ""], [4, "", 2, "typo fixed"],
    ]);
    for (const x of [danPhone, evePhone]) x.ws.close();
  });

  it("LEAVE_GROUP: the user's own leave is the next seq, a CONTROL event; the leaver's history stops before it", async () => {
    const alicePhone = await device(alice, "a-leave");
    const sent = await alicePhone.request({ $case: "send", send: { clientMsgNo: "before-leave", group, payload: Buffer.from("bye bob?"), contentType: "text", mentions: [] } });
    assert.equal(sent.body?.$case, "sendAck");
    const seqBefore = sent.body?.$case === "sendAck" ? Number(sent.body.sendAck.conversationSeq) : -1;
    const b = await device(bob, "b-phone");
    const left = await b.request({ $case: "leaveGroup", leaveGroup: { group } });
    assert.equal(left.body?.$case, "memberListBatch", show(left.body));
    const eventSeq = left.body?.$case === "memberListBatch" ? Number(left.body.memberListBatch.eventSeq) : -1;
    assert.equal(eventSeq, seqBefore + 1);
    const history = await historyOf(alice);
    assert.deepEqual(history.at(-1), { ...history.at(-1)!, conversationSeq: eventSeq, kind: "control" });
    // bob may not send any more
    const after = await b.request({ $case: "send", send: { clientMsgNo: "after-leave", group, payload: Buffer.from("?"), contentType: "text", mentions: [] } });
    assert.equal(after.body?.$case, "error");
    for (const x of [alicePhone, b]) x.ws.close();
  });

  it("qimctl client: two users' reference clients; a send arrives, a read, a reaction and a leave are answered, a bad command is survived, a refused token exits 6", async () => {
    const [dan, eve] = [randomUUID(), randomUUID()];
    const g = ok(await run(["group", "create", "--owner", dan, "--member", eve], { context }), "group create").group as string;
    const d = client(dan, "cli-1");
    const e = client(eve, "cli-1");
    await d.wait("dan's AUTH_OK", (l) => l.frame === "authOk");
    await e.wait("eve's AUTH_OK", (l) => l.frame === "authOk");
    d.type(`send ${g} hello from the reference client`);
    // a fresh group: seq 1
    const ack = await d.wait("dan's SEND_ACK", (l) => l.frame === "sendAck");
    assert.equal(ack.body.conversationSeq, 1);
    const pushed = await e.wait("eve's MESSAGE", (l) => l.frame === "message");
    assert.deepEqual([pushed.requestId, pushed.body.messageId, pushed.body.payload, pushed.body.sender], [0, ack.body.messageId, "hello from the reference client", dan]);
    e.type(`read ${g} 1`);
    assert.equal((await e.wait("eve's MARK_READ_ACK", (l) => l.frame === "markReadAck")).body.readSeq, 1);
    // eve reacts to seq 1; dan's client prints the REACTION_UPDATE with the counts
    e.type(`react ${g} 1 👍`);
    const reacted = await e.wait("eve's REACT_ACK", (l) => l.frame === "reactAck");
    assert.deepEqual([reacted.body.changed, reacted.body.reactions], [true, { summaryVersion: 1, counts: [{ key: "👍", count: 1 }] }]);
    const update = await d.wait("dan's REACTION_UPDATE", (l) => l.frame === "reactionUpdate");
    assert.deepEqual([update.body.conversationSeq, update.body.reactions], [1, { summaryVersion: 1, counts: [{ key: "👍", count: 1 }] }]);
    // dan types; eve's client prints it
    d.type(`typing ${g} on`);
    const typingUpdate = await e.wait("eve's TYPING_UPDATE", (l) => l.frame === "typingUpdate");
    assert.deepEqual([typingUpdate.body.user, typingUpdate.body.typing], [dan, true]);
    // dan calls eve: her client prints the INVITE (RtcKind 1) with its call id; she answers; dan's prints the ACCEPT (2)
    d.type(`call ${g} ${eve} sfu=relay-1`);
    const rang = await d.wait("dan's RTC_SIGNAL_ACK", (l) => l.frame === "rtcSignalAck");
    assert.equal(rang.body.outcome, "ringing");
    const invite = await e.wait("eve's INVITE", (l) => l.frame === "rtcSignalPush");
    assert.deepEqual([invite.body.kind, invite.body.callId, invite.body.fromUser, invite.body.signalPayload], [1, rang.body.callId, dan, "sfu=relay-1"]);
    e.type(`answer ${g} ${dan} ${rang.body.callId}`);
    const accepted = await d.wait("dan's ACCEPT", (l) => l.frame === "rtcSignalPush");
    assert.deepEqual([accepted.body.kind, accepted.body.callId], [2, rang.body.callId]);
    e.type(`hangup ${g} ${dan} ${rang.body.callId}`);
    await d.wait("dan's END", (l) => l.frame === "rtcSignalPush" && l.body.kind === 5);
    // a chat room: both join, dan says something, eve's client prints the pushed ROOM_BATCH; she parts
    const room = randomUUID();
    d.type(`join ${room}`);
    e.type(`join ${room}`);
    await d.wait("dan's ROOM_JOIN answer", (l) => l.frame === "roomBatch" && l.requestId !== 0);
    await e.wait("eve's ROOM_JOIN answer", (l) => l.frame === "roomBatch" && l.requestId !== 0);
    d.type(`say ${room} hi room`);
    const said = await d.wait("dan's ROOM_SEND_ACK", (l) => l.frame === "roomSendAck");
    const batch = await e.wait("eve's ROOM_BATCH push", (l) => l.frame === "roomBatch" && l.requestId === 0);
    const ev = (batch.body.windows as { room: string; events: { roomSeq: unknown; payload: unknown; sender: string }[] }[])[0]!;
    // a fresh room's first counter is 1 (the client prints a room_seq as a number below 2^53, from epoch 32 on as a decimal string)
    assert.deepEqual([ev.room, ev.events.map((x) => [x.roomSeq, x.payload, x.sender])], [room, [[said.body.roomSeq, "hi room", dan]]]);
    assert.equal(BigInt(said.body.roomSeq as string | number) & ((1n << 48n) - 1n), 1n);
    e.type(`part ${room}`);
    assert.equal((await e.wait("eve's ROOM_LEAVE_ACK", (l) => l.frame === "roomLeaveAck")).body.left, true);
    // presence: eve watches dan (online: his client is connected); then stops
    e.type(`watch ${g} ${dan}`);
    const watched = await e.wait("eve's PRESENCE_SUB_ACK", (l) => l.frame === "presenceSubAck");
    assert.deepEqual([watched.body.states, watched.body.subscriptions], [[{ user: dan, online: true }], 1]);
    e.type(`unwatch ${g}`);
    assert.equal((await e.wait("eve's unwatch answer", (l) => l.frame === "presenceSubAck" && l.body.removed === 1)).body.subscriptions, 0);
    e.type("frobnicate now");
    e.type("ping");
    await e.wait("eve's PONG after a bad command", (l) => l.frame === "pong");
    assert.match(e.stderr(), /unknown command "frobnicate"/);
    e.type(`leave ${g}`);
    // her leave is the next seq
    assert.equal((await e.wait("eve's leave answer", (l) => l.frame === "memberListBatch")).body.eventSeq, 2);
    e.type("quit");
    d.end();
    assert.deepEqual([await e.exited, await d.exited], [0, 0]);
    // table mode: what another user wrote reaches the operator's terminal with no control or bidi character in force
    const shown = await new Promise<string>((resolve) => {
      const c = spawn(process.execPath, [QIMCTL, "client", "--as", dan, "--device", "cli-2", "--url", url, "--send", `${g}:evil\u202etext`, "--send", `${g}:esc\u001b[2J`, "--exit-after", "5"], { cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: context }, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      c.stdout!.on("data", (x: Buffer) => (out += x.toString()));
      c.once("exit", () => resolve(out));
    });
    // a bidi override in text is shown escaped; a payload with an escape sequence as base64
    assert.match(shown, /message .*payload="evil\S+text"/, shown);
    assert.ok(shown.includes(`payload={"base64":"${Buffer.from("esc\u001b[2J").toString("base64")}"}`), shown);
    assert.ok(!shown.includes("\u202e") && !shown.includes("\u001b"), JSON.stringify(shown));
    // a token the node refuses at the upgrade
    const bad = path.join(dir, "bad.token");
    writeFileSync(bad, "not.a.token");
    const refused = await new Promise<number | null>((resolve) => {
      const c = spawn(process.execPath, [QIMCTL, "client", "--as", dan, "--device", "x", "--url", url, "--token-file", bad], { cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: context }, stdio: ["ignore", "ignore", "pipe"] });
      c.once("exit", resolve);
    });
    assert.equal(refused, 6);
  });

  it("C-6: a custom type the reference client does not render shows its preview, and after the registry drops the type the generic placeholder; the batch is whole, the cursor advances, no disconnect", async () => {
    const [dan, eve] = [randomUUID(), randomUUID()];
    const g = ok(await run(["group", "create", "--owner", dan, "--member", eve], { context }), "group create").group as string;
    const types = path.join(dir, "c6-types.yaml");
    writeFileSync(types, "- custom_type: acme.poll.v1\n  preview_template: \"[poll]\"\n");
    ok(await run(["registry", "apply", "-f", types], { context }), "registry apply");
    const e = client(eve, "c6");
    await e.wait("eve's AUTH_OK", (l) => l.frame === "authOk");
    const danPhone = await device(dan, "c6-dan");
    const poll = await danPhone.request({ $case: "send", send: { clientMsgNo: "p-1", group: g, payload: Buffer.from([0, 1, 2, 250]), contentType: "acme.poll.v1", mentions: [] } });
    assert.equal(poll.body?.$case, "sendAck", show(poll.body));
    await danPhone.request({ $case: "send", send: { clientMsgNo: "t-1", group: g, payload: Buffer.from("after the poll"), contentType: "text", mentions: [] } });
    const pushed = await e.wait("the poll pushed", (l) => l.frame === "message" && l.body.conversationSeq === 1);
    assert.deepEqual([pushed.body.contentType, pushed.body.preview, pushed.body.shown], ["acme.poll.v1", "[poll]", "[poll]"]);
    // the type leaves the registry: the node that applied it uses the change at once
    ok(await run(["registry", "delete", "--type", "acme.poll.v1", "--yes"], { context }), "registry delete");
    e.type(`history ${g}`);
    const batch = await e.wait("eve's HISTORY_BATCH", (l) => l.frame === "historyBatch");
    const msgs = batch.body.messages as { conversationSeq: number; contentType: string; preview: string; shown: string }[];
    assert.deepEqual(msgs.map((m) => [m.conversationSeq, m.contentType, m.preview, m.shown]), [
      [1, "acme.poll.v1", "[unsupported message]", "[unsupported message]"], [2, "text", "", "after the poll"],
    ], "the whole batch, the unknown type as its placeholder");
    e.type(`read ${g} 2`);
    assert.equal((await e.wait("eve's MARK_READ_ACK", (l) => l.frame === "markReadAck")).body.readSeq, 2, "the cursor moves past it");
    e.type("quit");
    assert.equal(await e.exited, 0, `no disconnect: ${e.stderr()}`);
    assert.doesNotMatch(e.stderr(), /closed by the node|error/);
    danPhone.ws.close();
  });

  it("an ephemeral type (spec 003 §2.1): pushed to the members online now, acked with seq 0, stored nowhere; a non-member is refused", async () => {
    const [dan, eve, fay] = [randomUUID(), randomUUID(), randomUUID()];
    const g = ok(await run(["group", "create", "--owner", dan, "--member", eve], { context }), "group create").group as string;
    const types = path.join(dir, "eph-types.json");
    writeFileSync(types, JSON.stringify([{ custom_type: "acme.typing.v1", delivery_class: "ephemeral", counts_unread: false, affects_session_order: false, anchor_mode: "none", preview_template: "[typing]" }]));
    ok(await run(["registry", "apply", "-f", types], { context }), "registry apply");
    const danPhone = await device(dan, "eph-dan");
    const evePhone = await device(eve, "eph-eve");
    const typing = await danPhone.request({ $case: "send", send: { clientMsgNo: "ty-1", group: g, payload: Buffer.from("typing"), contentType: "acme.typing.v1", mentions: [] } });
    assert.deepEqual(typing.body?.$case === "sendAck" ? [typing.body.sendAck.conversationSeq, typing.body.sendAck.duplicate] : show(typing.body), [0n, false]);
    const got = await evePhone.next((f) => f.body?.$case === "message" && f.body.message.contentType === "acme.typing.v1");
    const m = got.body?.$case === "message" ? got.body.message : null;
    assert.deepEqual([m?.conversationSeq, m?.sender, m?.preview, Buffer.from(m?.payload ?? []).toString()], [0n, dan, "[typing]", "typing"]);
    // nothing stored: the next message takes seq 1, history holds it alone
    const text = await danPhone.request({ $case: "send", send: { clientMsgNo: "tx-1", group: g, payload: Buffer.from("hi"), contentType: "text", mentions: [] } });
    assert.equal(text.body?.$case === "sendAck" ? text.body.sendAck.conversationSeq : -1n, 1n);
    const h = ok(await run(["history", "--group", g, "--as", eve], { context }), "history").records as { conversationSeq: number; contentType: string }[];
    assert.deepEqual(h.map((r) => [r.conversationSeq, r.contentType]), [[1, "text"]]);
    // a non-member may not send one
    const fayPhone = await device(fay, "eph-fay");
    const refused = await fayPhone.request({ $case: "send", send: { clientMsgNo: "ty-2", group: g, payload: Buffer.from("x"), contentType: "acme.typing.v1", mentions: [] } });
    assert.equal(refused.body?.$case === "error" ? refused.body.error.code : show(refused.body), "PERMISSION_DENIED");
    for (const x of [danPhone, evePhone, fayPhone]) x.ws.close();
  });

  it("REACT (spec 003 §4): idempotent, acked with the absolute counts; online members get REACTION_UPDATE at once and then at most one per 2 s with the latest counts; an offline member reads them with history; a recall deletes them; per_user_reaction_rate; a bad key", async () => {
    const [dan, eve, fay] = [randomUUID(), randomUUID(), randomUUID()];
    const g = ok(await run(["group", "create", "--owner", dan, "--member", eve, "--member", fay], { context }), "group create").group as string;
    const danPhone = await device(dan, "rx-dan");
    const evePhone = await device(eve, "rx-eve");
    const sent = await danPhone.request({ $case: "send", send: { clientMsgNo: "rx-1", group: g, payload: Buffer.from("vote"), contentType: "text", mentions: [] } });
    assert.equal(sent.body?.$case === "sendAck" ? sent.body.sendAck.conversationSeq : -1n, 1n);
    const react = (d: Device, key: string, remove = false) => d.request({ $case: "react", react: { group: g, conversationSeq: 1n, reactionKey: key, remove } });
    const countsOf = (r: { summaryVersion: bigint; counts: { key: string; count: bigint }[] } | undefined) => r ? [Number(r.summaryVersion), r.counts.map((c) => `${c.key}=${c.count}`)] : null;
    const ackOf = (f: Frame) => (f.body?.$case === "reactAck" ? [f.body.reactAck.changed, countsOf(f.body.reactAck.reactions)] : show(f.body));

    // eve's first reaction: version 1; dan's device gets it at once
    assert.deepEqual(ackOf(await react(evePhone, "👍")), [true, [1, ["👍=1"]]]);
    assert.deepEqual(ackOf(await react(evePhone, "👍")), [false, [1, ["👍=1"]]], "a repeated add changes nothing");
    assert.deepEqual(ackOf(await react(evePhone, "nope", true)), [false, [1, ["👍=1"]]], "a remove of nothing changes nothing");
    // two more within the window: held, then merged into one frame with the latest counts (version 3)
    assert.deepEqual(ackOf(await react(danPhone, "👍")), [true, [2, ["👍=2"]]]);
    assert.deepEqual(ackOf(await react(evePhone, "party")), [true, [3, ["👍=2", "party=1"]]]);
    // a support action as fay (offline), through qimctl: version 4, pushed after the window too
    const cli = ok(await run(["message", "react", "--group", g, "--seq", "1", "--user", fay, "--reaction", "party", "--reason", "ticket 7"], { context }), "message react");
    assert.deepEqual([cli.changed, cli.summary.summaryVersion, cli.summary.counts], [true, 4, [{ key: "👍", count: 2 }, { key: "party", count: 2 }]]);
    await new Promise((r) => setTimeout(r, 2600));
    const updates = (d: Device) => d.pushes("reactionUpdate").map((b) => countsOf(b.reactionUpdate.reactions));
    // each device: the first at once, the three inside the window as one (the last), nothing more
    assert.deepEqual(updates(danPhone), [[1, ["👍=1"]], [4, ["👍=2", "party=2"]]]);
    assert.deepEqual(updates(evePhone), [[1, ["👍=1"]], [4, ["👍=2", "party=2"]]]);
    // no message for a reaction (C-1 below counts every key written)
    assert.equal(evePhone.pushes("message").length, 1, "eve got the one message only: a reaction is no message");

    // fay was offline: her device reads the counts with the message
    const fayPhone = await device(fay, "rx-fay");
    const page = await fayPhone.request({ $case: "pullHistory", pullHistory: { group: g, afterSeq: 0n, limit: 10 } });
    const msgs = page.body?.$case === "historyBatch" ? page.body.historyBatch.messages : [];
    assert.deepEqual(msgs.map((m) => [Number(m.conversationSeq), countsOf(m.reactions)]), [[1, [4, ["👍=2", "party=2"]]]]);
    // who reacted, through qimctl: three detail rows (a 3-member group keeps them), times included
    const who = ok(await run(["message", "reactions", "--group", g, "--seq", "1", "--users"], { context }), "message reactions");
    assert.deepEqual(
      who.reactions.map((r: { user: string; key: string; reactedAtMs: number | null }) => `${r.user === dan ? "dan" : r.user === eve ? "eve" : "fay"} ${r.key} ${r.reactedAtMs !== null}`).sort(),
      ["dan 👍 true", "eve party true", "eve 👍 true", "fay party true"],
    );
    assert.deepEqual([who.summary.detailRows, who.summary.withoutDetail], [4, 0]);

    // a bad key and a stranger: refused, nothing changes
    const bad = await react(evePhone, "two words");
    assert.deepEqual(bad.body?.$case === "error" ? [bad.body.error.code, bad.body.error.field] : show(bad.body), ["INVALID_ARGUMENT", "reaction_key"]);
    const stranger = await device(randomUUID(), "rx-stranger");
    const denied = await react(stranger, "👍");
    assert.equal(denied.body?.$case === "error" ? denied.body.error.code : show(denied.body), "PERMISSION_DENIED");
    // per_user_reaction_rate (5/s, a burst of 10): of 12 at once, at least one is refused RATE_LIMITED; SENDs still go
    const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => react(fayPhone, `k${i}`)));
    const limited = burst.filter((f) => f.body?.$case === "error" && f.body.error.code === "RATE_LIMITED");
    assert.ok(limited.length >= 1 && limited.length <= 2, `refused: ${limited.length}`);
    const stillSends = await fayPhone.request({ $case: "send", send: { clientMsgNo: "rx-f1", group: g, payload: Buffer.from("hi"), contentType: "text", mentions: [] } });
    assert.equal(stillSends.body?.$case, "sendAck", "the message rate is counted apart");

    // dan recalls seq 1: its reactions go with it
    const recalled = await danPhone.request({ $case: "recall", recall: { group: g, conversationSeq: 1n } });
    assert.equal(recalled.body?.$case, "anchorAck", show(recalled.body));
    const gone = ok(await run(["message", "reactions", "--group", g, "--seq", "1", "--users"], { context }), "message reactions");
    assert.deepEqual([gone.summary.summaryVersion, gone.summary.counts, gone.reactions], [0, [], []]);
    const after = await react(evePhone, "🎉");
    assert.equal(after.body?.$case === "error" ? after.body.error.code : show(after.body), "FAILED_PRECONDITION");
    for (const x of [danPhone, evePhone, fayPhone, stranger]) x.ws.close();
  });

  it("TYPING (spec 003 §2.1): to the group's other members online, not to the typer's own devices, never stored; a repeat within the interval is not passed on; a stop follows within the merge window; a stranger is refused", async () => {
    const [dan, eve] = [randomUUID(), randomUUID()];
    const g = ok(await run(["group", "create", "--owner", dan, "--member", eve], { context }), "group create").group as string;
    const danPhone = await device(dan, "ty-phone");
    const danLaptop = await device(dan, "ty-laptop");
    const evePhone = await device(eve, "ty-eve");
    const typing = async (d: Device, on: boolean, group = g) => d.request({ $case: "typing", typing: { group, typing: on } });
    const forwarded = (f: Frame) => (f.body?.$case === "typingAck" ? f.body.typingAck.forwarded : show(f.body));
    assert.equal(forwarded(await typing(danPhone, true)), true);
    const first = await evePhone.next((f) => f.body?.$case === "typingUpdate");
    assert.deepEqual(first.body?.$case === "typingUpdate" ? [first.body.typingUpdate.group, first.body.typingUpdate.user, first.body.typingUpdate.typing] : show(first.body), [g, dan, true]);
    // the same again at once: acked, not passed on
    assert.equal(forwarded(await typing(danPhone, true)), false);
    // stopped: passed on, and it reaches eve when the window that sent "typing" ends
    assert.equal(forwarded(await typing(danPhone, false)), true);
    const stop = await evePhone.next((f) => f.body?.$case === "typingUpdate");
    assert.deepEqual(stop.body?.$case === "typingUpdate" ? [stop.body.typingUpdate.user, stop.body.typingUpdate.typing] : show(stop.body), [dan, false]);
    await new Promise((r) => setTimeout(r, 2500));
    assert.deepEqual([evePhone.pushes("typingUpdate").length, danLaptop.pushes("typingUpdate").length, danPhone.pushes("typingUpdate").length], [0, 0, 0], "nothing more to eve; nothing to dan's own devices");
    // a stranger may not; nothing was stored: the first message takes seq 1
    const stranger = await device(randomUUID(), "ty-stranger");
    const denied = await typing(stranger, true);
    assert.equal(denied.body?.$case === "error" ? denied.body.error.code : show(denied.body), "PERMISSION_DENIED");
    const sent = await danPhone.request({ $case: "send", send: { clientMsgNo: "ty-after", group: g, payload: Buffer.from("hi"), contentType: "text", mentions: [] } });
    assert.equal(sent.body?.$case === "sendAck" ? sent.body.sendAck.conversationSeq : -1n, 1n);
    for (const x of [danPhone, danLaptop, evePhone, stranger]) x.ws.close();
  });

  it("RTC_SIGNAL (spec 003 §5): INVITE rings the callee's device, a third caller gets busy, ACCEPT, SDP and END pass through with their payloads; nothing is stored; an offline callee's device is pushed through the sink (the node's log)", async () => {
    const [dan, eve, fay, gus] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const g = ok(await run(["group", "create", "--owner", dan, "--member", eve, "--member", fay, "--member", gus], { context }), "group create").group as string;
    const danPhone = await device(dan, "rtc-dan");
    const evePhone = await device(eve, "rtc-eve");
    const fayPhone = await device(fay, "rtc-fay");
    const call = randomUUID();
    const sig = (d: Device, target: string, kind: number, callId: string, payload = "") =>
      d.request({ $case: "rtcSignal", rtcSignal: { group: g, targetUser: target, callId, kind, signalPayload: Buffer.from(payload) } });
    const outcome = (f: Frame) => (f.body?.$case === "rtcSignalAck" ? f.body.rtcSignalAck.outcome : show(f.body));
    const pushed = async (d: Device, kind: number) => {
      const f = await d.next((x) => x.body?.$case === "rtcSignalPush" && x.body.rtcSignalPush.kind === kind);
      return f.body?.$case === "rtcSignalPush" ? f.body.rtcSignalPush : null;
    };
    // RtcKind: INVITE 1, ACCEPT 2, END 5, SDP 6
    assert.equal(outcome(await sig(danPhone, eve, 1, call, "turn:relay.example:3478")), "ringing");
    const invite = await pushed(evePhone, 1);
    assert.deepEqual([invite?.fromUser, invite?.fromDevice, invite?.callId, Buffer.from(invite?.signalPayload ?? []).toString()], [dan, "rtc-dan", call, "turn:relay.example:3478"]);
    assert.equal(outcome(await sig(fayPhone, eve, 1, randomUUID())), "busy", "eve's phone is ringing");
    assert.equal(outcome(await sig(evePhone, dan, 2, call)), "delivered");
    assert.equal((await pushed(danPhone, 2))?.callId, call);
    assert.equal(outcome(await sig(danPhone, eve, 6, call, "v=0 o=- 1 1 IN IP4 127.0.0.1")), "delivered");
    assert.equal(Buffer.from((await pushed(evePhone, 6))?.signalPayload ?? []).toString(), "v=0 o=- 1 1 IN IP4 127.0.0.1");
    assert.equal(outcome(await sig(evePhone, dan, 5, call)), "delivered");
    await pushed(danPhone, 5);
    // gus has a device token but no connection: his INVITE is a VoIP push (the dev stack's sink: a log line), no badge
    await issue(gus, "gus-phone");
    const call2 = randomUUID();
    assert.equal(outcome(await sig(danPhone, gus, 1, call2)), "pushed");
    await node.server.waitForLog(new RegExp(`rtc: VoIP push to ${gus}/gus-phone: call ${call2}`));
    assert.equal(outcome(await sig(danPhone, gus, 4, call2)), "offline", "a CANCEL to a callee offline is not pushed");
    // a stranger may not call; nothing stored: the group's first message is seq 1
    const stranger = await device(randomUUID(), "rtc-stranger");
    const denied = await sig(stranger, eve, 1, randomUUID());
    assert.equal(denied.body?.$case === "error" ? denied.body.error.code : show(denied.body), "PERMISSION_DENIED");
    const sent = await danPhone.request({ $case: "send", send: { clientMsgNo: "rtc-after", group: g, payload: Buffer.from("call ended"), contentType: "text", mentions: [] } });
    assert.equal(sent.body?.$case === "sendAck" ? sent.body.sendAck.conversationSeq : -1n, 1n);
    for (const x of [danPhone, evePhone, fayPhone, stranger]) x.ws.close();
  });
});
