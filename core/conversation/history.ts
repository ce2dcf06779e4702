import { InvalidArgumentError } from "../base/index.js";
import { hexToUuid, splitHexIds, uuidToHex, type Uuid } from "../base/index.js";
import { decodeGroupEventPayload, GROUP_EVENT_CUSTOM_TYPE, type GroupEventBody } from "./group-event.js";
import { decodeMembershipPayload, MEMBERSHIP_CUSTOM_TYPE, MembershipOp, type MembershipEventBody } from "./membership-event.js";

/**
 * THE layout of a history entry (a member of the conversation's `hist` zset, score =
 * conversation_seq), the twin of lua/includes/histRecord.lua: every TypeScript reader decodes an
 * entry here, every writer encodes one here (docs/architecture.md "The message record").
 * Version 2 (issue 25): a header of named fields, then the opaque body after the first "\n":
 *   seq "|v2" { "|" name "=" value } "\n" base64(payload)
 * Readers find the header's end and never walk the body; a field is added by naming it in
 * HIST_FIELD (and in the Lua include) without touching any other reader, and a field a reader
 * does not know survives its decode + encode (`otherFields`).
 * Version 1 (before issue 25, positional, still read):
 *   seq|messageId|sender|kind|countsUnread|createdAt|contentType|base64(payload)[|mentions]
 */
export const HISTORY_RECORD_VERSION = 2;

/**
 * The conversation_seq of a message that is in no log (spec 003 §2.1: an ephemeral type's, pushed to
 * online devices only): its entry carries it, and its audience is the group's ACTIVE members at the
 * moment it is pushed (core/delivery), not the members visible at a seq.
 */
export const TRANSIENT_SEQ = 0;

/**
 * The header fields' names as stored (short: they are repeated in every entry), by the spec's
 * name of each. lua/includes/histRecord.lua HIST holds the same names (test/lua/histRecord.test.ts).
 */
export const HIST_FIELD = {
  /** message_id, 32 hex. */
  messageId: "id",
  /** sender_id, 32 hex. */
  senderId: "from",
  /** N normal, C control. */
  kind: "kind",
  /** counts_unread, 1 or 0. */
  countsUnread: "cu",
  /** created_at, ms. */
  createdAt: "at",
  /** content_type. */
  contentType: "ct",
  /** The mentioned users, concatenated 32-hex ids (spec 002 §3.2); absent when none. */
  mentions: "men",
  /** A custom type's message (issue 29): the tenant registry's version its send applied; absent for an ordinary message. */
  registryVersion: "rv",
  /** A custom type's message: the type's schema_version at the send. */
  schemaVersion: "sv",
  /** timeline_visible of the message's type: 0 when clients keep it out of the timeline; absent: visible. */
  timelineVisible: "tl",
  /** affects_session_order: 0 when the record does not move its conversation in the list (an anchor_target event); absent: it does. */
  order: "ord",
  /** A message's state (spec 003 §2.3): R recalled, E edited; absent: as sent. */
  state: "st",
  /** recall_event_conversation_seq: the seq of the recall event in the log; set only after the event is (a non-empty field == "the event is in the log"). */
  recallEventSeq: "rcs",
  /** The seq of the last edit event applied to the message. */
  editEventSeq: "ecs",
  /** An anchor_target event's target_conversation_seq. */
  targetSeq: "tgt",
  /** target_sender_id (32 hex), copied from the target when the event is written (spec 002 §3.5). */
  targetSenderId: "tfrom",
  /** target_flags.counts_unread of the target, 1 or 0. */
  targetCountsUnread: "tcu",
  /** The target's mentioned users (concatenated 32 hex); absent when none. */
  targetMentions: "tmen",
  /** The target's message_id (32 hex). */
  targetMessageId: "tid",
} as const;

/** Version 1's fields before the body, in their positions after the seq. */
const V1_FIELDS = [HIST_FIELD.messageId, HIST_FIELD.senderId, HIST_FIELD.kind, HIST_FIELD.countsUnread, HIST_FIELD.createdAt, HIST_FIELD.contentType];
const KNOWN_FIELDS: ReadonlySet<string> = new Set(Object.values(HIST_FIELD));
/** A header value never holds one of these (ids, numbers, flags, content types): no escaping. */
const FIELD_NAME_RE = /^[A-Za-z0-9_]+$/;
const FIELD_VALUE_BAD_RE = /[|=\n]/;
const V2_PREFIX_RE = /^(\d*)\|?v(\d+)/;

