/**
 * Issue 26, spec 000's gate: the conversation-set authority and the durable CMD state on a real
 * three-node Cassandra (test/harness/cassandra.ts startCassandraCluster: 127.0.0.1–3), keyspace
 * NetworkTopologyStrategy with 3 copies, LOCAL_QUORUM. Under registration load (groups created and
 * written to: the session projection's registration task writes the authority) and CMD load
 * (commands to users: the pending buffer's flushes write the CMD state), one Cassandra node is
 * killed with SIGKILL, the load goes on, and the node comes back.
 *
 * The checker is independent of the code under test: the expected registrations come from the
 * acknowledged sends (each group's members as the test created them) AND from the dispatch log
 * (each record's recipients), which must agree; the expected CMD rows from the acknowledged
 * commands (the highest message seq each user was sent on each channel). It reads Cassandra with
 * its own client and its own CQL at QUORUM: once while the node is still down (writes went on at
 * quorum) and once at the end. Then the rebuild drill over every user finds no difference.
 *
 * The file's path does not contain "cassandra": scripts/run-tests.mjs starts no shared node for it.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import cassandra from "cassandra-driver";
import {
  EngineRuntime, keyspaceReplication, LOG_START, newUuid, RedisStore, type CassandraOptions, type LogPosition, type Uuid,
} from "../../core/index.js";
import { startCassandraCluster, uniqueKeyspace, type CassandraCluster } from "../harness/cassandra.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

/** Groups per load phase (each: an owner and 3 members, 2 messages) and commands per phase. */
const GROUPS_PER_PHASE = 24;
const MEMBERS_PER_GROUP = 3;
/** Users shared by many groups: their partitions grow across the phases (and across the kill). */
const SHARED_USERS = 4;
const CMD_CHANNELS = 12;
const COMMANDS_PER_PHASE = 60;
/** Writers of the load at once. */
const LOAD_CONCURRENCY = 4;
/** The node killed (0-based): not the seed, not the first contact point. */
const VICTIM = 1;
const PARTITIONS = 4;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

