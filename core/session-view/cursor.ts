/**
 * The page cursor (spec 002 §6.2): base64url(protobuf PageCursor), the message of
 * proto/qim/session/v1/page_cursor.proto, written and read with @bufbuild/protobuf's wire codec
 * (the project's protobuf runtime; core loads no generated admin-API code). A cursor that does not
 * decode to exactly that message is INVALID_ARGUMENT(cursor): no guessing at a damaged one.
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { bytesToUuid, InvalidArgumentError, uuidToBytes, type Uuid } from "../base/index.js";
import { ZONE, type SortKey, type Zone } from "./order.js";

export interface PageCursor extends SortKey {
  snapshotRevision: number;
}

const NO_ACTIVITY = new Uint8Array(16);
const HEX32 = /^[0-9a-f]{32}$/;

/** last_activity_id as the rows hold it (32 lowercase hex of the message id; "" when none) to its 16 bytes. */
function activityBytes(id: string): Uint8Array {
  if (id === "") return NO_ACTIVITY;
  if (!HEX32.test(id)) throw new Error(`last_activity_id ${JSON.stringify(id)} is not a message id`);
  return Buffer.from(id, "hex");
}

export function encodeCursor(c: PageCursor): string {
  const w = new BinaryWriter();
  w.tag(1, WireType.Varint).uint64(c.snapshotRevision);
  w.tag(2, WireType.Varint).int32(c.zone);
  if (c.zone === ZONE.PINNED) w.tag(3, WireType.Varint).uint32(c.pinRank);
  w.tag(4, WireType.LengthDelimited).bytes(activityBytes(c.lastActivityId));
  w.tag(5, WireType.LengthDelimited).bytes(uuidToBytes(c.conversation as Uuid));
  return Buffer.from(w.finish()).toString("base64url");
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

function bad(why: string): never {
  throw new InvalidArgumentError("cursor", `not a cursor of this list (${why}); start again without --cursor`);
}

export function decodeCursor(text: string): PageCursor {
  if (!BASE64URL.test(text)) bad("not base64url");
  const bytes = Buffer.from(text, "base64url");
  if (bytes.toString("base64url") !== text) bad("not canonical base64url");
  let revision: bigint | undefined;
  let zone: number | undefined;
  let pinRank = 0;
  let activity: Uint8Array | undefined;
  let conversation: Uint8Array | undefined;
  try {
    const r = new BinaryReader(bytes);
    while (r.pos < r.len) {
      const [field, wire] = r.tag();
      if (field === 1 && wire === WireType.Varint) revision = BigInt(r.uint64());
      else if (field === 2 && wire === WireType.Varint) zone = r.int32();
      else if (field === 3 && wire === WireType.Varint) pinRank = r.uint32();
      else if (field === 4 && wire === WireType.LengthDelimited) activity = r.bytes();
      else if (field === 5 && wire === WireType.LengthDelimited) conversation = r.bytes();
      else bad(`unknown field ${field}`);
    }
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw err;
    bad("truncated");
  }
  if (revision === undefined || revision < 1n || revision > BigInt(Number.MAX_SAFE_INTEGER)) bad("no snapshot revision");
  if (zone !== ZONE.PINNED && zone !== ZONE.NORMAL) bad("no zone");
  if (activity?.length !== 16 || conversation?.length !== 16) bad("ids are not 16 bytes");
  const lastActivityId = Buffer.from(activity).equals(NO_ACTIVITY) ? "" : Buffer.from(activity).toString("hex");
  return { snapshotRevision: Number(revision), zone: zone as Zone, pinRank: zone === ZONE.PINNED ? pinRank : 0, lastActivityId, conversation: bytesToUuid(conversation) };
}
