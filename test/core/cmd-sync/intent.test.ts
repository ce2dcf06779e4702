/**
 * Command channel ids, the intent builder (spec 001 TestBuildConversationIntent*), the intent
 * validation done before any write, the split by owner and the intent codec's golden bytes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  buildConversationIntent, CMD_CHANNEL_ID_MAX_BYTES, decodeIntent, encodeIntent, InvalidArgumentError, isCommandChannel, newUuid,
  normaliseCommandChannel, parseChannelType, parseCommandChannelId, splitIntentByOwner, stripCommandSuffix, validateIntent,
  type CmdMessage, type ConversationIntent, type Uuid,
} from "../../../core/index.js";

const tenant = "11111111-1111-1111-1111-111111111111" as Uuid;
const u1 = "22222222-2222-2222-2222-222222222222" as Uuid;
const u2 = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa" as Uuid;

function message(over: Partial<CmdMessage> = {}): CmdMessage {
  return {
    tenant, channel: { channelId: "g1____cmd", channelType: 2 }, messageSeq: 9, messageId: newUuid(), clientMsgNo: "c1", from: u1,
    timestampMs: 1_700_000_000_123, redDot: false, syncOnce: true, noPersist: false, payload: new Uint8Array(), recipients: [u2, u1, u2, "" as Uuid], ...over,
  };
}

test("channel ids: the suffix is added once and stripped exactly once", () => {
  assert.equal(normaliseCommandChannel("g1"), "g1____cmd");
  assert.equal(normaliseCommandChannel("g1____cmd"), "g1____cmd");
  assert.equal(stripCommandSuffix("g1____cmd"), "g1");
  assert.equal(stripCommandSuffix("nested____cmd____cmd"), "nested____cmd");
  assert.equal(stripCommandSuffix("plain"), "plain");
  assert.equal(isCommandChannel("g1____cmd"), true);
  assert.equal(isCommandChannel("____cmd"), false, "no source");
  assert.equal(isCommandChannel("not-cmd"), false);
});

test("parseChannelType: 1…255 only; parseCommandChannelId: printable ASCII, no '|', ≤ 128 bytes with the suffix", () => {
  assert.equal(parseChannelType(2, "t"), 2);
  assert.equal(parseChannelType("255", "t"), 255);
  for (const bad of [0, 256, -1, 1.5, "x", null, undefined]) assert.throws(() => parseChannelType(bad, "t"), InvalidArgumentError, String(bad));
  assert.equal(parseCommandChannelId("g1", "c"), "g1____cmd");
  assert.equal(parseCommandChannelId("g1____cmd", "c"), "g1____cmd");
  const longest = "x".repeat(CMD_CHANNEL_ID_MAX_BYTES - 7);
  assert.equal(parseCommandChannelId(longest, "c").length, 128);
  assert.throws(() => parseCommandChannelId(longest + "x", "c"), /at most 128/);
  for (const bad of ["", "a|b", "a b", "é", "____cmd", 7]) assert.throws(() => parseCommandChannelId(bad, "c"), InvalidArgumentError, String(bad));
});

test("builder: (from u1, seq 9, recipients [u2, u1, u2, '']) → {u1: 9, u2: 0} on g1____cmd", () => {
  const i = buildConversationIntent(message())!;
  assert.deepEqual(i, {
    tenant, channel: { channelId: "g1____cmd", channelType: 2 }, messageSeq: 9, activeAt: 1_700_000_000_123,
    userReadSeqs: new Map([[u2, 0], [u1, 9]]),
  });
});

test("builder: the source channel g1 is normalised to g1____cmd; no timestamp → the injected clock", () => {
  const i = buildConversationIntent(message({ channel: { channelId: "g1", channelType: 2 }, timestampMs: 0 }), () => 4242)!;
  assert.equal(i.channel.channelId, "g1____cmd");
  assert.equal(i.activeAt, 4242);
});

test("builder: NoPersist, seq 0 and no non-empty recipient make no intent; a sender outside the recipients gets no read", () => {
  assert.equal(buildConversationIntent(message({ noPersist: true })), null);
  assert.equal(buildConversationIntent(message({ messageSeq: 0 })), null);
  assert.equal(buildConversationIntent(message({ recipients: ["" as Uuid, " " as Uuid] })), null);
  assert.equal(buildConversationIntent(message({ recipients: [] })), null);
  const system = buildConversationIntent(message({ from: null, recipients: [u1] }))!;
  assert.deepEqual([...system.userReadSeqs], [[u1, 0]]);
});

function intent(over: Partial<ConversationIntent> = {}): ConversationIntent {
  return { tenant, channel: { channelId: "g1____cmd", channelType: 2 }, messageSeq: 300, activeAt: 1_000_000, userReadSeqs: new Map([[u2, 0], [u1, 300]]), ...over };
}

test("validateIntent rejects seq 0, type 0, a non-command id, an empty map, a blank key, read > seq", () => {
  validateIntent(intent());
  const cases: [string, Partial<ConversationIntent>][] = [
    ["messageSeq", { messageSeq: 0 }],
    ["channelType", { channel: { channelId: "g1____cmd", channelType: 0 } }],
    ["channelId", { channel: { channelId: "g1", channelType: 2 } }],
    ["userReadSeqs", { userReadSeqs: new Map() }],
    ["userReadSeqs", { userReadSeqs: new Map([["" as Uuid, 0]]) }],
    ["userReadSeqs", { userReadSeqs: new Map([["u1" as Uuid, 0]]) }],
    ["userReadSeqs", { userReadSeqs: new Map([[u1, 301]]) }],
  ];
  for (const [field, over] of cases) {
    assert.throws(() => validateIntent(intent(over)), (e: unknown) => e instanceof InvalidArgumentError && e.field === field, JSON.stringify(field));
  }
});

test("splitIntentByOwner: one clone per owner holding only its users", () => {
  const u3 = "33333333-3333-3333-3333-333333333333" as Uuid;
  const parts = splitIntentByOwner(intent({ userReadSeqs: new Map([[u2, 0], [u1, 300], [u3, 0]]) }), (_t, u) => (u === u2 ? "node-b" : "node-a"));
  assert.deepEqual([...parts.keys()].sort(), ["node-a", "node-b"]);
  assert.deepEqual([...parts.get("node-a")!.userReadSeqs], [[u1, 300], [u3, 0]]);
  assert.deepEqual([...parts.get("node-b")!.userReadSeqs], [[u2, 0]]);
  assert.equal(parts.get("node-b")!.messageSeq, 300);
});

/**
 * The golden bytes, by hand: version 01; tenant 16 × 0x11; id length 9 and "g1____cmd"
 * (67 31 5f 5f 5f 5f 63 6d 64); type 02; seq 300 = 0b10_0101100 → ac 02; active 1,000,000 =
 * 61·128² + 4·128 + 64 → c0 84 3d; count 02; then the users sorted: 0x22… (read 300 → ac 02),
 * 0xaa… (read 0 → 00).
 */
