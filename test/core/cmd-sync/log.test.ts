/**
 * The durable CMD log (core/cmd-log/log.ts, lua/cmd-sync/commitCmd-6.lua) on a real Redis and on a
 * real 3-master Redis Cluster (where any key outside the channel's tag fails the script with
 * CROSSSLOT): per-channel seq, frozen audience (WuKongIM #527), idempotency, NoPersist, validation
 * before any write, paging, the recent-commit index and its trim, and the isolation from the
 * ordinary conversation paths. Expected values are written out by hand or read straight from Redis.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { blake3 } from "@noble/hashes/blake3.js";
import {
  bucketTag, CmdLog, cmdChannelKeys, cmdRecentKey, commitBucket, ConversationService, InvalidArgumentError, KeySpace, newUuid, NotFoundError, RedisStore,
  uuidToHex, type CmdSendRequest, type RedisClient, type Uuid,
} from "../../../core/index.js";
import { conversationKeyList, dumpKeys } from "../../harness/dump.js";
import { startTopology, type TestTopology } from "../../harness/redis.js";

const bytes = (s: string) => new TextEncoder().encode(s);

for (const kind of ["single", "cluster"] as const) {
  describe(`CMD log on ${kind === "single" ? "one Redis" : "a Redis Cluster"}`, { timeout: 180_000 }, () => {
    let topology: TestTopology;
    let store: RedisStore;
    let keys: KeySpace;
    let log: CmdLog;
    let conversations: ConversationService;

    before(async () => {
      topology = await startTopology(kind);
      store = new RedisStore(topology.config);
      keys = new KeySpace(`cl${newUuid().slice(0, 8)}`);
      log = new CmdLog(store, keys, { maxRecipients: 5 });
      conversations = new ConversationService(store, { keyPrefix: keys.prefix });
    });
    after(async () => {
      await store?.close();
      await topology?.stop();
    });

    /** Every key of the test's prefix on every data node (a "nothing written" check). */
    async function allKeys(): Promise<string[]> {
      const out: string[] = [];
      for (const c of store.dataNodes()) out.push(...await c.keys(`${keys.prefix}:*`));
      return out.sort();
    }

    const req = (tenant: Uuid, over: Partial<CmdSendRequest> = {}): CmdSendRequest => ({
      tenant, channelId: "u-chan", channelType: 1, from: null, to: null, noPersist: false, payload: bytes("p"), ...over,
    });

    test("request-scoped: seq from 1 per channel, recipients distinct and sorted, the entry as sent, indexed by Redis time", async () => {
      const tenant = newUuid();
      const [a, b, s] = [newUuid(), newUuid(), newUuid()];
      const first = await log.commit(req(tenant, { channelId: "orders", to: [b, a, b], from: s, payload: bytes("hello"), clientMsgNo: "m-1", redDot: true, syncOnce: false }));
      assert.equal(first.duplicate, false);
      assert.equal(first.message.messageSeq, 1);
      assert.deepEqual(first.message.channel, { channelId: "orders____cmd", channelType: 1 });
      assert.deepEqual(first.message.recipients, [a, b].sort());
      const second = await log.commit(req(tenant, { channelId: "orders____cmd", to: [a] }));
      assert.equal(second.message.messageSeq, 2);
      // another type is another channel: its own seq
      const other = await log.commit(req(tenant, { channelId: "orders", channelType: 3, to: [a] }));
      assert.equal(other.message.messageSeq, 1);

      const loaded = await log.load(tenant, { channelId: "orders____cmd", channelType: 1 }, 0, 10);
      assert.deepEqual(loaded.map((m) => m.messageSeq), [1, 2]);
      const m = loaded[0]!;
      assert.equal(Buffer.from(m.payload).toString(), "hello");
      assert.equal(m.from, s);
      assert.equal(m.clientMsgNo, "m-1");
      assert.equal(m.redDot, true);
      assert.equal(m.syncOnce, false);
      assert.equal(m.noPersist, false);
      assert.equal(m.messageId, first.message.messageId);
      assert.deepEqual(m.recipients, [a, b].sort());
      assert.equal(loaded[1]!.syncOnce, true, "sync_once defaults to true, red_dot to false");
      assert.equal(loaded[1]!.redDot, false);

      const k = cmdChannelKeys(keys, tenant, { channelId: "orders____cmd", channelType: 1 });
      const client = store.clientFor(k.tag);
      const [secs] = await client.time();
      const recent = await client.zrange(k.recent, "0", "-1", "WITHSCORES");
      const mine = new Map<string, number>();
      for (let i = 0; i < recent.length; i += 2) if (recent[i]!.startsWith(uuidToHex(tenant))) mine.set(recent[i]!, Number(recent[i + 1]));
      const ref = `${uuidToHex(tenant)}|1|orders____cmd|`;
      assert.ok(mine.has(`${ref}1`) && mine.has(`${ref}2`), [...mine.keys()].join(", "));
      assert.equal(mine.get(`${ref}1`), m.timestampMs, "the index's score is the entry's commit time");
      assert.ok(Math.abs(m.timestampMs - Number(secs) * 1000) < 60_000, "commit time is Redis TIME in ms");
    });

    test("group-sourced: the active members at allocation are frozen; a member added later receives from the next seq on (WuKongIM #527)", async () => {
      const tenant = newUuid();
      const [owner, a, b, c] = [newUuid(), newUuid(), newUuid(), newUuid()];
      const g = await conversations.createGroup({ tenant, owner, members: [owner, a, b] });
      const channelId = `${g.group}`;
      const s1 = await log.commit(req(tenant, { channelId, channelType: 2 }));
      await conversations.addMembers({ tenant, group: g.group, users: [c] });
      const s2 = await log.commit(req(tenant, { channelId, channelType: 2 }));
      await conversations.removeMembers({ tenant, group: g.group, users: [b] });
      const s3 = await log.commit(req(tenant, { channelId: `${g.group}____cmd`, channelType: 2 }));
      assert.deepEqual([s1, s2, s3].map((s) => s.message.messageSeq), [1, 2, 3]);
      assert.deepEqual(s1.message.recipients, [owner, a, b].sort());
      assert.deepEqual(s2.message.recipients, [owner, a, b, c].sort());
      assert.deepEqual(s3.message.recipients, [owner, a, c].sort());
      const loaded = await log.load(tenant, { channelId: `${g.group}____cmd`, channelType: 2 }, 0, 10);
      assert.deepEqual(loaded.map((m) => m.recipients), [s1, s2, s3].map((s) => s.message.recipients));
      // the channel lives in the group's bucket, beside its member table
      const k = cmdChannelKeys(keys, tenant, { channelId: `${g.group}____cmd`, channelType: 2 });
      assert.equal(k.tag, bucketTag(commitBucket(tenant, g.group)));
      // a request-scoped send on the same channel uses the same seq
      const s4 = await log.commit(req(tenant, { channelId, channelType: 2, to: [c] }));
      assert.equal(s4.message.messageSeq, 4);
      assert.deepEqual(s4.message.recipients, [c]);
    });

    test("a CMD send leaves the group's conversation untouched (history, seq, outbox, reads)", async () => {
      const tenant = newUuid();
      const owner = newUuid();
      const g = await conversations.createGroup({ tenant, owner, members: [owner, newUuid()] });
      await conversations.send({ tenant, group: g.group, sender: owner, text: "ordinary" });
      const ck = conversations.conversationKeys(tenant, g.group);
      const client = store.clientFor(ck.tag);
      const before = await dumpKeys(client, conversationKeyList(ck));
      await log.commit(req(tenant, { channelId: g.group, channelType: 2 }));
      await log.commit(req(tenant, { channelId: g.group, channelType: 2, to: [owner] }));
      assert.equal(await dumpKeys(client, conversationKeyList(ck)), before);
      const history = await conversations.history({ tenant, group: g.group, user: owner });
      assert.deepEqual(history.records.map((r) => r.conversationSeq), [1]);
    });

    test("idempotency: a repeated client_msg_no answers the first commit and writes nothing", async () => {
      const tenant = newUuid();
      const a = newUuid();
      const first = await log.commit(req(tenant, { to: [a], clientMsgNo: "same", payload: bytes("one") }));
      const k = cmdChannelKeys(keys, tenant, { channelId: "u-chan____cmd", channelType: 1 });
      const client: RedisClient = store.clientFor(k.tag);
      const dump = () => dumpKeys(client, [k.seq, k.hist, k.idem]);
      const beforeDump = await dump();
      const again = await log.commit(req(tenant, { to: [newUuid()], clientMsgNo: "same", payload: bytes("two") }));
      assert.equal(again.duplicate, true);
      assert.equal(again.message.messageSeq, 1);
      assert.equal(again.message.messageId, first.message.messageId);
      assert.equal(Buffer.from(again.message.payload).toString(), "one");
      assert.deepEqual(again.message.recipients, [a]);
      assert.equal(await dump(), beforeDump);
    });

    test("NoPersist: resolved recipients, seq 0, nothing durable", async () => {
      const tenant = newUuid();
      const [owner, a] = [newUuid(), newUuid()];
      const g = await conversations.createGroup({ tenant, owner, members: [owner, a] });
      const beforeKeys = await allKeys();
      const r = await log.commit(req(tenant, { channelId: g.group, channelType: 2, noPersist: true }));
      assert.equal(r.message.messageSeq, 0);
      assert.equal(r.message.noPersist, true);
      assert.deepEqual(r.message.recipients, [owner, a].sort());
      const r2 = await log.commit(req(tenant, { to: [a], noPersist: true }));
      assert.deepEqual(r2.message.recipients, [a]);
      assert.deepEqual(await allKeys(), beforeKeys);
      await assert.rejects(log.commit(req(tenant, { channelId: newUuid(), channelType: 2, noPersist: true })), NotFoundError);
    });

    test("refused before any write: bad channel, type, recipients, payload, client_msg_no; no such group; too many members", async () => {
      const tenant = newUuid();
      const [owner, ...others] = Array.from({ length: 6 }, () => newUuid());
      const big = await conversations.createGroup({ tenant, owner: owner!, members: [owner!, ...others] }); // 6 active > maxRecipients 5
      const beforeKeys = await allKeys();
      const field = async (r: CmdSendRequest, f: string) => {
        const err = await log.commit(r).then(() => null, (e: unknown) => e);
        assert.ok(err instanceof InvalidArgumentError, `${f}: ${String(err)}`);
        assert.equal(err.field, f);
      };
      await field(req(tenant, { channelType: 0, to: [owner!] }), "channelType");
      await field(req(tenant, { channelType: 256, to: [owner!] }), "channelType");
      await field(req(tenant, { channelId: "a|b", to: [owner!] }), "channelId");
      await field(req(tenant, { channelId: "", to: [owner!] }), "channelId");
      await field(req(tenant, { to: [] }), "to");
      await field(req(tenant, { to: ["nope" as Uuid] }), "to[0]");
      await field(req(tenant, { to: null }), "to"); // not group-sourced: type 1
      await field(req(tenant, { channelId: "not-a-uuid", channelType: 2, to: null }), "to");
      await field(req(tenant, { to: Array.from({ length: 6 }, () => newUuid()) }), "to");
      await field(req(tenant, { to: [owner!], payload: new Uint8Array(64 * 1024 + 1) }), "payload");
      await field(req(tenant, { to: [owner!], clientMsgNo: "has space" }), "clientMsgNo");
      await field(req(tenant, { channelId: big.group, channelType: 2 }), "to");
      await field(req(tenant, { channelId: big.group, channelType: 2, noPersist: true }), "to");
      await assert.rejects(log.commit(req(tenant, { channelId: newUuid(), channelType: 2 })), NotFoundError);
      assert.deepEqual(await allKeys(), beforeKeys, "nothing was written by any refused send");
    });

    test("load pages by seq", async () => {
      const tenant = newUuid();
      const a = newUuid();
      for (let i = 0; i < 7; i++) await log.commit(req(tenant, { channelId: "pages", to: [a], payload: bytes(`m${i + 1}`) }));
      const ch = { channelId: "pages____cmd", channelType: 1 };
      const seqs = async (after: number, limit: number) => (await log.load(tenant, ch, after, limit)).map((m) => m.messageSeq);
      assert.deepEqual(await seqs(0, 3), [1, 2, 3]);
      assert.deepEqual(await seqs(3, 3), [4, 5, 6]);
      assert.deepEqual(await seqs(6, 3), [7]);
      assert.deepEqual(await seqs(7, 3), []);
      assert.deepEqual(await seqs(2, 0), []);
      assert.deepEqual((await log.load(tenant, ch, 4, 1)).map((m) => Buffer.from(m.payload).toString()), ["m5"]);
      assert.equal(await log.lastSeq(tenant, ch), 7);
      // filtered by recipient: b gets seq 9 and 12 only; pages of CMD_LOAD_PAGE read past the others
      const b = newUuid();
      await log.commit(req(tenant, { channelId: "pages", to: [a] }));
      await log.commit(req(tenant, { channelId: "pages", to: [a, b] }));
      for (let i = 0; i < 2; i++) await log.commit(req(tenant, { channelId: "pages", to: [a] }));
      await log.commit(req(tenant, { channelId: "pages", to: [b] }));
      const forB = async (after: number, limit: number) => (await log.load(tenant, ch, after, limit, b)).map((m) => m.messageSeq);
      assert.deepEqual(await forB(0, 10), [9, 12]);
      assert.deepEqual(await forB(0, 1), [9]);
      assert.deepEqual(await forB(9, 10), [12]);
      assert.deepEqual(await forB(12, 10), []);
      assert.deepEqual((await log.load(tenant, ch, 0, 20, a)).map((m) => m.messageSeq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    });

    test("the recent-commit index drops entries older than its retention at the next commit in the bucket", async () => {
      const tenant = newUuid();
      const short = new CmdLog(store, keys, { retentionMs: 60_000 });
      const ch = { channelId: "trim____cmd", channelType: 1 };
      const k = cmdChannelKeys(keys, tenant, ch);
      const client = store.clientFor(k.tag);
      await client.zadd(k.recent, 1000, "old-entry");
      const [secs] = await client.time();
      await client.zadd(k.recent, Number(secs) * 1000 - 10_000, "recent-entry");
      await short.commit(req(tenant, { channelId: "trim", to: [newUuid()] }));
      assert.equal(await client.zscore(k.recent, "old-entry"), null);
      assert.notEqual(await client.zscore(k.recent, "recent-entry"), null);
      assert.equal(k.recent, cmdRecentKey(keys, k.bucket));
    });

    test("a channel's bucket: blake3 of domain, tenant, type and id for non-group channels", () => {
      const tenant = newUuid();
      const ch = { channelId: "abc____cmd", channelType: 7 };
      const input = Buffer.concat([Buffer.from("qim.cmd-channel.v1\0"), Buffer.from(uuidToHex(tenant), "hex"), Buffer.from([7]), Buffer.from("abc____cmd")]);
      const d = blake3(input);
      const expected = d.slice(0, 4).reduce((acc, x) => acc * 256 + x, 0) % 256;
      assert.equal(cmdChannelKeys(keys, tenant, ch).bucket, expected);
      // type 2 with a UUID source that is not canonical text is no group channel
      const upper = { channelId: `${newUuid().toUpperCase()}____cmd`, channelType: 2 };
      assert.equal(cmdChannelKeys(keys, tenant, upper).grpmembers, null);
    });
  });
}
