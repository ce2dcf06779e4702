/**
 * CMD sync across 3 REAL server processes (bin/qim-admin-server.js, one node each, mTLS, node
 * service with node certificates) on one Redis (issue 13, "3 nodes with a move between owners"):
 * CMD messages are sent through every node while one node is drained (`cluster drain`), so the
 * slots of its users move to the others in the middle of the load; the sends themselves are retried
 * with the same client_msg_no until acknowledged. Afterwards every recipient syncs and acks
 * (CmdService, through any node: routed to the owner of the user's slot) until nothing is left,
 * and the checker — built from the test's own send log, never from the code under test — demands
 * every durable message of every recipient exactly once.
 *
 * Channels have a fixed audience and no sender (system commands), so what each recipient must
 * receive is exactly the messages of its channels.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectAdmin, errorCode, type AdminClient } from "../../admin-api/client.js";
import { newUuid, type Uuid } from "../../core/index.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { sleep } from "./common.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

const LEASE_TTL_MS = 3000;
const HEARTBEAT_MS = 1000;
const USERS = 24;
const CHANNELS = 8;
const AUDIENCE = 5;
/** Messages sent before the drain and after it. */
const BEFORE_DRAIN = 40;
const AFTER_DRAIN = 40;
/** Pause between one worker's sends: 80 sends over 2 workers take about 2 s, a heartbeat is 1 s. */
const SEND_PACE_MS = 50;
/** How long the recipients may keep syncing until everything has arrived (catch-up scans included). */
const CONVERGE_MS = 90_000;

interface Node {
  id: string;
  proc: ServerProcess | null;
  client: AdminClient | null;
}

interface Sent {
  channelId: string;
  seq: number;
  recipients: Uuid[];
}