const GOLDEN = [
  "01", "11".repeat(16), "09", "6731" + "5f".repeat(4) + "636d64", "02", "ac02", "c0843d", "02",
  "22".repeat(16), "ac02", "aa".repeat(16), "00",
].join("");

test("codec: golden bytes, the same whatever the map's insertion order; decode gives the intent back", () => {
  const a = encodeIntent(intent());
  const b = encodeIntent(intent({ userReadSeqs: new Map([[u1, 300], [u2, 0]]) }));
  assert.equal(Buffer.from(a).toString("hex"), GOLDEN);
  assert.equal(Buffer.from(b).toString("hex"), GOLDEN);
  const back = decodeIntent(a);
  assert.deepEqual({ ...back, userReadSeqs: [...back.userReadSeqs].sort() }, { ...intent(), userReadSeqs: [...intent().userReadSeqs].sort() });
});

test("codec: 2^53-1 is seven 0xff and 0x0f; beyond it, bad versions, truncation, trailing bytes, unsorted users and read > seq are rejected", () => {
  const big = encodeIntent(intent({ messageSeq: Number.MAX_SAFE_INTEGER, userReadSeqs: new Map([[u1, 0]]) }));
  assert.ok(Buffer.from(big).toString("hex").includes("ff".repeat(7) + "0f"));
  assert.equal(decodeIntent(big).messageSeq, Number.MAX_SAFE_INTEGER);
  const g = Buffer.from(GOLDEN, "hex");
  const bad = (hex: string) => assert.throws(() => decodeIntent(Buffer.from(hex, "hex")), InvalidArgumentError, hex.slice(0, 40));
  bad("02" + GOLDEN.slice(2));
  bad(GOLDEN.slice(0, GOLDEN.length - 2));
  bad(GOLDEN + "00");
  bad("");
  // users swapped: the bytes are not canonical
  const user22 = "22".repeat(16) + "ac02";
  const userAa = "aa".repeat(16) + "00";
  bad(GOLDEN.replace(user22 + userAa, userAa + user22));
  // the 0xaa… user's read 0 → 0xff 0x02 (383 > 300)
  bad(GOLDEN.slice(0, GOLDEN.length - 2) + "ff02");
  // seq 2^53 = 0x80 × 7, 0x10
  bad(GOLDEN.replace("02ac02c0843d", "02" + "80".repeat(7) + "10" + "c0843d"));
  assert.equal(g.length, 69);
});
