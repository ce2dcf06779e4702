/**
 * lua/includes/histRecord.lua, the one Lua reader and writer of a history entry, run on a real
 * redis-server, beside its TypeScript twin (core/conversation/history.ts): the same field names,
 * the same reading of both layouts (version 1, positional, as the code before issue 25 wrote it;
 * version 2, named header + body), fields neither knows surviving a decode + encode, and the
 * idempotency content of one message being the same text in both layouts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  decodeHistoryEntry, decodeHistoryParts, encodeHistoryEntry, encodeHistoryParts, encodeHistoryRest, HIST_FIELD, HISTORY_RECORD_VERSION, hexToUuid, inlineIncludes,
} from "../../core/index.js";
import { Conv, hexId, hexIds, normalRest, useRedis } from "./helpers.js";

const fx = useRedis();
const LUA_DIR = fileURLToPath(new URL("../../../lua", import.meta.url));

/** Runs `body` with the include inlined before it (KEYS none, ARGV as given). */
async function lua(body: string, ...argv: (string | number)[]): Promise<unknown> {
  const text = inlineIncludes(LUA_DIR, `--- @include "includes/histRecord"\n${body}`, "histRecord.test");
  return fx.store.clientFor("{t}").eval(text, 0, ...argv);
}

interface LuaRecord { seq?: number; version: number; fields: Record<string, string>; other?: string[]; body?: string }
const luaDecode = async (entry: string) => JSON.parse(await lua("return cjson.encode(histDecode(ARGV[1]))", entry) as string) as LuaRecord;
const luaHeader = async (entry: string) => JSON.parse(await lua("return cjson.encode(histHeader(ARGV[1]))", entry) as string) as LuaRecord;
/** One field through the cheap accessor (null: absent). */
const luaGet = (entry: string, name: string) => lua("return histGet(ARGV[1], ARGV[2])", entry, name);
/** decode then encode in Lua: what a later rewrite of the entry (a recall) does to the fields it does not touch. */
const luaRewrite = (entry: string) => lua("return histEncode(histDecode(ARGV[1]))", entry);

const [A, B, C, D] = hexIds(4) as [string, string, string, string];
const BODY = Buffer.from("hello").toString("base64");

test("histRecord: the Lua field names and version are history.ts's (one name per field in both languages)", async () => {
  const luaNames = JSON.parse(await lua("return cjson.encode({ names = HIST, version = HIST_VERSION })") as string) as { names: Record<string, string>; version: number };
  // HIST_FIELD.messageId <-> HIST.MESSAGE_ID
  const expected = Object.fromEntries(Object.entries(HIST_FIELD).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase(), v]));
  assert.deepEqual(luaNames.names, expected);
  assert.equal(luaNames.version, HISTORY_RECORD_VERSION);
  assert.equal(HISTORY_RECORD_VERSION, 2);
});

test("histRecord: version 1 entries and rests, as the code before issue 25 wrote them, read as named fields in Lua and TypeScript", async () => {
  const v1 = `7|${A}|${B}|N|1|1700000000123|text/plain|${BODY}`;
  const v1Mentions = `8|${A}|${B}|N|1|1700000000124|text/plain|${BODY}|${C}${D}`;
  const v1Rest = `${A}|${B}|C|0|1700000000125|qim.membership.v1|${BODY}`;
  const fields = (at: string, extra: Record<string, string> = {}) => ({ id: A, from: B, kind: "N", cu: "1", at, ct: "text/plain", ...extra });

  const d = await luaDecode(v1);
  assert.deepEqual([d.seq, d.version, d.fields, d.body], [7, 1, fields("1700000000123"), BODY]);
  const m = await luaDecode(v1Mentions);
  assert.deepEqual([m.seq, m.fields, m.body], [8, fields("1700000000124", { men: C + D }), BODY]);
  assert.equal(await luaGet(v1Mentions, "men"), C + D);
  assert.equal(await luaGet(v1Mentions, "at"), "1700000000124");
  assert.equal(await luaGet(v1, "men"), null);
  const r = await luaDecode(v1Rest);
  assert.deepEqual([r.seq, r.version, r.fields.id, r.fields.kind, r.fields.ct, r.body], [undefined, 1, A, "C", "qim.membership.v1", BODY]);

  // TypeScript reads the same
  const t = decodeHistoryParts(v1Mentions);
  assert.deepEqual([t.conversationSeq, t.version, Object.fromEntries(t.fields), t.body], [8, 1, fields("1700000000124", { men: C + D }), BODY]);
  const rec = decodeHistoryEntry(v1Mentions);
  assert.deepEqual([rec.conversationSeq, rec.messageId, rec.senderId, rec.createdAt, rec.contentType, Buffer.from(rec.payload).toString(), rec.mentions],
    [8, hexToUuid(A), hexToUuid(B), 1700000000124, "text/plain", "hello", [hexToUuid(C), hexToUuid(D)]]);
  assert.equal(decodeHistoryParts(v1Rest).conversationSeq, null);

  // a rewrite of a version 1 entry writes version 2 with the same fields, by hand:
  assert.equal(await luaRewrite(v1Mentions), `8|v2|id=${A}|from=${B}|kind=N|cu=1|at=1700000000124|ct=text/plain|men=${C}${D}\n${BODY}`);
});

