/**
 * Issue 13's "kill -9 loses none": three real engine nodes (cmd-node-child.js: an EngineRuntime
 * with cluster options and CMD sync each) on one redis-server take CMD load — group-sourced sends
 * to four static groups and request-scoped sends to random recipients — through their own send
 * path; one is SIGKILLed mid-load, its unflushed pending entries with it (the children flush only
 * at their flush points). The survivors take its slots and rebuild their pending view from the CMD
 * log past each slot's flush point. Then they stop gracefully and one node in this process, owning
 * every slot, runs sync + ack for every user until nothing is left.
 *
 * The checker is the test's own record: every acknowledged send (channel, seq) and the recipients
 * the test chose (a group's members are fixed before the load). Every user must be answered every
 * message sent to it exactly once over its sync/ack rounds: nothing missing, nothing twice, nothing
 * it was not sent. A send whose answer was lost with the killed node is retried on another node
 * with the same client_msg_no, so it is acknowledged exactly once too (the log's idempotency).
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  cmdFlushPointKey, ConversationService, EngineRuntime, KeySpace, newUuid, RedisHashAuthority, RedisStore, SLOT_COUNT, unitLeaseKey, type Uuid,
} from "../../../core/index.js";
import { startRedis } from "../../harness/redis.js";

const LEASE_TTL_MS = 3000;
const HEARTBEAT_MS = 1000;
const CATCHUP_MS = 300;
const FLUSH_POINT_MS = 1500;
const USERS = 120;
const GROUPS = 4;
const GROUP_SIZE = 30;
const SENDS = 500;
const KILL_AFTER = 200;
const CONCURRENCY = 6;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer { id: number; ok: boolean; error?: string; seq?: number; duplicate?: boolean; pending?: number; slots?: number; recovering?: number; rounds?: number }

class NodeProc {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  alive = true;
  stderr = "";
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  private readyResolve!: () => void;
  readonly ready = new Promise<void>((r) => { this.readyResolve = r; });

  constructor(readonly id: string, env: object) {
    this.child = spawn(process.execPath, [fileURLToPath(new URL("./cmd-node-child.js", import.meta.url))], {
      env: { ...process.env, QIM_CMD_CHILD: JSON.stringify(env) }, stdio: ["pipe", "pipe", "pipe"],
    });
    // a request written to a node just SIGKILLed fails with EPIPE: the write's callback rejects
    // that request (the sender retries elsewhere); the stream's own error event must not throw
    this.child.stdin!.on("error", () => {});
    this.child.stderr!.on("data", (d: Buffer) => { this.stderr = (this.stderr + d.toString()).slice(-20_000); });
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      if (line === "ready") return this.readyResolve();
      const a = JSON.parse(line) as Answer;
      this.waiting.get(a.id)?.resolve(a);
      this.waiting.delete(a.id);
    });
    this.exited = new Promise((resolve) => this.child.on("exit", (code, signal) => {
      this.alive = false;
      for (const w of this.waiting.values()) w.reject(new Error(`${this.id} exited`));
      this.waiting.clear();
      resolve({ code, signal });
    }));
  }

  request(op: "send" | "status", req?: object): Promise<Answer> {
    if (!this.alive) return Promise.reject(new Error(`${this.id} is dead`));
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.stdin!.write(`${JSON.stringify({ id, op, req })}\n`, (err) => { if (err) reject(err); });
    });
  }
}

test("kill -9 of an owner under CMD load: after recovery every recipient's sync + ack returns every durable CMD message exactly once", { timeout: 600_000 }, async () => {
  const redis = await startRedis();
  const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  const keyPrefix = `ck${newUuid().slice(0, 8)}`;
  const keys = new KeySpace(keyPrefix);
  const dirs: string[] = [];
  const procs: NodeProc[] = [];
  let checker: EngineRuntime | null = null;
  try {
    const tenant = newUuid();
    const users = Array.from({ length: USERS }, () => newUuid());
    const conversations = new ConversationService(store, { keyPrefix });
    const groups: { group: Uuid; members: Uuid[] }[] = [];
    for (let g = 0; g < GROUPS; g++) {
      const members = users.slice(g * 25, g * 25 + GROUP_SIZE); // overlapping windows: some users in two groups
      groups.push({ group: (await conversations.createGroup({ tenant, owner: members[0]!, members })).group, members });
    }

    const start = (id: string) => {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), `qim-cmd-${id}-`));
      dirs.push(dataDir);
      const p = new NodeProc(id, { topology: { kind: "instances", addrs: [redis.addr] }, keyPrefix, nodeId: id, leaseTtlMs: LEASE_TTL_MS, heartbeatMs: HEARTBEAT_MS, dataDir, catchUpMs: CATCHUP_MS, flushPointMs: FLUSH_POINT_MS });
      procs.push(p);
      return p;
    };
    for (const id of ["n1", "n2", "n3"]) await Promise.race([start(id).ready, sleep(90_000).then(() => { throw new Error(`${id} did not start`); })]);

    const slotOwners = async () => Promise.all(Array.from({ length: SLOT_COUNT }, async (_, s) => {
      const k = unitLeaseKey(keys, "slot", s);
      return (await store.clientForKey(k).hget(k, "owner")) ?? "";
    }));
    const waitOwnedBy = async (ids: string[], what: string) => {
      for (let i = 0; i < 240; i++) {
        const owners = await slotOwners();
        const counts = ids.map((id) => owners.filter((o) => o === id).length);
        if (owners.every((o) => ids.includes(o)) && Math.max(...counts) - Math.min(...counts) <= 1) return;
        await sleep(250);
      }
      assert.fail(`${what}: slots not balanced over ${ids.join(", ")}`);
    };
    await waitOwnedBy(["n1", "n2", "n3"], "start");

    // the load: the test's own record of what it sent to whom
    const expected = new Map<Uuid, Set<string>>(users.map((u) => [u, new Set<string>()]));
    let acked = 0;
    let retried = 0;
    let duplicates = 0;
    let pendingAtKill = -1;
    let killing: Promise<unknown> | null = null;
    const rnd = (n: number) => Math.floor(Math.random() * n);
    const sendOne = async (i: number) => {
      let req: { tenant: Uuid; channelId: string; channelType: number; from: Uuid | null; to: Uuid[] | null; payloadB64: string; clientMsgNo: string };
      let recipients: Uuid[];
      let channelText: string;
      if (i % 2 === 0) {
        const g = groups[(i / 2) % GROUPS]!;
        req = { tenant, channelId: g.group, channelType: 2, from: null, to: null, payloadB64: Buffer.from(`g${i}`).toString("base64"), clientMsgNo: `c-${i}` };
        recipients = g.members;
        channelText = `2|${g.group}____cmd`;
      } else {
        const to = [...new Set(Array.from({ length: 1 + rnd(8) }, () => users[rnd(USERS)]!))];
        const ch = `rs-${rnd(6)}`;
        req = { tenant, channelId: ch, channelType: 1, from: null, to, payloadB64: Buffer.from(`r${i}`).toString("base64"), clientMsgNo: `c-${i}` };
        recipients = to;
        channelText = `1|${ch}____cmd`;
      }
      for (let attempt = 0; ; attempt++) {
        const live = procs.filter((p) => p.alive);
        const p = live[(i + attempt) % live.length]!;
        try {
          const a = await p.request("send", req);
          if (!a.ok) throw new Error(a.error);
          if (a.duplicate) duplicates++;
          for (const u of recipients) {
            const set = expected.get(u)!;
            const id = `${channelText}#${a.seq}`;
            assert.ok(!set.has(id), `seq ${a.seq} of ${channelText} acknowledged twice`);
            set.add(id);
          }
          acked++;
          return;
        } catch (err) {
          if (attempt >= 20) throw err;
          retried++;
          await sleep(100);
        }
      }
    };
    let nextSend = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (nextSend < SENDS) {
        const i = nextSend++;
        await sendOne(i);
        if (acked >= KILL_AFTER && killing === null) {
          const n1 = procs[0]!;
          // killed at a moment it holds unflushed entries (it flushes only at its flush points)
          killing = (async () => {
            for (let tries = 0; tries < 50; tries++) {
              pendingAtKill = (await n1.request("status")).pending ?? -1;
              if (pendingAtKill > 0) break;
              await sleep(20);
            }
            n1.child.kill("SIGKILL");
            return n1.exited;
          })();
        }
      }
    }));
    assert.deepEqual(await procs[0]!.exited, { code: null, signal: "SIGKILL" });
    const [killSecs] = await store.clientFor("{u000}").time();
    const killedAt = Number(killSecs) * 1000;
    assert.ok(pendingAtKill > 0, `n1 held unflushed pending entries when it was killed (${pendingAtKill})`);

    // the survivors take n1's slots, rebuild them past their flush points and move every flush point past the kill
    await waitOwnedBy(["n2", "n3"], "after the kill");
    for (let i = 0; ; i++) {
      const fps = await Promise.all(Array.from({ length: SLOT_COUNT }, async (_, s) => Number((await store.clientFor(`{u${String(s).padStart(3, "0")}}`).get(cmdFlushPointKey(keys, s))) ?? 0)));
      const statuses = await Promise.all(procs.slice(1).map((p) => p.request("status")));
      if (fps.every((f) => f > killedAt) && statuses.every((s) => s.recovering === 0)) break;
      if (i > 480) assert.fail(`flush points not past the kill: ${fps.filter((f) => f <= killedAt).length} slots behind; recovering ${statuses.map((s) => s.recovering).join("/")}`);
      await sleep(250);
    }
    for (const p of procs.slice(1)) {
      p.child.kill("SIGTERM");
      assert.deepEqual(await p.exited, { code: 0, signal: null }, `${p.id} stopped cleanly: ${p.stderr.slice(-2000)}`);
    }

    // one node that owns every slot answers every user's sync + ack until nothing is left
    checker = new EngineRuntime({
      store, keyPrefix, dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 2 }, authority: new RedisHashAuthority(store, keys),
      projection: { background: false }, relayIntervalMs: 0, conversationList: { compactor: { background: false } },
      cluster: { nodeId: "checker", address: "", version: "test", leaseTtlMs: LEASE_TTL_MS, heartbeatIntervalMs: HEARTBEAT_MS },
      cmd: { flushIntervalMs: 0, catchUpIntervalMs: 0 }, log: () => {},
    });
    await checker.start();
    // on this loaded machine a first tick that takes 3 × 256 leases can outlast the trust window: tick until it holds them
    for (let i = 0; checker.cluster!.ownedUnits("slot").length < SLOT_COUNT; i++) {
      if (i > 60) assert.fail(`the checker holds ${checker.cluster!.ownedUnits("slot").length} of ${SLOT_COUNT} slots`);
      await checker.cluster!.tick();
    }
    await checker.cmd.catchUp.round();
    let deliveries = 0;
    const problems: string[] = [];
    for (const u of users) {
      const got = new Map<string, number>();
      for (let round = 0; ; round++) {
        const r = await checker.cmd.syncLocal(tenant, u, 7);
        if (r.messages.length === 0) break;
        for (const m of r.messages) {
          const id = `${m.channel.channelType}|${m.channel.channelId}#${m.messageSeq}`;
          got.set(id, (got.get(id) ?? 0) + 1);
        }
        await checker.cmd.ackLocal(tenant, u, r.messages[r.messages.length - 1]!.messageSeq);
        if (round > 500) assert.fail(`user ${u}: sync does not converge`);
      }
      const want = expected.get(u)!;
      for (const [id, n] of got) {
        deliveries += n;
        if (n > 1) problems.push(`${u}: ${id} returned ${n} times`);
        if (!want.has(id)) problems.push(`${u}: ${id} returned but never sent to it`);
      }
      for (const id of want) if (!got.has(id)) problems.push(`${u}: ${id} missing`);
    }
    const sent = [...expected.values()].reduce((a, s) => a + s.size, 0);
    console.log(`cmd crash: ${acked} sends acknowledged (${retried} retried, ${duplicates} answered as duplicates), n1 killed holding ${pendingAtKill} unflushed pending entries; ${sent} (user, message) pairs sent, ${deliveries} returned by sync, ${problems.length} problems`);
    assert.deepEqual(problems.slice(0, 20), []);
    assert.equal(acked, SENDS);
    assert.equal(deliveries, sent);
  } finally {
    for (const p of procs) if (p.alive) p.child.kill("SIGKILL");
    await checker?.stop();
    await store.close();
    await redis.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});