describe("three-node Cassandra: a node killed under registration and CMD load (issue 26)", { timeout: 15 * 60_000 }, () => {
  let cluster: CassandraCluster;
  let redis: RedisServer;
  let store: RedisStore;

  before(async () => {
    cluster = await startCassandraCluster(3);
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  });

  after(async () => {
    await store?.close();
    await redis?.stop();
    await cluster?.stop();
  });

  it("writes go on at LOCAL_QUORUM with one node down; after it returns no registration and no CMD state is lost; the drill finds no difference", async () => {
    const keyspace = uniqueKeyspace("three_node");
    const cass: CassandraOptions = {
      contactPoints: cluster.contactPoints, localDataCenter: cluster.localDataCenter, keyspace, consistency: "LOCAL_QUORUM",
      replication: keyspaceReplication({ replicationClass: "NetworkTopologyStrategy", replicationFactor: 3, dataCenter: cluster.localDataCenter }),
    };
    const lines: string[] = [];
    const rt = new EngineRuntime({
      store, keyPrefix: `t3${newUuid().slice(0, 6)}`, dispatch: { clusterId: "t3", topicId: "dispatch", partitionCount: PARTITIONS },
      cassandra: cass, relayIntervalMs: 50, cmd: { flushIntervalMs: 200 }, log: (l) => lines.push(l),
    });
    await rt.start();

    // the independent checker's own client: its own CQL, QUORUM
    const checker = new cassandra.Client({ ...cluster.clientOptions(), queryOptions: { consistency: cassandra.types.consistencies.quorum, prepare: true } });
    await checker.connect();
    try {
      // the keyspace as the settings asked for it
      const ks = await checker.execute("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", [keyspace]);
      assert.deepEqual(ks.first()!.replication, { class: "org.apache.cassandra.locator.NetworkTopologyStrategy", datacenter1: "3" });

      const tenant = newUuid();
      const shared: Uuid[] = Array.from({ length: SHARED_USERS }, () => newUuid());
      /** From the acknowledged sends: user → the groups it was a member of when a message was acknowledged. */
      const sentSets = new Map<Uuid, Set<Uuid>>();
      /** From the acknowledged commands: `${user}|${channelId}` → the highest message seq. */
      const sentCmd = new Map<string, number>();
      const users = new Set<Uuid>();
      let groupsDone = 0;
      let commandsDone = 0;

      const oneGroup = async (k: number): Promise<void> => {
        const owner = newUuid();
        const members = [shared[k % SHARED_USERS]!, ...Array.from({ length: MEMBERS_PER_GROUP - 1 }, () => newUuid())];
        const { group } = await rt.conversations.createGroup({ tenant, owner, members });
        for (let m = 0; m < 2; m++) await rt.conversations.send({ tenant, group, sender: m === 0 ? owner : members[0]!, text: `g${k} m${m}` });
        for (const u of [owner, ...members]) {
          users.add(u);
          const set = sentSets.get(u) ?? new Set<Uuid>();
          set.add(group);
          sentSets.set(u, set);
        }
        groupsDone++;
      };
      const oneCommand = async (k: number): Promise<void> => {
        const user = k % 3 === 0 ? shared[k % SHARED_USERS]! : newUuid();
        const channelId = `t3c${k % CMD_CHANNELS}____cmd`;
        const r = await rt.cmd.send({ tenant, channelId, channelType: 1, from: null, to: [user], noPersist: false, payload: Buffer.from(`cmd ${k}`) });
        users.add(user);
        const key = `${user}|${r.message.channel.channelId}`;
        sentCmd.set(key, Math.max(sentCmd.get(key) ?? 0, r.message.messageSeq));
        commandsDone++;
      };
      let counter = 0;
      const phase = async (): Promise<void> => {
        const base = counter;
        counter += Math.max(GROUPS_PER_PHASE, COMMANDS_PER_PHASE);
        const work: (() => Promise<void>)[] = [];
        for (let i = 0; i < Math.max(GROUPS_PER_PHASE, COMMANDS_PER_PHASE); i++) {
          if (i < GROUPS_PER_PHASE) work.push(() => oneGroup(base + i));
          if (i < COMMANDS_PER_PHASE) work.push(() => oneCommand(base + i));
        }
        await eachLimited(work, LOAD_CONCURRENCY, (w) => w());
      };
      /** Every background write of the work so far done: the registrations drained, the CMD buffer flushed (retried while Cassandra refuses). */
      const settle = async (): Promise<void> => {
        await rt.relay.drainAll();
        await rt.projection.projector.catchUp();
        for (let attempt = 0; ; attempt++) {
          try {
            await rt.projection.registration.drainAll();
            await rt.cmd.settle();
            return;
          } catch (err) {
            if (attempt >= 30) throw err;
            await sleep(500);
          }
        }
      };

      /** What the dispatch log holds for the tenant: recipient → conversations (an independent second source of the registrations). */
      const fromLog = async (): Promise<Map<Uuid, Set<Uuid>>> => {
        const out = new Map<Uuid, Set<Uuid>>();
        for (let p = 0; p < PARTITIONS; p++) {
          let from: LogPosition = LOG_START;
          for (;;) {
            const page = await rt.dispatchLog.readFrom(p, from, 500);
            if (page.entries.length === 0) break;
            for (const e of page.entries) {
              if (e.record.tenant !== tenant) continue;
              for (const u of e.record.recipients) {
                const set = out.get(u) ?? new Set<Uuid>();
                set.add(e.record.conversation);
                out.set(u, set);
              }
            }
            from = { offset: page.entries.at(-1)!.offset + 1, id: page.entries.at(-1)!.id };
          }
        }
        return out;
      };
      const sorted = (m: Map<Uuid, Set<Uuid>>) => [...m].map(([u, s]) => `${u}:${[...s].sort().join(",")}`).sort();

      /** The checker: every expected row in Cassandra at QUORUM; answers what is missing. */
      const missing = async (): Promise<string[]> => {
        const out: string[] = [];
        for (const [user, groups] of sentSets) {
          const rs = await checker.execute(`SELECT conversation_id FROM ${keyspace}.user_conversation_state WHERE tenant_id = ? AND user_id = ?`, [tenant, user]);
          const have = new Set(rs.rows.map((r) => String(r.conversation_id)));
          for (const g of groups) if (!have.has(g)) out.push(`registration ${user} ${g}`);
          if (have.size !== groups.size) out.push(`user ${user} has ${have.size} registrations, sent ${groups.size}`);
        }
        const byUser = new Map<Uuid, Map<string, number>>();
        for (const [key, seq] of sentCmd) {
          const [user, channelId] = key.split("|") as [Uuid, string];
          const m = byUser.get(user) ?? new Map<string, number>();
          m.set(channelId, seq);
          byUser.set(user, m);
        }
        for (const [user, channels] of byUser) {
          const rs = await checker.execute(`SELECT channel_id, last_msg_seq FROM ${keyspace}.cmd_conversation_state WHERE tenant_id = ? AND user_id = ? AND channel_type = 1`, [tenant, user]);
          const have = new Map(rs.rows.map((r) => [String(r.channel_id), Number(String(r.last_msg_seq))]));
          for (const [channelId, seq] of channels) {
            if (have.get(channelId) !== seq) out.push(`cmd state ${user} ${channelId}: last seq ${have.get(channelId) ?? "missing"}, sent ${seq}`);
          }
        }
        return out;
      };

      // 1. all three up
      await phase();
      await settle();
      assert.deepEqual(await missing(), [], "before the kill");

      // 2. SIGKILL one node in the middle of a phase; the load goes on
      const during = phase();
      while (groupsDone + commandsDone < (GROUPS_PER_PHASE + COMMANDS_PER_PHASE) * 1.5) await sleep(20);
      const victimPid = cluster.nodes[VICTIM]!.pid;
      await cluster.kill(VICTIM);
      assert.equal(cluster.nodes[VICTIM]!.up, false);
      assert.throws(() => process.kill(victimPid, 0), "the killed JVM is gone");
      await during;
      await phase();
      await settle();
      // writes went on at quorum: everything acknowledged so far is there with the node still down
      assert.deepEqual(await missing(), [], "with one node down");

      // 3. the node comes back; more load
      await cluster.restart(VICTIM);
      await phase();
      await settle();

      // the two sources agree, and Cassandra holds both
      assert.deepEqual(sorted(await fromLog()), sorted(sentSets), "the dispatch log's recipients are the members the sends were acknowledged for");
      assert.deepEqual(await missing(), [], "after the node came back");
      assert.equal(sentSets.size > 0 && sentCmd.size > 0, true);

      // the rebuild drill over every user with registrations finds no difference
      const drillUsers = [...sentSets.keys()].map((user) => ({ tenant, user }));
      const report = await rt.projection.drill.run({ users: drillUsers, wipe: "projection", by: "three-node-store.test" });
      assert.equal(report.ok, true, JSON.stringify(report.differences.slice(0, 5)));
      const expectedRegistrations = [...sentSets.values()].reduce((n, s) => n + s.size, 0);
      assert.equal(report.conversationsBefore, expectedRegistrations);
      assert.equal(report.conversationsAfter, expectedRegistrations);
      assert.equal(users.size >= sentSets.size, true);
    } finally {
      await checker.shutdown();
      await rt.stop();
    }
  });
});