test("histRecord: version 2 is the header of named fields then the body; Lua and TypeScript write and read each other's entries", async () => {
  const rec = {
    conversationSeq: 12, messageId: hexToUuid(A), senderId: hexToUuid(B), kind: "normal" as const, countsUnread: true, createdAt: 1700000000999,
    contentType: "text/plain", payload: Buffer.from("hello"), mentions: [hexToUuid(C)],
  };
  const entry = encodeHistoryEntry(rec);
  // by hand, from the layout in docs/architecture.md
  assert.equal(entry, `12|v2|id=${A}|from=${B}|kind=N|cu=1|at=1700000000999|ct=text/plain|men=${C}\n${BODY}`);
  const { conversationSeq: _, ...withoutSeq } = rec;
  assert.equal(`12|${encodeHistoryRest(withoutSeq)}`, entry);
  const d = await luaDecode(entry);
  assert.deepEqual([d.seq, d.version, d.fields, d.body], [12, 2, { id: A, from: B, kind: "N", cu: "1", at: "1700000000999", ct: "text/plain", men: C }, BODY]);
  assert.equal(await luaGet(entry, "from"), B);
  assert.equal(await luaGet(entry, "nope"), null);
  // what Lua encodes, TypeScript decodes to the same record
  const back = decodeHistoryEntry(await lua(`return histEncode({ seq = 12, fields = cjson.decode(ARGV[1]), body = ARGV[2] })`, JSON.stringify(d.fields), BODY) as string);
  assert.deepEqual({ ...back, payload: Buffer.from(back.payload).toString() }, { ...rec, payload: "hello" });
});

test("histRecord: a field neither reader knows survives a decode + encode in Lua and in TypeScript; a header read never needs the body; a newer version is refused", async () => {
  const body = Buffer.alloc(32 * 1024, 7).toString("base64");
  const entry = `5|v2|id=${A}|from=${B}|zeta=9|kind=C|cu=0|at=1|ct=application/x-test|alpha=x_1\n${body}`;
  // the known fields come first, the others keep their order
  const rewritten = `5|v2|id=${A}|from=${B}|kind=C|cu=0|at=1|ct=application/x-test|zeta=9|alpha=x_1\n${body}`;
  assert.equal(await luaRewrite(entry), rewritten);
  assert.equal(await luaRewrite(rewritten), rewritten);
  const ts = decodeHistoryParts(entry);
  assert.equal(encodeHistoryParts(ts), rewritten);
  const rec = decodeHistoryEntry(entry);
  assert.deepEqual([...rec.otherFields!], [["zeta", "9"], ["alpha", "x_1"]]);
  assert.equal(encodeHistoryEntry(rec), rewritten);
  // a field added by a Lua writer goes after them
  assert.equal(await lua("local r = histDecode(ARGV[1]); r.fields.new = 3; return histEncode(r)", entry),
    `5|v2|id=${A}|from=${B}|kind=C|cu=0|at=1|ct=application/x-test|zeta=9|alpha=x_1|new=3\n${body}`);
  // the header alone: no body in it
  const h = await luaHeader(entry);
  assert.deepEqual([h.seq, h.fields.zeta, h.body], [5, "9", undefined]);
  // a value that would break the layout is refused by both encoders
  await assert.rejects(lua("return histEncode({ fields = { ct = 'a|b' }, body = '' })"), /histRecord: field ct cannot hold a\|b/);
  assert.throws(() => encodeHistoryParts({ conversationSeq: 1, fields: new Map([["x", "a=b"]]), body: "" }), /field x cannot hold/);
  // an entry of a version newer than this code is refused by both readers, never guessed at
  const v3 = `5|v3|id=${A}\n${BODY}`;
  await assert.rejects(luaDecode(v3), /histRecord: entry version 3 is newer than this code reads \(2\)/);
  await assert.rejects(luaGet(v3, "id"), /entry version 3 is newer/);
  assert.throws(() => decodeHistoryParts(v3), /history entry version 3 is newer than this code reads \(2\)/);
});

test("histRecord: a message's idempotency content is the same text in both layouts, so a retry across the upgrade is a duplicate, not a conflict", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, u]);
  const mid = hexId();
  // the old writer's rest (version 1, with a mention) and the new writer's rest of the same message (new message id and created_at)
  const old = `${normalRest(mid, owner)}|${u}`;
  const v1 = decodeHistoryParts(old);
  const fresh = encodeHistoryParts({ conversationSeq: null, fields: new Map([...v1.fields, ["id", hexId()], ["at", "1800000000000"]]), body: v1.body });
  assert.equal(await lua("return histContent(ARGV[1])", old), `${owner}|N|1|text/plain|${v1.body}|${u}`);
  assert.equal(await lua("return histContent(ARGV[1])", fresh), `${owner}|N|1|text/plain|${v1.body}|${u}`);
  const cmid = hexId();
  const first = await c.run("commitMessages", [1, c.keys.outboxRef, cmid, owner, old]);
  assert.deepEqual(first, [0, 0, 1, mid]);
  const retry = await c.run("commitMessages", [1, c.keys.outboxRef, cmid, owner, fresh]);
  assert.deepEqual(retry, [0, 1, 1, mid], "the same message: the first commit answers");
  // a field added later is content: the same id with it is another message
  const other = encodeHistoryParts({ conversationSeq: null, fields: new Map([...v1.fields, ["later", "1"]]), body: v1.body });
  assert.deepEqual((await c.run("commitMessages", [1, c.keys.outboxRef, cmid, owner, other])).slice(0, 2), [0, -14]);
  // a rest that is no history entry is refused with nothing written
  const before = await c.snapshot();
  await assert.rejects(c.run("commitMessages", [1, c.keys.outboxRef, hexId(), owner, "garbage"]), /message 1 is no history entry/);
  assert.equal(await c.snapshot(), before);
});
