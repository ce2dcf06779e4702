import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AppendedRecords, compareStreamIds, dispatchPartitionKey, LOG_START, RedisStreamsDispatchLog, type DispatchRecord } from "../../core/index.js";
import { ALL_TOPOLOGIES } from "../harness/redis.js";
import { useEngine } from "./fixture.js";
import { newUuid, type Uuid } from "../../core/index.js";

function record(tenant: Uuid, conversation: Uuid, seq: number): DispatchRecord {
  return { tenant, conversation, conversationSeq: seq, version: 1, entry: `${seq}|x`, recipients: [newUuid()], chunk: 0 };
}

describe("stream ids order as (ms, seq) numbers, not as text", () => {
  it("compares", () => {
    assert.equal(compareStreamIds("9-0", "10-0"), -1);
    assert.equal(compareStreamIds("10-2", "10-10"), -1);
    assert.equal(compareStreamIds("10-10", "10-10"), 0);
    assert.equal(compareStreamIds("0-0", "0-0"), 0);
    assert.equal(compareStreamIds("1700000000000-1", "1700000000000-0"), 1);
  });
});

describe("the records a process appended, kept by partition and stream id", () => {
  const rec = (seq: number, recipients: number): DispatchRecord => ({ tenant: newUuid(), conversation: newUuid(), conversationSeq: seq, version: 1, entry: "", recipients: Array.from({ length: recipients }, () => newUuid()), chunk: 0 });

  it("answers the kept ids after a position, in id order, at most `count`", () => {
    const kept = new AppendedRecords(2, 1000);
    const a = rec(1, 1), b = rec(2, 1), c = rec(3, 1), d = rec(4, 1);
    kept.add(0, "9-5", a, "");
    kept.add(0, "10-2", b, "");
    kept.add(1, "10-3", d, "");
    kept.add(0, "10-10", c, "");
    // "10-10" sorts after "10-2" as numbers (as text it would not)
    assert.deepEqual([...kept.after(0, "0-0", 10)], [["9-5", a], ["10-2", b], ["10-10", c]]);
    assert.deepEqual([...kept.after(0, "10-2", 10)], [["10-10", c]]);
    assert.deepEqual([...kept.after(0, "9-6", 1)], [["10-2", b]]);
    assert.deepEqual([...kept.after(0, "10-10", 10)], []);
    assert.deepEqual([...kept.after(1, "0-0", 10)], [["10-3", d]]);
    // an id not above the newest kept one of its partition is not kept
    kept.add(0, "10-3", rec(5, 1), "");
    assert.deepEqual([...kept.after(0, "10-2", 10)].map(([id]) => id), ["10-10"]);
  });

  it("answers a run only where each record was appended right after the one before it, starting right after the position", () => {
    const kept = new AppendedRecords(1, 1000);
    const a = rec(1, 1), b = rec(2, 1), c = rec(3, 1);
    // a and b one batch after 4-0; another process appended 7-0; then c
    kept.add(0, "5-0", a, "4-0");
    kept.add(0, "6-0", b, "5-0");
    kept.add(0, "8-0", c, "7-0");
    const ids = (run: { id: string }[]) => run.map((k) => k.id);
    assert.deepEqual(ids(kept.run(0, "4-0", 10)), ["5-0", "6-0"]);
    assert.deepEqual(ids(kept.run(0, "4-0", 1)), ["5-0"]);
    assert.deepEqual(ids(kept.run(0, "5-0", 10)), ["6-0"]);
    // 7-0 is not known here: nothing after 6-0, and from 7-0 the run is c
    assert.deepEqual(ids(kept.run(0, "6-0", 10)), []);
    assert.deepEqual(ids(kept.run(0, "7-0", 10)), ["8-0"]);
    // a position that is not the record before the next kept one (3-0 < 4-0): not a run
    assert.deepEqual(ids(kept.run(0, "3-0", 10)), []);
    assert.deepEqual(ids(kept.run(0, "8-0", 10)), []);
    assert.deepEqual(ids(kept.run(0, "4-0", 0)), []);
  });

  it("drops the oldest record of any partition first once the recipients kept pass the bound", () => {
    // weight = recipients + 1: 4 + 4 + 4 = 12 > 10 drops the first (partition 0); then 8 + 6 = 14 drops the second
    const kept = new AppendedRecords(2, 10);
    kept.add(0, "1-0", rec(1, 3), "");
    kept.add(1, "2-0", rec(2, 3), "");
    kept.add(1, "3-0", rec(3, 3), "");
    assert.deepEqual([...kept.after(0, "0-0", 10)], []);
    assert.deepEqual([...kept.after(1, "0-0", 10)].map(([id]) => id), ["2-0", "3-0"]);
    assert.deepEqual(kept.size(), { records: 2, weight: 8 });
    kept.add(0, "4-0", rec(4, 5), "");
    assert.deepEqual([...kept.after(1, "0-0", 10)].map(([id]) => id), ["3-0"]);
    assert.deepEqual([...kept.after(0, "0-0", 10)].map(([id]) => id), ["4-0"]);
    assert.deepEqual(kept.size(), { records: 2, weight: 10 });
  });
});

