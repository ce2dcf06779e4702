/**
 * The client gateway's flood limits (issue 27, "Bad input": floods of sends, read marks, requests
 * and failed upgrades) on a real node started with per_user_msg_rate 5/s (burst 10). Expected
 * values are worked out from the limits and from what the test sent: a fresh bucket holds its
 * burst, so the first 10 sends of a user are acked; nothing refused is in the history (read back
 * through the admin API); the acks are at most the burst plus what the rate refills over the time
 * the test measured between its first send and its last answer.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { GATEWAY_AUTH_FAILURE_BURST, GATEWAY_MARK_READ_BURST, GATEWAY_REQUEST_BURST } from "../../core/index.js";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";
import { ok, run } from "../e2e/qimctl.js";
import { Device, show, startGatewayNode, type GatewayNode } from "./device.js";

const RATE = 5;
const BURST = 10; // PER_USER_MSG_BURST_SECONDS (2) × RATE

describe("the client gateway's flood limits on a real node (per_user_msg_rate 5/s)", { timeout: 180_000 }, () => {
  let node: GatewayNode;
  const alice = randomUUID();
  const bob = randomUUID();
  let group: string;

  const token = async (user: string, device: string): Promise<string> =>
    (ok(await run(["token", "issue", "--user", user, "--device", device, "--ttl", "1h"], { context: node.context }), "token issue") as { token: string }).token;
  const connect = async (user: string, device: string, t?: string): Promise<Device> => {
    const d = await Device.open(node.url, node.ca, t ?? (await token(user, device)));
    assert.ok(d instanceof Device, `connected: ${show(d)}`);
    const a = await d.request({ $case: "auth", auth: { deviceId: device, clientVersion: "test" } });
    assert.equal(a.body?.$case, "authOk", show(a.body));
    return d;
  };
  const send = (d: Device, clientMsgNo: string): Promise<Frame> =>
    d.request({ $case: "send", send: { clientMsgNo, group, payload: Buffer.from(clientMsgNo), contentType: "text/plain", mentions: [] } });
  const history = async (): Promise<string[]> =>
    (ok(await run(["history", "--group", group, "--as", alice, "--limit", "1000"], { context: node.context }), "history").records as { payloadBase64: string }[])
      .map((r) => Buffer.from(r.payloadBase64, "base64").toString());

  before(async () => {
    node = await startGatewayNode("qim-gateway-flood-", ["--gateway-user-msg-rate", String(RATE)]);
    group = ok(await run(["group", "create", "--owner", alice, "--member", bob], { context: node.context }), "group create").group;
  });

  after(async () => {
    await node?.stop();
  });

  it("SENDs past per_user_msg_rate (one user's two devices together) are refused RATE_LIMITED with retry_after_ms and write nothing; another user is not slowed; a refused SEND retried later commits", async () => {
    const [phone, laptop, bobPhone] = [await connect(alice, "phone"), await connect(alice, "laptop"), await connect(bob, "phone")];
    const t0 = Date.now();
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => send(phone, `p${i}`).then((f) => ({ no: `p${i}`, f }))),
      ...Array.from({ length: 20 }, (_, i) => send(laptop, `l${i}`).then((f) => ({ no: `l${i}`, f }))),
    ]);
    const elapsedS = (Date.now() - t0) / 1000;
    const acked = answers.filter((a) => a.f.body?.$case === "sendAck").map((a) => a.no);
    const refused = answers.filter((a) => a.f.body?.$case === "error");
    assert.equal(acked.length + refused.length, 40, "every SEND answered once");
    for (const r of refused) {
      const e = (r.f.body as Extract<Frame["body"], { $case: "error" }>).error;
      assert.equal(e.code, "RATE_LIMITED", show(e));
      assert.ok(e.retryAfterMs > 0 && e.retryAfterMs <= 1000 / RATE, `retry_after_ms ${e.retryAfterMs} is within one token's refill (${1000 / RATE} ms)`);
    }
    assert.ok(acked.length >= BURST, `a fresh bucket's burst is acked: ${acked.length}`);
    assert.ok(acked.length <= BURST + Math.ceil(RATE * elapsedS) + 1, `at most the burst and the refill of ${elapsedS.toFixed(2)} s: ${acked.length}`);
    assert.ok(refused.length >= 1, "some refused");
    // bob's bucket is his own: his burst goes through while alice is limited
    const bobs = await Promise.all(Array.from({ length: 5 }, (_, i) => send(bobPhone, `b${i}`)));
    assert.deepEqual(bobs.map((f) => f.body?.$case), Array(5).fill("sendAck"));
    // nothing refused was written: the history is exactly what was acked
    assert.deepEqual((await history()).sort(), [...acked, ...Array.from({ length: 5 }, (_, i) => `b${i}`)].sort());
    // a refused SEND retried after its retry_after_ms is a first commit (duplicate false)
    const again = refused[0]!;
    await new Promise((r) => setTimeout(r, 1000 / RATE + 50));
    let retried: Frame | undefined;
    for (let i = 0; i < 20 && retried?.body?.$case !== "sendAck"; i++) {
      retried = await send(again.no.startsWith("p") ? phone : laptop, again.no);
      if (retried.body?.$case !== "sendAck") await new Promise((r) => setTimeout(r, 1000 / RATE));
    }
    assert.equal(retried?.body?.$case, "sendAck", show(retried?.body));
    assert.equal((retried!.body as Extract<Frame["body"], { $case: "sendAck" }>).sendAck.duplicate, false);
    assert.ok((await history()).includes(again.no));
    for (const d of [phone, laptop, bobPhone]) d.ws.close();
  });

  it("RECALLs and EDITs take the user's SEND tokens: past the burst they are refused RATE_LIMITED (send_rate) before the engine is asked", async () => {
    const d = await connect(alice, "recaller");
    // a seq that names no message: each answer that is not RATE_LIMITED is the engine's NOT_FOUND (a token was taken)
    const answers = await Promise.all(Array.from({ length: 3 * BURST }, (_, i) => d.request(i % 2 === 0
      ? { $case: "recall", recall: { group, conversationSeq: 999_999n } }
      : { $case: "edit", edit: { clientMsgNo: `e${i}`, group, conversationSeq: 999_999n, payload: Buffer.from("x") } })));
    const codes = answers.map((f) => (f.body?.$case === "error" ? f.body.error.code : f.body?.$case));
    const limited = codes.filter((c) => c === "RATE_LIMITED").length;
    assert.equal(codes.filter((c) => c !== "RATE_LIMITED" && c !== "NOT_FOUND").length, 0, codes.join(","));
    assert.ok(limited >= BURST - 2, `past the burst of ${BURST}: ${limited} of ${3 * BURST} refused`);
    const one = answers.find((f) => f.body?.$case === "error" && f.body.error.code === "RATE_LIMITED")!;
    assert.match((one.body as Extract<Frame["body"], { $case: "error" }>).error.message, /per_user_msg_rate/);
    d.ws.close();
  });

  it(`MARK_READs past the connection's burst (${GATEWAY_MARK_READ_BURST}) are refused RATE_LIMITED; the read seq only grows`, async () => {
    const d = await connect(bob, "tablet");
    const marks = await Promise.all(Array.from({ length: GATEWAY_MARK_READ_BURST + 15 }, (_, i) => d.request({ $case: "markRead", markRead: { group, readSeq: BigInt(i + 1) } })));
    const acks = marks.filter((f) => f.body?.$case === "markReadAck");
    const refused = marks.filter((f) => f.body?.$case === "error" && f.body.error.code === "RATE_LIMITED");
    assert.equal(acks.length + refused.length, marks.length, marks.map((f) => show(f.body)).join("\n"));
    assert.ok(acks.length >= GATEWAY_MARK_READ_BURST && refused.length >= 1, `${acks.length} acked, ${refused.length} refused`);
    // a later mark below it does not move it back: the answer is the highest the acks reached
    const highest = Math.max(...acks.map((f) => Number((f.body as Extract<Frame["body"], { $case: "markReadAck" }>).markReadAck.readSeq)));
    await new Promise((r) => setTimeout(r, 200));
    const low = await d.request({ $case: "markRead", markRead: { group, readSeq: 1n } });
    assert.equal(low.body?.$case === "markReadAck" ? Number(low.body.markReadAck.readSeq) : -1, highest, show(low.body));
    d.ws.close();
  });

  it("a connection that keeps sending past its RATE_LIMITED answers is closed 1008; the node goes on serving others", async () => {
    const d = await connect(bob, "flooder");
    const pings = 600;
    for (let i = 1; i <= pings; i++) d.ws.send(Buffer.from(encodePing(BigInt(i))));
    const closed = await d.whenClosed();
    assert.equal(closed.code, 1008, show(closed));
    const pongs = d.pushes("pong").length;
    const limited = d.pushes("error").filter((e) => e.error.code === "RATE_LIMITED").length;
    assert.ok(pongs <= GATEWAY_REQUEST_BURST + 64, `pongs ${pongs}`);
    assert.ok(limited >= 1 && pongs + limited < pings, `${pongs} pongs, ${limited} refused of ${pings}: closed before the end`);
    const other = await connect(bob, "after-flood");
    assert.equal((await other.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    other.ws.close();
  });

  it(`failed upgrades from one address: after ${GATEWAY_AUTH_FAILURE_BURST} the address is refused 429 with Retry-After before any token is checked, then served again once the bucket refills`, async () => {
    const good = await token(alice, "after-storm");
    const statuses: number[] = [];
    for (let i = 0; i < GATEWAY_AUTH_FAILURE_BURST; i++) {
      const r = await Device.open(node.url, node.ca, `not-a-token-${i}`);
      assert.ok(!(r instanceof Device));
      statuses.push(r.status);
    }
    assert.deepEqual(statuses, Array(GATEWAY_AUTH_FAILURE_BURST).fill(401));
    const blocked = await Device.open(node.url, node.ca, good);
    assert.ok(!(blocked instanceof Device) && blocked.status === 429, show(blocked));
    const body = JSON.parse(blocked.body);
    assert.equal(body.code, "RATE_LIMITED");
    assert.ok(body.retryAfterMs > 0 && body.retryAfterMs <= 1000, show(body));
    await new Promise((r) => setTimeout(r, body.retryAfterMs + 100));
    const d = await connect(alice, "after-storm", good);
    assert.equal((await d.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    d.ws.close();
  });
});

function encodePing(id: bigint): Uint8Array {
  return Frame.encode({ requestId: id, body: { $case: "ping", ping: {} } }).finish();
}