/**
 * An entry's parts, header fields by name (in the order stored) and the body as stored (base64),
 * without decoding the body: what a reader of a few fields needs. `conversationSeq` is null for
 * an entry without its seq (a writer's rest).
 */
export interface HistoryEntryParts {
  conversationSeq: number | null;
  version: number;
  fields: Map<string, string>;
  body: string;
}

function malformed(entry: string): Error {
  return new Error(`malformed history entry: ${entry.slice(0, 80)}`);
}

const partsByRecord = new WeakMap<object, HistoryEntryParts>();

/**
 * decodeHistoryParts of a dispatch record's entry, made once per record object: the relay hands
 * the same records to the conversation list, the session projection and delivery, which each read
 * a few fields of it. The parts are shared: a caller must not change them.
 */
export function recordHistoryParts(record: { readonly entry: string }): HistoryEntryParts {
  let parts = partsByRecord.get(record);
  if (!parts) {
    parts = decodeHistoryParts(record.entry);
    partsByRecord.set(record, parts);
  }
  return parts;
}

/**
 * The users a leave or removal CONTROL entry takes out of the group, from the entry's parts (null
 * for every other entry, a join included): they get the event but may not see it (seq = left_at),
 * so it neither ranks their conversation nor is pushed to them.
 */
export function leavingUsersOf(parts: Pick<HistoryEntryParts, "fields" | "body">): Set<Uuid> | null {
  if (parts.fields.get(HIST_FIELD.kind) !== "C" || parts.fields.get(HIST_FIELD.contentType) !== MEMBERSHIP_CUSTOM_TYPE) return null;
  const m = decodeMembershipPayload(new Uint8Array(Buffer.from(parts.body, "base64")));
  return m.op === MembershipOp.JOIN ? null : new Set(m.users);
}

const ANCHOR_TYPES_RE = /\|ct=qim\.(recall|edit)\.v1[|\n]/;

/**
 * The target seq of a recall or edit event's entry; null for every other entry. One search of the
 * entry's text first: the relay asks this of every record it dispatches.
 */
export function anchorEventSeqOf(entry: string): number | null {
  const nl = entry.indexOf("\n");
  const header = nl < 0 ? entry : entry.slice(0, nl + 1);
  if (!ANCHOR_TYPES_RE.test(header)) return null;
  const t = decodeHistoryParts(entry).fields.get(HIST_FIELD.targetSeq);
  return t === undefined ? null : Number(t);
}

/** Splits an entry or a rest of either version; reads the header and slices the body. */
export function decodeHistoryParts(entry: string): HistoryEntryParts {
  const fields = new Map<string, string>();
  const v2 = V2_PREFIX_RE.exec(entry);
  if (v2) {
    let nl = entry.indexOf("\n", v2[0].length);
    if (nl < 0) nl = entry.length;
    const header = entry.slice(v2[0].length, nl);
    if (header !== "") {
      if (header[0] !== "|") throw malformed(entry);
      for (const field of header.slice(1).split("|")) {
        const eq = field.indexOf("=");
        if (eq <= 0) throw malformed(entry);
        fields.set(field.slice(0, eq), field.slice(eq + 1));
      }
    }
    const version = Number(v2[2]);
    // a new version is made only for a change this code would misread: refuse it, never guess
    if (version > HISTORY_RECORD_VERSION) throw new Error(`history entry version ${version} is newer than this code reads (${HISTORY_RECORD_VERSION}): ${entry.slice(0, 80)}`);
    return { conversationSeq: v2[1] === "" ? null : Number(v2[1]), version, fields, body: entry.slice(nl + 1) };
  }
  // version 1: a rest's first field is its 32-hex message id, an entry's its (shorter) seq
  const f = entry.split("|");
  const seq = entry.indexOf("|") === 32 ? null : Number(f.shift());
  if (f.length !== 7 && f.length !== 8) throw malformed(entry);
  V1_FIELDS.forEach((name, i) => fields.set(name, f[i]!));
  if (f.length === 8) fields.set(HIST_FIELD.mentions, f[7]!);
  return { conversationSeq: seq, version: 1, fields, body: f[6]! };
}