for (const kind of ALL_TOPOLOGIES) {
  describe(`dispatch log watermarks and retention on ${kind}`, () => {
    const fx = useEngine(kind);

    /** One one-partition log as three processes see it (each its own kept appends): this one, another appender, a reader elsewhere. */
    async function threeProcesses(clusterId: string) {
      const identity = { clusterId, topicId: `t${newUuid().slice(0, 6)}`, partitionCount: 1 };
      const [mine, theirs, elsewhere] = [0, 1, 2].map(() => new RedisStreamsDispatchLog(fx.store, fx.engine.keys, identity)) as [RedisStreamsDispatchLog, RedisStreamsDispatchLog, RedisStreamsDispatchLog];
      await mine.ensureIdentity();
      return { mine, theirs, elsewhere, tenant: newUuid(), conv: newUuid() };
    }

    it("a reader in the appending process gets its own records from memory and the rest over the wire, the same as a reader elsewhere", async () => {
      const { mine, theirs, elsewhere, tenant, conv } = await threeProcesses("kp");
      const appendedHere: DispatchRecord[] = [];
      for (let s = 1; s <= 9; s++) {
        const r = { ...record(tenant, conv, s), recipients: [newUuid(), newUuid()], ...(s % 3 === 0 ? { push: "members" as const } : {}) };
        if (s % 2 === 1) appendedHere.push(r);
        await (s % 2 === 1 ? mine : theirs).append([r]);
      }
      const plain = (r: DispatchRecord) => ({ tenant: r.tenant, conversation: r.conversation, seq: r.conversationSeq, version: r.version, entry: r.entry, recipients: [...r.recipients], chunk: r.chunk, push: r.push });
      for (const [from, count] of [[LOG_START, 100], [LOG_START, 4]] as const) {
        const here = await mine.readFrom(0, from, count);
        const there = await elsewhere.readFrom(0, from, count);
        assert.deepEqual(here.watermarks, there.watermarks);
        assert.deepEqual(here.entries.map((e) => [e.offset, e.id, plain(e.record)]), there.entries.map((e) => [e.offset, e.id, plain(e.record)]));
        // the odd seqs are the very objects this process appended; the even ones were parsed from the reply
        for (const e of here.entries) assert.equal(appendedHere.includes(e.record), e.record.conversationSeq % 2 === 1, `seq ${e.record.conversationSeq}`);
      }
      // from a position in the middle: offsets continue from it
      const all = await elsewhere.readFrom(0, LOG_START, 100);
      const mid = await mine.readFrom(0, { offset: 4, id: all.entries[3]!.id }, 100);
      assert.deepEqual(mid.entries.map((e) => [e.offset, e.record.conversationSeq]), [[4, 5], [5, 6], [6, 7], [7, 8], [8, 9]]);
    });

    it("a run of the process's own appends right after the position is read without a call to Redis; what follows it is read over the wire", async () => {
      const { mine, theirs, elsewhere, tenant, conv } = await threeProcesses("kr");
      // seqs 1-3 in one batch, 4 and 5 alone (all mine), 6 theirs, 7 and 8 mine
      await mine.append([1, 2, 3].map((s) => record(tenant, conv, s)));
      await mine.append([record(tenant, conv, 4)]);
      await mine.append([record(tenant, conv, 5)]);
      await theirs.append([record(tenant, conv, 6)]);
      await mine.append([record(tenant, conv, 7), record(tenant, conv, 8)]);
      const all = (await elsewhere.readFrom(0, LOG_START, 100)).entries;
      assert.deepEqual(all.map((e) => e.record.conversationSeq), [1, 2, 3, 4, 5, 6, 7, 8]);
      const view = (es: { offset: number; id: string; record: DispatchRecord }[]) => es.map((e) => [e.offset, e.id, e.record.conversationSeq]);
      // scripts run, summed over the data nodes (INFO commandstats: evalsha and eval calls)
      const scriptCalls = async () => {
        let n = 0;
        for (const node of fx.store.dataNodes()) {
          const info = await node.info("commandstats");
          for (const m of info.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)) n += Number(m[1]);
        }
        return n;
      };
      const afterFirst = { offset: 1, id: all[0]!.id };
      const before = await scriptCalls();
      // seqs 2-5 are exactly what follows seq 1, all appended here: no script call at all
      const run = await mine.readFrom(0, afterFirst, 4);
      assert.equal(await scriptCalls(), before);
      assert.deepEqual(view(run.entries), view(all.slice(1, 5)));
      // past the run comes theirs: read over the wire, the same as a reader elsewhere gets it
      const here = await mine.readFrom(0, afterFirst, 100);
      assert.ok(await scriptCalls() > before, "the read past the run called readLog");
      const there = await elsewhere.readFrom(0, afterFirst, 100);
      assert.deepEqual(view(here.entries), view(there.entries));
      assert.deepEqual(view(here.entries), view(all.slice(1)));
      assert.deepEqual(here.watermarks, there.watermarks);
      // after theirs, 7 and 8 are a run again
      const tail = { offset: 6, id: all[5]!.id };
      const beforeTail = await scriptCalls();
      assert.deepEqual(view((await mine.readFrom(0, tail, 2)).entries), view(all.slice(6)));
      assert.equal(await scriptCalls(), beforeTail);
    });

    it("low/high are ordinal offsets: appends raise high, trims raise low, reads are contiguous from a position", async () => {
      const log = new RedisStreamsDispatchLog(fx.store, fx.engine.keys, { clusterId: "wm", topicId: `t${newUuid().slice(0, 6)}`, partitionCount: 1 });
      await log.ensureIdentity();
      assert.deepEqual(await log.watermarks(0), { low: 0, high: 0, lastId: "0-0", lowPosition: { offset: 0, id: "0-0" }, newestMs: null });
      const tenant = newUuid();
      const conv = newUuid();
      await log.append([1, 2, 3].map((s) => record(tenant, conv, s)));
      const w = await log.watermarks(0);
      assert.equal(w.low, 0);
      assert.equal(w.high, 3);
      const all = await log.readFrom(0, LOG_START, 10);
      assert.deepEqual(all.entries.map((e) => [e.offset, e.record.conversationSeq]), [[0, 1], [1, 2], [2, 3]]);
      const rest = await log.readFrom(0, { offset: 1, id: all.entries[0]!.id }, 10);
      assert.deepEqual(rest.entries.map((e) => e.offset), [1, 2]);

      // everything appended so far leaves the window; new records keep their ordinals
      const cut = Date.now() + 1;
      await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual(await log.trim(cut), [3]);
      await log.append([record(tenant, conv, 4)]);
      const after = await log.watermarks(0);
      assert.equal(after.low, 3);
      assert.equal(after.high, 4);
      const low = (await log.watermarks(0)).lowPosition;
      assert.equal(low.offset, 3);
      const fromLow = await log.readFrom(0, low, 10);
      assert.deepEqual(fromLow.entries.map((e) => [e.offset, e.record.conversationSeq]), [[3, 4]]);
      assert.equal(fromLow.watermarks.low, 3);
    });

    it("a record's chunk round-trips as stream field k, written only when not 0; a record without k (older code) reads as chunk 0", async () => {
      const log = new RedisStreamsDispatchLog(fx.store, fx.engine.keys, { clusterId: "ck", topicId: `t${newUuid().slice(0, 6)}`, partitionCount: 1 });
      const tenant = newUuid();
      const conv = newUuid();
      await log.append([record(tenant, conv, 1), { ...record(tenant, conv, 2), chunk: 0 }, { ...record(tenant, conv, 2), chunk: 7 }]);
      const { entries } = await log.readFrom(0, LOG_START, 10);
      assert.deepEqual(entries.map((e) => [e.record.conversationSeq, e.record.chunk]), [[1, 0], [2, 0], [2, 7]]);
      const key = dispatchPartitionKey(fx.engine.keys, log.identity.topicId, 0);
      const client = fx.store.clientForKey(key);
      const fieldsOf = async (id: string) => ((await client.xrange(key, id, id))[0]![1]).filter((_, i) => i % 2 === 0);
      assert.deepEqual(await fieldsOf(entries[1]!.id), ["t", "c", "s", "v", "e", "r"]);
      assert.deepEqual(await fieldsOf(entries[2]!.id), ["t", "c", "s", "v", "e", "r", "k"]);
    });

    it("an emptied partition's low position is its high watermark", async () => {
      const log = new RedisStreamsDispatchLog(fx.store, fx.engine.keys, { clusterId: "wm", topicId: `t${newUuid().slice(0, 6)}`, partitionCount: 1 });
      await log.append([record(newUuid(), newUuid(), 1), record(newUuid(), newUuid(), 1)]);
      await log.trim(Date.now() + 1000);
      const w = await log.watermarks(0);
      assert.deepEqual([w.low, w.high], [2, 2]);
      const low = (await log.watermarks(0)).lowPosition;
      assert.deepEqual(low, { offset: 2, id: w.lastId });
      assert.deepEqual((await log.readFrom(0, low, 10)).entries, []);
    });
  });
}
