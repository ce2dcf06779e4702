/**
 * Delivery's at-least-once claim under a pause and a crash (issue 27): two REAL node processes
 * share one Redis and the cluster's units; the node that owns a group's dispatch partition (and so
 * delivers its messages, to its own devices and through node RPC to the other node's) is first
 * paused with SIGSTOP past its lease in the middle of a stream of sends and woken again (the other
 * node has taken the partition: whatever step the paused node was in, its checkpoint write is
 * fenced), then, in a second stream, killed with SIGKILL. The survivor delivers from the checkpoint
 * the other node last wrote. Independent checks over the raw arrivals of a device on the survivor
 * against the SEND_ACKs: every acknowledged message arrived, nothing arrived that was not
 * acknowledged, a repeat is the same message (dedupable), after dropping repeats the seqs arrive in
 * order; and over the partition's delivery checkpoint as read from Redis every 20 ms through the
 * whole stream: it never moves back.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { Redis } from "ioredis";
import { commitBucket, parseUuid } from "../../core/index.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { until } from "../cluster/processes.js";
import { ok, run } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { Device, show } from "./device.js";

/** The server's default dispatch.partitions (docs/config-reference.md). */
const PARTITIONS = 8;
const BEFORE_KILL = 25;
const AFTER_KILL = 95;

