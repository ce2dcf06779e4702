/**
 * 10,000 devices on one real node (issue 27: "one message to a 10,000-member group with 10,000
 * online connections"), sized for CI and run once, alone after the other files: 10,000
 * authenticated TLS connections, a 10,000-member group made of their users, three messages sent
 * through the gateway. Checked from what the devices recorded, against the SEND_ACKs: every device
 * got each of the three exactly once after dedupe by message id, in seq order, and nothing else of
 * the group; the node still answers. It needs about 10,256 open files in this process and in the
 * node (bench/loadgen's assertOpenFiles says which `ulimit -n` to run when the limit is lower).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { assertOpenFiles, LoadDevice, openDevices, startTarget, type Target } from "../../bench/loadgen/index.js";

/** Polls `probe` until it holds; fails after `ms` (the fanout of 30,000 pushes on 2 shared cores takes tens of seconds). */
async function within(what: string, ms: number, probe: () => boolean): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const DEVICES = 10_000;
const MESSAGES = 3;

describe(`${DEVICES.toLocaleString("en")} devices online on one node`, { timeout: 900_000 }, () => {
  let t: Target;
  let devices: LoadDevice[] = [];

  before(async () => {
    assertOpenFiles(DEVICES);
    t = await startTarget();
  });
  after(async () => {
    for (const d of devices) d?.close();
    await t?.stop();
  });

  it(`one group of all of them: ${MESSAGES} messages reach every device exactly once after dedupe, in order`, async () => {
    const users = Array.from({ length: DEVICES }, () => randomUUID());
    devices = await openDevices(DEVICES, 64, async (i) => LoadDevice.open(t.url, t.ca, await t.sign(users[i]!, `d${i}`), users[i]!, `d${i}`));
    assert.equal(devices.length, DEVICES);
    const { group } = await t.admin.createGroup({ tenant: t.tenant, group: "", owner: users[0]!, members: users.slice(1) });
    const acks: { seq: number; messageId: string }[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      const f = await devices[0]!.request({ $case: "send", send: { clientMsgNo: `big-${i}`, group, payload: Buffer.from(`to everyone ${i}`), contentType: "text/plain", mentions: [] } });
      assert.equal(f.body?.$case, "sendAck", JSON.stringify(f.body?.$case === "error" ? f.body.error : f.body?.$case));
      if (f.body?.$case === "sendAck") acks.push({ seq: Number(f.body.sendAck.conversationSeq), messageId: f.body.sendAck.messageId });
    }
    const ids = new Set(acks.map((a) => a.messageId));
    const ofGroup = (d: LoadDevice) => d.arrivals.filter((a) => a.group === group);
    await within("every device has the three messages", 300_000, () => devices.every((d) => new Set(ofGroup(d).filter((a) => ids.has(a.messageId)).map((a) => a.messageId)).size === MESSAGES));
    let repeats = 0;
    for (const d of devices) {
      const seen = new Map<string, number>();
      const order: number[] = [];
      for (const a of ofGroup(d)) {
        assert.ok(ids.has(a.messageId), `${d.device} got ${a.messageId} (seq ${a.seq}), which no SEND_ACK named`);
        if (seen.has(a.messageId)) {
          assert.equal(seen.get(a.messageId), a.seq, `${d.device}: one id at two seqs`);
          repeats++;
          continue;
        }
        seen.set(a.messageId, a.seq);
        order.push(a.seq);
      }
      assert.deepEqual(order, acks.map((a) => a.seq), `${d.device}: the messages after dedupe, in seq order`);
    }
    process.stderr.write(`ten-thousand: ${DEVICES} devices × ${MESSAGES} messages, ${repeats} repeats\n`);
    // the node still serves a request
    assert.equal((await devices[DEVICES - 1]!.request({ $case: "ping", ping: {} })).body?.$case, "pong");
  });
});
