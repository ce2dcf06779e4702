import { InvalidArgumentError } from "../base/index.js";
import { hexToUuid, splitHexIds, uuidToHex, type Uuid } from "../base/index.js";
import { decodeGroupEventPayload, GROUP_EVENT_CUSTOM_TYPE, type GroupEventBody } from "./group-event.js";
import { decodeMembershipPayload, MEMBERSHIP_CUSTOM_TYPE, type MembershipEventBody } from "./membership-event.js";

/**
 * A history entry, as stored in `hist` (score = conversation_seq):
 *   "seq|messageId|sender|kind|countsUnread|createdAt|contentType|base64(payload)[|mentions]"
 * kind N (normal) or C (control). The Lua scripts read fields 3 (sender) and 5 (countsUnread)
 * for the definitional unread, and field 9 (the mentioned users, concatenated 32-hex ids) for
 * mention counts (spec 002 §3.2), so this layout is part of the scripts' contract. Field 9 is
 * written only when a message names someone: entries without it (all older ones) decode as
 * mentioning nobody.
 */
export interface HistoryRecord {
  conversationSeq: number;
  messageId: Uuid;
  senderId: Uuid;
  kind: "normal" | "control";
  countsUnread: boolean;
  createdAt: number;
  contentType: string;
  payload: Uint8Array;
  /** The decoded body of a `qim.membership.v1` control message. */
  membership?: MembershipEventBody;
  /** The decoded body of a `qim.group.v1` control message (a dissolve). */
  groupEvent?: GroupEventBody;
  /** Users the message mentions (spec 002 §3.2 mention_count); absent when none. */
  mentions?: Uuid[];
}

const CONTENT_TYPE_RE = /^[A-Za-z0-9._/+-]{1,64}$/;

export function validateContentType(contentType: string): string {
  if (!CONTENT_TYPE_RE.test(contentType)) {
    throw new InvalidArgumentError("contentType", "contentType must be 1-64 characters of A-Z a-z 0-9 . _ / + -");
  }
  return contentType;
}

/** The entry without its seq, which the committing script allocates and prepends. */
export function encodeHistoryRest(r: Omit<HistoryRecord, "conversationSeq" | "membership" | "groupEvent">): string {
  const fields = [
    uuidToHex(r.messageId),
    uuidToHex(r.senderId),
    r.kind === "control" ? "C" : "N",
    r.countsUnread ? "1" : "0",
    String(r.createdAt),
    r.contentType,
    Buffer.from(r.payload).toString("base64"),
  ];
  if (r.mentions && r.mentions.length > 0) fields.push(r.mentions.map(uuidToHex).join(""));
  return fields.join("|");
}

export function decodeHistoryEntry(entry: string): HistoryRecord {
  const f = entry.split("|");
  if (f.length !== 8 && f.length !== 9) throw new Error(`malformed history entry: ${entry.slice(0, 80)}`);
  const payload = new Uint8Array(Buffer.from(f[7]!, "base64"));
  const rec: HistoryRecord = {
    conversationSeq: Number(f[0]),
    messageId: hexToUuid(f[1]!),
    senderId: hexToUuid(f[2]!),
    kind: f[3] === "C" ? "control" : "normal",
    countsUnread: f[4] === "1",
    createdAt: Number(f[5]),
    contentType: f[6]!,
    payload,
  };
  if (f.length === 9 && f[8] !== "") rec.mentions = splitHexIds(f[8]!);
  if (rec.kind === "control" && rec.contentType === MEMBERSHIP_CUSTOM_TYPE) rec.membership = decodeMembershipPayload(payload);
  if (rec.kind === "control" && rec.contentType === GROUP_EVENT_CUSTOM_TYPE) rec.groupEvent = decodeGroupEventPayload(payload);
  return rec;
}