describe("delivery survives the SIGSTOP and the SIGKILL of the node that delivers", { timeout: 400_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  const nodes: { id: string; proc?: ServerProcess; url?: string; admin?: AdminClient }[] = [{ id: "node-a" }, { id: "node-b" }];
  let context: string;
  let ca: Buffer;
  let tenant: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-delivery-crash-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    ca = readFileSync(pki.ca.certPath);
    redis = await startRedis();
    const keys = path.join(dir, "token-keys.json");
    ok(await run(["token", "keygen", "--keys", keys]), "token keygen");
    for (const n of nodes) {
      n.proc = await startServerProcess({
        redisAddr: redis.addr, pki, auditLog: path.join(dir, `${n.id}.audit.log`),
        extraArgs: [
          "--node-id", n.id, "--data-dir", path.join(dir, n.id), "--cluster-lease-ttl", "5s", "--cluster-heartbeat-interval", "1s",
          "--node-listen", "127.0.0.1:0", "--node-tls-cert", pki.nodeA.certPath, "--node-tls-key", pki.nodeA.keyPath,
          "--gateway-listen", "127.0.0.1:0", "--tokens-keys", keys, "--gateway-user-msg-rate", "1000000", // streams of sends from one user: the limit has its own test (flood.test.ts)
        ],
      });
      n.url = /client gateway on (wss:\/\/\S+)/.exec(await n.proc.waitForLog(/client gateway on /))![1]!.replace("127.0.0.1", "localhost");
      n.admin = connectAdmin({
        endpoint: n.proc.endpoint, caPem: readFileSync(pki.ca.certPath, "utf8"), certPem: readFileSync(pki.admin.certPath, "utf8"),
        keyPem: readFileSync(pki.admin.keyPath, "utf8"), deadlineMs: 8000,
      });
    }
    tenant = randomUUID();
    // the survivor answers the test's CLI calls
    context = path.join(dir, "context.json");
    writeFileSync(context, JSON.stringify({ endpoint: nodes[1]!.proc!.endpoint, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant }));
    await until("both nodes own partitions", async () => {
      const r = await nodes[1]!.admin!.listNodes({});
      return r.nodes.length === 2 && r.nodes.every((n) => n.alive && (n.owned?.partitions ?? 0) > 0);
    });
  });

  after(async () => {
    for (const n of nodes) {
      n.admin?.close();
      await n.proc?.stop();
    }
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A stream of sends through node B while node A, which delivers the group, is paused or killed; the checks of the file's header. */
  async function stream(fault: "SIGSTOP" | "SIGKILL"): Promise<void> {
    const [alice, bob] = [randomUUID(), randomUUID()];
    // a group whose partition node A owns (the owner is asked, not assumed)
    let group = "";
    for (let i = 0; i < 40 && !group; i++) {
      const g = ok(await run(["group", "create", "--owner", alice, "--member", bob], { context }), "group create").group as string;
      const partition = commitBucket(parseUuid(tenant, "tenant"), parseUuid(g, "group")) % PARTITIONS;
      const owner = await nodes[1]!.admin!.getUnitOwner({ unit: { $case: "partition", partition } });
      if (owner.nodeId === "node-a") group = g;
    }
    assert.ok(group, "a group on node A's partitions");
    const partition = commitBucket(parseUuid(tenant, "tenant"), parseUuid(group, "group")) % PARTITIONS;
    const device = async (user: string, name: string) => {
      const { token } = ok(await run(["token", "issue", "--user", user, "--device", name, "--ttl", "1h"], { context }), "token issue") as { token: string };
      const d = await Device.open(nodes[1]!.url!, ca, token);
      assert.ok(d instanceof Device, show(d));
      assert.equal((await d.request({ $case: "auth", auth: { deviceId: name, clientVersion: "test" } })).body?.$case, "authOk");
      return d;
    };
    // both devices on the survivor: the sender and the watched receiver
    const alicePhone = await device(alice, "phone");
    const bobPhone = await device(bob, "phone");
    // the partition's delivery checkpoint as Redis holds it, every 20 ms through the stream
    const redisClient = new Redis({ host: redis.host, port: redis.port, lazyConnect: true, maxRetriesPerRequest: 1 });
    await redisClient.connect();
    const checkpoints: number[] = [];
    let cpKey: string | null = null;
    const watch = setInterval(() => {
      void (async () => {
        cpKey ??= (await redisClient.keys(`*:delivery:*:${partition}:checkpoint`))[0] ?? null;
        if (!cpKey) return;
        const v = await redisClient.get(cpKey);
        if (v) checkpoints.push(Number(v.split("|")[0]));
      })().catch(() => undefined);
    }, 20);
    const acks = new Map<number, string>();
    let n = 0;
    const sendOne = async () => {
      const i = ++n;
      for (let attempt = 0; ; attempt++) {
        const a = await alicePhone.request({ $case: "send", send: { clientMsgNo: `k-${i}`, group, payload: Buffer.from(`k ${i}`), contentType: "text", mentions: [] } });
        if (a.body?.$case === "sendAck") {
          acks.set(Number(a.body.sendAck.conversationSeq), a.body.sendAck.messageId);
          return;
        }
        // a retry with the same client_msg_no is safe (the first commit's ack comes back)
        assert.ok(attempt < 80 && a.body?.$case === "error" && ["UNAVAILABLE", "STALE_OWNER", "INTERNAL"].includes(a.body.error.code), show(a.body));
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const total = BEFORE_KILL + AFTER_KILL;
    // four lanes of sends, running through the fault: node A is paused or dies while it delivers
    const lanes = Array.from({ length: 4 }, async () => {
      while (n < total) {
        await sendOne();
        // paced, so that the fault lands inside the stream
        await new Promise((r) => setTimeout(r, 40));
      }
    });
    await until("bob has some of them", async () => bobPhone.pushes("message").length >= BEFORE_KILL);
    const a = nodes[0]!.proc!;
    a.signal(fault);
    const sentAtFault = n;
    if (fault === "SIGKILL") await a.exited;
    else {
      // paused past its lease: node B takes the partition; then node A wakes up
      await until("node B owns the partition while node A is paused", async () => (await nodes[1]!.admin!.getUnitOwner({ unit: { $case: "partition", partition } })).nodeId === "node-b");
      a.signal("SIGCONT");
    }
    await Promise.all(lanes);
    assert.equal(acks.size, total);
    const got = () => bobPhone.pushes("message").map((b) => b.message).filter((m) => m.group === group);
    await until("bob's device has every acknowledged message", async () => new Set(got().map((m) => m.messageId)).size >= total);
    clearInterval(watch);
    redisClient.disconnect();
    const arrivals = got();
    const ackIds = new Set(acks.values());
    const firstSeen: number[] = [];
    const idOfSeq = new Map<number, string>();
    for (const m of arrivals) {
      const seq = Number(m.conversationSeq);
      assert.ok(ackIds.has(m.messageId), `an arrival no SEND_ACK named: seq ${seq} ${m.messageId}`);
      assert.equal(acks.get(seq), m.messageId, `seq ${seq} arrived with another message's id`);
      if (idOfSeq.has(seq)) continue;
      idOfSeq.set(seq, m.messageId);
      firstSeen.push(seq);
    }
    assert.deepEqual(firstSeen, [...firstSeen].sort((x, y) => x - y), `order after dedupe: ${firstSeen.join(",")}`);
    assert.deepEqual([...idOfSeq.keys()].sort((x, y) => x - y), [...acks.keys()].sort((x, y) => x - y));
    // the checkpoint never moved back, whoever wrote it
    assert.ok(checkpoints.length > 10, `${checkpoints.length} checkpoint reads`);
    checkpoints.forEach((c, i) => assert.ok(i === 0 || c >= checkpoints[i - 1]!, `the checkpoint moved back from ${checkpoints[i - 1]} to ${c}`));
    if (fault === "SIGKILL") {
      // the survivor delivers the partition now
      await until("node B owns the partition", async () => (await nodes[1]!.admin!.getUnitOwner({ unit: { $case: "partition", partition } })).nodeId === "node-b");
    }
    // and the fault landed inside the stream: some acknowledged messages were delivered after it
    assert.ok(arrivals.length > BEFORE_KILL && new Set(arrivals.slice(BEFORE_KILL).map((m) => m.messageId)).size > 0);
    assert.ok(sentAtFault < total, `the ${fault} came after ${sentAtFault} of ${total} sends`);
    process.stderr.write(`delivery-crash: ${fault} after ${sentAtFault} sends; ${arrivals.length} arrivals for ${total} messages (${arrivals.length - total} repeats); ${checkpoints.length} checkpoint reads, never back\n`);
    for (const d of [alicePhone, bobPhone]) d.ws.close();
  }

  it("SIGSTOP past the lease, then SIGCONT: every acknowledged message reaches the device on the other node once after dedupe and in order; the checkpoint never moves back", async () => {
    await stream("SIGSTOP");
    // node A is back in the cluster before the next stream looks for its partitions
    await until("both nodes own partitions again", async () => {
      const r = await nodes[1]!.admin!.listNodes({});
      return r.nodes.length === 2 && r.nodes.every((x) => x.alive && (x.owned?.partitions ?? 0) > 0);
    });
  });

  it("SIGKILL: every acknowledged message reaches the survivor's device, repeats are the same message, order holds after dedupe; the checkpoint never moves back", async () => {
    await stream("SIGKILL");
  });
});