/** An entry (a rest when conversationSeq is null) in the current version: known fields first, then the others in order. */
export function encodeHistoryParts(p: Omit<HistoryEntryParts, "version">): string {
  const out = [p.conversationSeq === null ? `v${HISTORY_RECORD_VERSION}` : `${p.conversationSeq}|v${HISTORY_RECORD_VERSION}`];
  const put = (name: string, value: string) => {
    if (!FIELD_NAME_RE.test(name) || FIELD_VALUE_BAD_RE.test(value)) throw new Error(`history entry field ${name} cannot hold ${JSON.stringify(value)}`);
    out.push(`${name}=${value}`);
  };
  for (const name of Object.values(HIST_FIELD)) {
    const v = p.fields.get(name);
    if (v !== undefined) put(name, v);
  }
  for (const [name, v] of p.fields) if (!KNOWN_FIELDS.has(name)) put(name, v);
  return `${out.join("|")}\n${p.body}`;
}

/**
 * A history entry decoded. kind N (normal) or C (control). The Lua scripts
 * read sender, counts_unread and mentions for the definitional unread and the mention counts
 * (spec 002 §3.2) through lua/includes/histRecord.lua.
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
  /** Header fields this code does not know (written by a newer one), kept for a rewrite; absent when none. */
  otherFields?: Map<string, string>;
  /** A custom type's message (issue 29): the registry version, the type's schema_version and timeline_visible its send applied. */
  custom?: CustomTypeStamp;
  /** The record does not move its conversation in the list (affects_session_order false: an anchor_target event). */
  orderNeutral?: boolean;
  /** Recalled (payload gone) or edited (payload replaced) since it was sent (spec 003 §2.3); absent: as sent. */
  state?: "recalled" | "edited";
  /** recall_event_conversation_seq: the recall event's seq (set once the event is in the log). */
  recallEventSeq?: number;
  /** The seq of the last edit event applied. */
  editEventSeq?: number;
  /** A recall or edit event's target (spec 002 §3.5's target_* fields, copied from the target when the event was written). */
  target?: AnchorTarget;
}

/** What an anchor_target event (a recall, an edit) carries of its target. */
export interface AnchorTarget {
  conversationSeq: number;
  messageId: Uuid;
  senderId: Uuid;
  countsUnread: boolean;
  mentions: Uuid[];
}

/** What the send of a custom type's message stamps on it from the tenant's registry (issue 29). */
export interface CustomTypeStamp {
  registryVersion: number;
  schemaVersion: number;
  timelineVisible: boolean;
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
  return encodeHistoryParts({ conversationSeq: null, ...recordParts(r) });
}

/** The whole entry at its seq (a rewrite of a record: a decode, a change, this). */
export function encodeHistoryEntry(r: Omit<HistoryRecord, "membership" | "groupEvent">): string {
  return encodeHistoryParts({ conversationSeq: r.conversationSeq, ...recordParts(r) });
}

