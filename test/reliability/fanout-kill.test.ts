/**
 * Reliability, issue 22: a relay process SIGKILLed in the middle of a fanout job, between a chunk's
 * append and its progress save (fail point relay.fanout-before-progress), then restarted.
 *
 * This process creates a 2,000-member group, sends one message and works the first 5 chunks of
 * its fanout job itself (chunks of at most 100). A child process (relay-projection-child.ts, the
 * relay and the session projection) started with the fail point appends the sixth step's chunk and
 * dies by SIGKILL before saving its progress; a second child without it drains everything. Then, from the log and the
 * member set this test added: every member got the message (the union of the chunks), the only
 * duplicates are the chunk(s) of the killed child's one step (appended again by its successor,
 * identical), and
 * every member's session projection holds the group and its conversation-list row counts the
 * message once (unread 1, head at its seq).
 *
 *   node scripts/run-tests.mjs reliability/fanout-kill
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import {
  commitBucket, ConversationList, ConversationService, fanoutKeys, newUuid, OutboxRelay, RedisHashAuthority, RedisStore,
  RedisStreamsDispatchLog, userKeys, uuidToHex, type DispatchIdentity, type DispatchRecord, type Uuid,
} from "../../core/index.js";
import { FAILPOINTS } from "../../core/support/index.js";
import { checkConversation } from "../core/checker.js";
import { startTopology } from "../harness/redis.js";
import { readWholeLog } from "./common.js";

const CHILD = fileURLToPath(new URL("./relay-projection-child.js", import.meta.url));
const MEMBERS = 2000;
const CHUNK = 100;
/** Fanout steps this process appends and saves before the child takes over. */
const DONE_BEFORE = 5;

function runChild(config: object, env: NodeJS.ProcessEnv): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [CHILD, JSON.stringify(config)], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
  proc.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
  return new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr })));
}

