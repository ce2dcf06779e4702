/**
 * redis.ack_replicas (issue 26): an acknowledgement that waits for a replica. A real master and a
 * real replica (replicaof); the replica stopped with SIGSTOP plays the replica that does not
 * confirm in time.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { ConversationService, newUuid, QimError, RedisStore, ReplicaAckError, registry } from "../../core/index.js";
import { Redis } from "ioredis";
import { startRedis, type RedisServer } from "../harness/redis.js";

const ACK_TIMEOUT_MS = 300;

/** Linking takes a reconnect period (1 s) and a full sync; the deadline is for a loaded CI machine, not a bound. */
const LINK_DEADLINE_MS = 30_000;

/**
 * Until the replica confirms a write for WAIT. Its link being up (INFO on both sides) is not
 * enough: right after a full sync the master's WAIT still confirms 0 for about 800 ms here.
 */
async function waitLinked(master: RedisServer): Promise<void> {
  const client = new Redis({ host: master.host, port: master.port, lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    const deadline = Date.now() + LINK_DEADLINE_MS;
    for (let i = 0; Date.now() < deadline; i++) {
      await client.set("store-ack:link-probe", String(i));
      if (await client.wait(1, 100) === 1) return;
    }
    throw new Error(`the replica never confirmed a write within ${LINK_DEADLINE_MS} ms: ${(await master.command(["INFO", "replication"])).replace(/\r?\n/g, " ")}`);
  } finally {
    client.disconnect();
  }
}

async function ackFailures(): Promise<number> {
  const m = registry.getSingleMetric("qim_store_replica_ack_failures_total");
  return m ? (await m.get()).values.reduce((s, v) => s + v.value, 0) : 0;
}

/** WAIT calls the master answered so far (INFO commandstats), independent of the engine's own count. */
async function waitCalls(master: RedisServer): Promise<number> {
  const m = /^cmdstat_wait:calls=(\d+)/m.exec(await master.command(["INFO", "commandstats"]));
  return m ? Number(m[1]) : 0;
}

// one after another: each test stops the one replica with SIGSTOP at some point
describe("redis.ack_replicas: WAIT after the commit script", { timeout: 60_000, concurrency: 1 }, () => {
  let master: RedisServer;
  let replica: RedisServer;
  before(async () => {
    master = await startRedis();
    replica = await startRedis({ extraArgs: ["--replicaof", "127.0.0.1", String(master.port)] });
    await waitLinked(master);
  });
  after(async () => {
    try { process.kill(replica.pid, "SIGCONT"); } catch { /* gone */ }
    await replica?.stop();
    await master?.stop();
  });

  it("ack_replicas 1: a send is acknowledged once the replica has it; a replica that does not answer fails the ack UNAVAILABLE, and the retry with the same id is answered as the same message", async () => {
    const store = new RedisStore({ kind: "instances", addrs: [master.addr], ack: { replicas: 1, timeoutMs: ACK_TIMEOUT_MS } });
    const engine = new ConversationService(store, { keyPrefix: `a${randomUUID().slice(0, 8)}` });
    try {
      const tenant = newUuid();
      const owner = newUuid();
      const waitsBefore = await waitCalls(master);
      const { group } = await engine.createGroup({ tenant, owner });
      const first = await engine.send({ tenant, group, sender: owner, text: "one", clientMessageId: newUuid() });
      assert.equal(await waitCalls(master) - waitsBefore, 2, "one WAIT for the creation, one for the send");
      const k = engine.conversationKeys(tenant, group);
      assert.equal(await replica.command(["GET", k.cseq]), String(first.conversationSeq), "the replica had the send when it was acknowledged");

      const failuresBefore = await ackFailures();
      process.kill(replica.pid, "SIGSTOP");
      const id = newUuid();
      let err: unknown;
      try {
        await engine.send({ tenant, group, sender: owner, text: "two", clientMessageId: id });
      } catch (e) {
        err = e;
      } finally {
        process.kill(replica.pid, "SIGCONT");
      }
      assert.ok(err instanceof ReplicaAckError, `a ReplicaAckError, got ${String(err)}`);
      assert.ok(err instanceof QimError && err.code === "UNAVAILABLE", "answered UNAVAILABLE: the client retries");
      assert.match((err as Error).message, /confirmed by 0 of the 1 replica/);
      assert.equal(await ackFailures() - failuresBefore, 1);
      assert.equal(await master.command(["GET", k.cseq]), String(first.conversationSeq + 1), "the script ran on the master: the write is there, unacknowledged");

      await waitLinked(master);
      const retry = await engine.send({ tenant, group, sender: owner, text: "two", clientMessageId: id });
      assert.equal(retry.duplicate, true);
      assert.equal(retry.conversationSeq, first.conversationSeq + 1, "the retry is the write that was not acknowledged");
      assert.equal(await replica.command(["GET", k.cseq]), String(first.conversationSeq + 1));
    } finally {
      await store.close();
    }
  });

  it("ack_replicas 1: a membership change waits too, and fails UNAVAILABLE when the replica does not answer", async () => {
    const store = new RedisStore({ kind: "instances", addrs: [master.addr], ack: { replicas: 1, timeoutMs: ACK_TIMEOUT_MS } });
    const engine = new ConversationService(store, { keyPrefix: `a${randomUUID().slice(0, 8)}` });
    try {
      const tenant = newUuid();
      const owner = newUuid();
      const { group } = await engine.createGroup({ tenant, owner });
      const waits = await waitCalls(master);
      const joined = await engine.addMembers({ tenant, group, users: [newUuid()] });
      assert.equal(joined.outcome, "committed");
      assert.equal(await waitCalls(master) - waits, 1);
      process.kill(replica.pid, "SIGSTOP");
      try {
        await assert.rejects(engine.addMembers({ tenant, group, users: [newUuid()] }), (e: unknown) => e instanceof ReplicaAckError);
      } finally {
        process.kill(replica.pid, "SIGCONT");
      }
      await waitLinked(master);
    } finally {
      await store.close();
    }
  });

  it("ack_replicas absent or 0: no WAIT, and a silent replica does not hold an acknowledgement", async () => {
    for (const topology of [{ kind: "instances" as const, addrs: [master.addr] }, { kind: "instances" as const, addrs: [master.addr], ack: { replicas: 0, timeoutMs: ACK_TIMEOUT_MS } }]) {
      const store = new RedisStore(topology);
      const engine = new ConversationService(store, { keyPrefix: `a${randomUUID().slice(0, 8)}` });
      try {
        const tenant = newUuid();
        const owner = newUuid();
        const waits = await waitCalls(master);
        const { group } = await engine.createGroup({ tenant, owner });
        process.kill(replica.pid, "SIGSTOP");
        try {
          const sent = await engine.send({ tenant, group, sender: owner, text: "x", clientMessageId: newUuid() });
          assert.equal(sent.conversationSeq, 1);
        } finally {
          process.kill(replica.pid, "SIGCONT");
        }
        assert.equal(await waitCalls(master) - waits, 0, "no WAIT was sent");
        await waitLinked(master);
      } finally {
        await store.close();
      }
    }
  });
});
