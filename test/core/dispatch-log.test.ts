import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compareStreamIds, dispatchPartitionKey, LOG_START, RedisStreamsDispatchLog, type DispatchRecord } from "../../core/index.js";
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

for (const kind of ALL_TOPOLOGIES) {
  describe(`dispatch log watermarks and retention on ${kind}`, () => {
    const fx = useEngine(kind);

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