describe("reliability: a relay SIGKILLed between a fanout chunk's append and its progress save", { timeout: 300_000 }, () => {
  it("every member gets the message, the one duplicate is that chunk, and each member's projection and list row hold it once", async () => {
    const topology = await startTopology("single");
    const store = new RedisStore(topology.config);
    const engine = new ConversationService(store, { keyPrefix: `f${randomUUID().slice(0, 8)}` });
    const dispatch: DispatchIdentity = { clusterId: "test", topicId: "dispatch", partitionCount: 4 };
    const log = new RedisStreamsDispatchLog(store, engine.keys, dispatch);
    try {
      await log.ensureIdentity();
      const tenant = newUuid();
      const owner = newUuid();
      const members = Array.from({ length: MEMBERS }, () => newUuid());
      const everyone = [owner, ...members].sort();
      const { group } = await engine.createGroup({ tenant, owner, members });
      const sent = await engine.send({ tenant, group, sender: owner, text: "to everyone" });
      const bucket = commitBucket(tenant, group);

      // this process: the outbox batch (the send becomes a job) and the job's first 5 chunks
      const relay = new OutboxRelay(store, engine.keys, log, { fanoutChunkRecipients: CHUNK, fanoutChunksPerPass: DONE_BEFORE });
      assert.equal(await relay.drainBucket(bucket), 1);
      assert.equal(await relay.fanoutBucket(bucket), DONE_BEFORE);
      const k = engine.conversationKeys(tenant, group);
      const job = `${k.outboxRef}|${sent.conversationSeq}`;
      const state = fanoutKeys(engine.keys, bucket).fanoutState;
      const client = store.clientFor(k.tag);
      // HSCAN's COUNT is a hint: a step may give more than 100 members, split into several chunk records
      const at = async () => Number(String(await client.hget(state, job)).split("|")[2]);
      const saved = await at();
      assert.ok(saved >= DONE_BEFORE, `${DONE_BEFORE} steps saved, up to chunk ${saved}`);

      const config = { topology: topology.config, keyPrefix: engine.keys.prefix, dispatch, lowLatency: true, mode: "drain", relay: { fanoutChunkRecipients: CHUNK } };
      const killed = await runChild(config, { QIM_FAILPOINTS: FAILPOINTS.relayFanoutBeforeProgress });
      assert.equal(killed.signal, "SIGKILL", `the child died at the fail point (code ${killed.code}): ${killed.stderr}`);
      assert.match(killed.stderr, /fail point relay\.fanout-before-progress: SIGKILL/);
      assert.equal(await at(), saved, "its append was not saved");
      // what the killed child appended: the records of its one step, from chunk `saved` on
      const appendedByKilled = (await readWholeLog(log)).flat().map((e) => e.record).filter((r) => r.conversation === group && r.push !== "members" && r.chunk >= saved).map((r) => r.chunk);
      assert.ok(appendedByKilled.length >= 1, "the killed child appended the next step's chunk before it died");

      const drained = await runChild(config, {});
      assert.equal(drained.code, 0, `the second child drained everything: ${drained.stderr}`);
      assert.deepEqual(drained.stderr.split("\n").filter((l) => l.startsWith("error:")), []);
      assert.equal(await client.exists(fanoutKeys(engine.keys, bucket).fanoutJobs), 0, "the job is done");

      // the log: the union of the chunks is the member set; the only duplicate is chunk 5, identical
      const all = (await readWholeLog(log)).flat().map((e) => e.record).filter((r) => r.conversation === group);
      assert.ok(all.every((r) => r.conversationSeq === sent.conversationSeq));
      // the devices' one members record (issue 27), appended by this process with the outbox batch;
      // every chunk is for the projections only
      const announced = all.filter((r) => r.push === "members");
      assert.deepEqual(announced.map((r) => [r.chunk, r.recipients.length]), [[-1, 0]]);
      const records = all.filter((r) => r.push !== "members");
      assert.ok(records.every((r) => r.push === "none"), "the job's chunks push nothing");
      assert.deepEqual([...new Set(records.flatMap((r) => r.recipients))].sort(), everyone);
      const byChunk = new Map<number, DispatchRecord[]>();
      for (const r of records) byChunk.set(r.chunk, [...(byChunk.get(r.chunk) ?? []), r]);
      const chunks = [...byChunk.keys()].sort((a, b) => a - b);
      assert.deepEqual(chunks, chunks.map((_, i) => i), "chunks 0 … n without a gap");
      assert.ok(chunks.length >= MEMBERS / CHUNK);
      // the duplicates are exactly the step the killed child appended, each identical to its repeat
      assert.deepEqual([...byChunk].filter(([, rs]) => rs.length > 1).map(([c, rs]) => [c, rs.length]), appendedByKilled.map((c) => [c, 2]));
      for (const c of appendedByKilled) {
        const [a, b] = byChunk.get(c)! as [DispatchRecord, DispatchRecord];
        assert.deepEqual([b.entry, b.version, [...b.recipients].sort()], [a.entry, a.version, [...a.recipients].sort()]);
      }
      const deduped = [...byChunk.values()].map((rs) => rs[0]!);
      assert.deepEqual(checkConversation(everyone, deduped).violations, []);

      // every member's session projection holds the group
      const hex = uuidToHex(group);
      const missing: Uuid[] = [];
      for (const u of everyone) {
        const uk = userKeys(engine.keys, tenant, u);
        if ((await store.clientFor(uk.tag).zscore(uk.convs, hex)) === null) missing.push(u);
      }
      assert.deepEqual(missing, [], "every member's projection has the group");

      // the conversation list, fed from the same log (duplicate chunk included): each member counts the message once
      const list = new ConversationList({ store, keys: engine.keys, conversations: engine, log, authority: new RedisHashAuthority(store, engine.keys) }, { compactor: { background: false } });
      await list.start();
      await list.compactor.poll();
      await list.compactor.flush();
      const wrong: string[] = [];
      for (const u of members) {
        const row = await list.service.row(tenant, u, group);
        if (!row || row.unread !== 1 || row.headSeq !== sent.conversationSeq) wrong.push(`${u}: ${row ? `unread ${row.unread}, head ${row.headSeq}` : "no row"}`);
      }
      await list.stop();
      assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} members' rows differ`);
      console.log(`# fanout-kill: ${MEMBERS + 1} members, ${chunks.length} chunks of at most ${CHUNK}; killed after appending chunk(s) ${appendedByKilled.join(", ")}; `
        + `${records.length} records (${appendedByKilled.length} duplicate); projection and list rows of every member checked`);
    } finally {
      await store.close();
      await topology.stop();
    }
  });
});