describe("CMD sync on 3 server processes: sends while a node drains, then every recipient's sync + ack returns every message once", { timeout: 600_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  const tenant = newUuid();
  const nodes: Node[] = ["cmd-n1", "cmd-n2", "cmd-n3"].map((id) => ({ id, proc: null, client: null }));
  const users: Uuid[] = Array.from({ length: USERS }, () => newUuid());
  const channels = Array.from({ length: CHANNELS }, (_, c) => ({
    source: `cmd-move-${c}`,
    // a fixed audience per channel: AUDIENCE users, overlapping between channels
    audience: Array.from({ length: AUDIENCE }, (_, k) => users[(c * 3 + k) % USERS]!),
  }));
  const sent: Sent[] = [];
  let badDir = "";

  const live = () => nodes.filter((n) => n.client !== null);

  /** The sum of a counter's samples on every node whose labels include `labels` (each node's own /metrics). */
  async function counter(name: string, labels: Record<string, string>): Promise<number> {
    let sum = 0;
    for (const n of nodes) {
      const text = await (await fetch(n.proc!.metricsUrl!)).text();
      for (const line of text.split("\n")) {
        if (!line.startsWith(`${name}{`)) continue;
        if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
      }
    }
    return sum;
  }

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-cmd-cluster-"));
    pki = await writeTestPki(dir);
    redis = await startRedis();
    // node 3 finds a pending file that does not decode: it must start, rename it .bad and say so in cluster nodes
    badDir = path.join(dir, nodes[2]!.id, "conversationv2");
    mkdirSync(badDir, { recursive: true });
    writeFileSync(path.join(badDir, "cmd_conversation_updates.json"), "{ this is not a pending file");
    for (const n of nodes) {
      n.proc = await startServerProcess({
        redisAddr: redis.addr, pki, auditLog: path.join(dir, `${n.id}.audit.log`), metricsListen: "127.0.0.1:0",
        extraArgs: [
          "--node-id", n.id, "--data-dir", path.join(dir, n.id),
          "--cluster-lease-ttl", `${LEASE_TTL_MS}ms`, "--cluster-heartbeat-interval", `${HEARTBEAT_MS}ms`,
          // every node shares one node certificate: the node service admits OU node, peers check the SAN localhost
          "--node-listen", "127.0.0.1:0", "--node-tls-cert", pki.nodeA.certPath, "--node-tls-key", pki.nodeA.keyPath,
        ],
      });
      n.client = connectAdmin({
        endpoint: n.proc.endpoint, caPem: readFileSync(pki.ca.certPath, "utf8"), certPem: readFileSync(pki.admin.certPath, "utf8"),
        keyPem: readFileSync(pki.admin.keyPath, "utf8"), deadlineMs: 8000,
      });
    }
  });

  after(async () => {
    for (const n of nodes) {
      n.client?.close();
      await n.proc?.stop();
    }
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Every node alive in the registry and owning slots. */
  async function waitSpread(ids: string[], timeoutMs = 40_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await live()[0]!.client!.listNodes({});
      const owning = new Map(r.nodes.map((n) => [n.nodeId, n.owned?.slots ?? 0]));
      const others = [...owning].filter(([id]) => !ids.includes(id)).reduce((a, [, v]) => a + v, 0);
      if (ids.every((id) => (owning.get(id) ?? 0) > 0) && others === 0 && ids.reduce((a, id) => a + (owning.get(id) ?? 0), 0) === 256) return;
      if (Date.now() > deadline) assert.fail(`slots not spread over ${ids.join(", ")}: ${JSON.stringify([...owning])}`);
      await sleep(250);
    }
  }

  /** Calls `f` on the nodes in turn from `hint`, past transport failures and retryable domain answers (stale owner, a moving slot). */
  async function onSomeNode<T>(hint: number, f: (c: AdminClient) => Promise<T>): Promise<T> {
    let lastErr: unknown;
    for (let attempt = 0; attempt < 60; attempt++) {
      const candidates = live();
      const n = candidates[(hint + attempt) % candidates.length]!;
      try {
        return await f(n.client!);
      } catch (err) {
        const code = errorCode(err);
        if (code !== undefined && code !== "UNAVAILABLE" && code !== "STALE_OWNER") {
          // the servers' own account of a failure, for whoever reads the failed test
          const id = /request ([0-9a-f-]{36})/.exec(String((err as Error).message))?.[1];
          const lines = nodes.flatMap((x) => (x.proc?.log() ?? "").split("\n").filter((l) => id !== undefined && l.includes(id)).map((l) => `${x.id}: ${l}`));
          throw new Error(`${(err as Error).message}\n${lines.join("\n")}`, { cause: err });
        }
        lastErr = err;
        await sleep(200);
      }
    }
    throw lastErr;
  }

  async function send(i: number): Promise<void> {
    const ch = channels[i % CHANNELS]!;
    const clientMsgNo = `move-${i}`;
    const r = await onSomeNode(i, (c) => c.cmdSend({
      tenant, channelId: ch.source, channelType: 2, from: "", to: ch.audience, noPersist: false,
      payload: Buffer.from(`m${i}`), clientMsgNo, redDot: false, syncOnce: false,
    }));
    assert.ok(r.message, "a send answers its message");
    sent.push({ channelId: r.message.channelId, seq: Number(r.message.messageSeq), recipients: [...ch.audience] });
  }

  it("a node whose pending file does not decode starts, renames it .bad, and cluster nodes names it", async () => {
    const bad = path.join(badDir, "cmd_conversation_updates.json.bad");
    assert.ok(existsSync(bad), "the undecodable file was renamed .bad");
    const listed = await nodes[0]!.client!.listNodes({});
    const byId = new Map(listed.nodes.map((n) => [n.nodeId, n.cmdBadFile]));
    assert.deepEqual(nodes.map((n) => byId.get(n.id)), ["", "", path.resolve(bad)]);
  });

  it("moves slots while sending; every recipient then receives each of its messages exactly once", async (t) => {
    await waitSpread(nodes.map((n) => n.id));
    const drained = nodes[1]!;
    // the users whose slot the drained node owns before the drain: their owner must change
    const owners0 = new Map(await Promise.all(users.map(async (u) => [u, (await nodes[0]!.client!.getCmdOwner({ tenant, user: u })).nodeId] as const)));
    const moving = users.filter((u) => owners0.get(u) === drained.id);
    assert.ok(moving.length > 0, `some of the ${USERS} users are owned by ${drained.id} before the drain`);

    // sends before, during and after the drain, from every node (two at a time)
    let next = 0;
    const total = BEFORE_DRAIN + AFTER_DRAIN;
    const worker = async () => {
      while (next < total) {
        const i = next++;
        if (i === BEFORE_DRAIN) {
          const d = await nodes[0]!.client!.drainNode({ nodeId: drained.id });
          assert.equal(d.changed, true);
        }
        await send(i);
        // paced, so that the drain's hand-over (at the drained node's next heartbeat) falls among the sends
        await sleep(SEND_PACE_MS);
      }
    };
    await Promise.all([worker(), worker()]);
    assert.equal(sent.length, total);

    // the drained node owns nothing any more; its users are served elsewhere now
    await waitSpread([nodes[0]!.id, nodes[2]!.id]);
    for (const u of moving) {
      const o = await nodes[2]!.client!.getCmdOwner({ tenant, user: u });
      assert.notEqual(o.nodeId, drained.id, `user ${u} moved off ${drained.id}`);
      assert.ok(o.nodeId !== "", `user ${u} has an owner`);
    }

    // expected per recipient, from the send log: channel → seqs
    const expected = new Map<Uuid, Set<string>>(users.map((u) => [u, new Set<string>()]));
    for (const s of sent) for (const r of s.recipients) expected.get(r)!.add(`${s.channelId}#${s.seq}`);
    // one channel's seqs are 1 … n without gaps (the commit script allocates them)
    for (const ch of channels) {
      const seqs = sent.filter((s) => s.channelId === `${ch.source}____cmd`).map((s) => s.seq).sort((a, b) => a - b);
      assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, k) => k + 1), `${ch.source}: seqs 1 … ${seqs.length}`);
    }

    // every recipient syncs and acks (through any node) until it has everything or time runs out
    const received = new Map<Uuid, string[]>(users.map((u) => [u, []]));
    const deadline = Date.now() + CONVERGE_MS;
    let round = 0;
    for (;;) {
      for (const [k, u] of users.entries()) {
        for (;;) {
          const r = await onSomeNode(k + round, (c) => c.cmdSync({ tenant, user: u, limit: 50, peek: false }));
          if (r.messages.length === 0) break;
          for (const m of r.messages) received.get(u)!.push(`${m.channelId}#${Number(m.messageSeq)}`);
          const last = Math.max(...r.messages.map((m) => Number(m.messageSeq)));
          await onSomeNode(k + round, (c) => c.cmdAck({ tenant, user: u, lastMessageSeq: BigInt(last) }));
        }
      }
      const missing = users.filter((u) => received.get(u)!.length < expected.get(u)!.size || [...expected.get(u)!].some((e) => !received.get(u)!.includes(e)));
      if (missing.length === 0 || Date.now() > deadline) break;
      round++;
      await sleep(1000);
    }

    // the node RPC carried the work: intents pushed to their owners, syncs and acks served by the owner for another node
    assert.ok(await counter("qim_node_rpc_served_total", { rpc: "PushIntents", status: "OK" }) > 0, "intents were pushed to their owners");
    assert.ok(await counter("qim_node_rpc_calls_total", { rpc: "CmdSync", target: "remote", status: "OK" }) > 0, "syncs were routed to the owner");
    assert.ok(await counter("qim_node_rpc_calls_total", { rpc: "CmdAck", target: "remote", status: "OK" }) > 0, "acks were routed to the owner");

    // what the move cost, for the report (not asserted: it depends on timing)
    const routed = async (outcome: string) => counter("qim_cmd_intents_routed_total", { outcome });
    t.diagnostic(`intent groups routed: OK ${await routed("OK")}, STALE_OWNER ${await routed("STALE_OWNER")}, NO_OWNER ${await routed("NO_OWNER")}, FAILED ${await routed("FAILED")}, DROPPED ${await routed("DROPPED")}; sync rounds ${round + 1}`);
    t.diagnostic(`remote PushIntents OK ${await counter("qim_node_rpc_served_total", { rpc: "PushIntents", status: "OK" })}, remote CmdSync ${await counter("qim_node_rpc_calls_total", { rpc: "CmdSync", target: "remote" })}, local CmdSync ${await counter("qim_node_rpc_calls_total", { rpc: "CmdSync", target: "local" })}`);

    for (const u of users) {
      const got = received.get(u)!;
      const dup = got.filter((x, i) => got.indexOf(x) !== i);
      assert.deepEqual(dup, [], `user ${u}: no message twice`);
      assert.deepEqual([...got].sort(), [...expected.get(u)!].sort(), `user ${u}: every message of its channels, nothing else`);
    }
  });
});