function recordParts(r: Omit<HistoryRecord, "conversationSeq" | "membership" | "groupEvent">): { fields: Map<string, string>; body: string } {
  const fields = new Map<string, string>([
    [HIST_FIELD.messageId, uuidToHex(r.messageId)],
    [HIST_FIELD.senderId, uuidToHex(r.senderId)],
    [HIST_FIELD.kind, r.kind === "control" ? "C" : "N"],
    [HIST_FIELD.countsUnread, r.countsUnread ? "1" : "0"],
    [HIST_FIELD.createdAt, String(r.createdAt)],
    [HIST_FIELD.contentType, r.contentType],
  ]);
  if (r.mentions && r.mentions.length > 0) fields.set(HIST_FIELD.mentions, r.mentions.map(uuidToHex).join(""));
  if (r.orderNeutral) fields.set(HIST_FIELD.order, "0");
  if (r.state) fields.set(HIST_FIELD.state, r.state === "recalled" ? "R" : "E");
  if (r.recallEventSeq !== undefined) fields.set(HIST_FIELD.recallEventSeq, String(r.recallEventSeq));
  if (r.editEventSeq !== undefined) fields.set(HIST_FIELD.editEventSeq, String(r.editEventSeq));
  if (r.target) {
    fields.set(HIST_FIELD.targetSeq, String(r.target.conversationSeq));
    fields.set(HIST_FIELD.targetSenderId, uuidToHex(r.target.senderId));
    fields.set(HIST_FIELD.targetCountsUnread, r.target.countsUnread ? "1" : "0");
    if (r.target.mentions.length > 0) fields.set(HIST_FIELD.targetMentions, r.target.mentions.map(uuidToHex).join(""));
    fields.set(HIST_FIELD.targetMessageId, uuidToHex(r.target.messageId));
  }
  if (r.custom) {
    fields.set(HIST_FIELD.registryVersion, String(r.custom.registryVersion));
    fields.set(HIST_FIELD.schemaVersion, String(r.custom.schemaVersion));
    if (!r.custom.timelineVisible) fields.set(HIST_FIELD.timelineVisible, "0");
  }
  for (const [name, v] of r.otherFields ?? []) if (!KNOWN_FIELDS.has(name)) fields.set(name, v);
  return { fields, body: Buffer.from(r.payload).toString("base64") };
}

export function decodeHistoryEntry(entry: string): HistoryRecord {
  const p = decodeHistoryParts(entry);
  const f = p.fields;
  const messageId = f.get(HIST_FIELD.messageId);
  const senderId = f.get(HIST_FIELD.senderId);
  const contentType = f.get(HIST_FIELD.contentType);
  if (p.conversationSeq === null || messageId === undefined || senderId === undefined || contentType === undefined) throw malformed(entry);
  const payload = new Uint8Array(Buffer.from(p.body, "base64"));
  const rec: HistoryRecord = {
    conversationSeq: p.conversationSeq,
    messageId: hexToUuid(messageId),
    senderId: hexToUuid(senderId),
    kind: f.get(HIST_FIELD.kind) === "C" ? "control" : "normal",
    countsUnread: f.get(HIST_FIELD.countsUnread) === "1",
    createdAt: Number(f.get(HIST_FIELD.createdAt)),
    contentType,
    payload,
  };
  const mentions = f.get(HIST_FIELD.mentions);
  if (mentions) rec.mentions = splitHexIds(mentions);
  if (f.get(HIST_FIELD.order) === "0") rec.orderNeutral = true;
  const st = f.get(HIST_FIELD.state);
  if (st === "R") rec.state = "recalled";
  else if (st === "E") rec.state = "edited";
  const rcs = f.get(HIST_FIELD.recallEventSeq);
  if (rcs) rec.recallEventSeq = Number(rcs);
  const ecs = f.get(HIST_FIELD.editEventSeq);
  if (ecs) rec.editEventSeq = Number(ecs);
  const tgt = f.get(HIST_FIELD.targetSeq);
  if (tgt) {
    const tmen = f.get(HIST_FIELD.targetMentions);
    rec.target = {
      conversationSeq: Number(tgt), messageId: hexToUuid(f.get(HIST_FIELD.targetMessageId) ?? "0".repeat(32)), senderId: hexToUuid(f.get(HIST_FIELD.targetSenderId) ?? "0".repeat(32)),
      countsUnread: f.get(HIST_FIELD.targetCountsUnread) === "1", mentions: tmen ? splitHexIds(tmen) : [],
    };
  }
  const rv = f.get(HIST_FIELD.registryVersion);
  if (rv !== undefined) rec.custom = { registryVersion: Number(rv), schemaVersion: Number(f.get(HIST_FIELD.schemaVersion) ?? "1"), timelineVisible: f.get(HIST_FIELD.timelineVisible) !== "0" };
  if (rec.kind === "control" && rec.contentType === MEMBERSHIP_CUSTOM_TYPE) rec.membership = decodeMembershipPayload(payload);
  if (rec.kind === "control" && rec.contentType === GROUP_EVENT_CUSTOM_TYPE) rec.groupEvent = decodeGroupEventPayload(payload);
  const other = [...f].filter(([name]) => !KNOWN_FIELDS.has(name));
  if (other.length > 0) rec.otherFields = new Map(other);
  return rec;
}
