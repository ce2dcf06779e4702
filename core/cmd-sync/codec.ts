/**
 * The intent's binary form (node RPC PushIntents, spec 001 cmdsync_codec): deterministic — the
 * users are sorted before encoding, so one intent has one byte string whatever its map's
 * insertion order. Written with @bufbuild/protobuf's wire primitives (the engine's protobuf
 * runtime, as session-view's cursor), without protobuf tags:
 *
 *   u8 version (CMD_INTENT_CODEC_VERSION = 1)
 *   16 bytes tenant UUID
 *   uvarint length, channel id bytes (ASCII)
 *   uvarint channel type
 *   uvarint message seq
 *   uvarint active at (ms)
 *   uvarint user count, then per user in ascending UUID order: 16 bytes UUID, uvarint read seq
 *
 * decodeIntent accepts only the canonical bytes (re-encodes and compares) of a valid intent.
 */
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import { bytesToUuid, InvalidArgumentError, uuidToBytes, type Uuid } from "../base/index.js";
import { validateIntent } from "./intent.js";
import type { ConversationIntent } from "./types.js";

export const CMD_INTENT_CODEC_VERSION = 1;

export function encodeIntent(i: ConversationIntent): Uint8Array {
  validateIntent(i);
  return encodeValid(i);
}

/** The bytes of an intent already validated (decodeIntent's canonical-form check re-encodes without validating twice). */
function encodeValid(i: ConversationIntent): Uint8Array {
  const w = new BinaryWriter();
  w.raw(Uint8Array.of(CMD_INTENT_CODEC_VERSION));
  w.raw(uuidToBytes(i.tenant));
  w.string(i.channel.channelId);
  w.uint32(i.channel.channelType);
  w.uint64(i.messageSeq);
  w.uint64(i.activeAt);
  const users = [...i.userReadSeqs.keys()].sort();
  w.uint32(users.length);
  for (const u of users) {
    w.raw(uuidToBytes(u));
    w.uint64(i.userReadSeqs.get(u)!);
  }
  return w.finish();
}

function safe(v: bigint | string, field: string): number {
  const n = BigInt(v);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError(field, `${field} is beyond 2^53-1`);
  return Number(n);
}

function fixed16(r: BinaryReader, bytes: Uint8Array): Uint8Array {
  if (r.pos + 16 > r.len) throw new RangeError("premature EOF");
  const out = bytes.subarray(r.pos, r.pos + 16);
  r.pos += 16;
  return out;
}

export function decodeIntent(b: Uint8Array): ConversationIntent {
  let intent: ConversationIntent;
  try {
    if (b.length < 1 || b[0] !== CMD_INTENT_CODEC_VERSION) throw new InvalidArgumentError("intent", `unknown intent codec version ${b[0] ?? "(empty)"}`);
    const r = new BinaryReader(b);
    r.pos = 1;
    const tenant = bytesToUuid(fixed16(r, b));
    const channelId = r.string();
    const channelType = r.uint32();
    const messageSeq = safe(r.uint64(), "messageSeq");
    const activeAt = safe(r.uint64(), "activeAt");
    const count = r.uint32();
    if (count > b.length) throw new RangeError("user count beyond the input");
    const userReadSeqs = new Map<Uuid, number>();
    for (let k = 0; k < count; k++) {
      const user = bytesToUuid(fixed16(r, b));
      userReadSeqs.set(user, safe(r.uint64(), "userReadSeqs"));
    }
    if (r.pos !== r.len) throw new RangeError(`${r.len - r.pos} trailing bytes`);
    intent = { tenant, channel: { channelId, channelType }, messageSeq, activeAt, userReadSeqs };
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw err;
    throw new InvalidArgumentError("intent", `undecodable intent: ${(err as Error).message}`);
  }
  validateIntent(intent);
  const again = encodeValid(intent);
  if (again.length !== b.length || again.some((x, k) => x !== b[k])) throw new InvalidArgumentError("intent", "intent bytes are not canonical (users unsorted, repeated, or non-minimal varints)");
  return intent;
}
