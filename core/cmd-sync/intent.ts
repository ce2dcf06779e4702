/**
 * The CMD conversation intent (spec 001 BuildConversationIntent): the one entry from a committed
 * CMD message to the owners' pending buffers, its validation (done before any local or remote
 * write) and its split by owner.
 */
import { InvalidArgumentError, type Uuid } from "../base/index.js";
import { CMD_CHANNEL_TYPE_MAX, CMD_CHANNEL_TYPE_MIN, type CmdMessage, isValidCommandChannelId, normaliseCommandChannel } from "../cmd-log/index.js";
import type { ConversationIntent } from "./types.js";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The intent of a committed CMD message, or null when it makes none: NoPersist, seq 0, or no
 * non-empty recipient. The channel id gets the suffix once; blank and repeated recipients fold;
 * the sender starts from the message's own seq only when it is a recipient, every other
 * recipient from 0. Active at is the message's timestamp, else `now()`.
 */
export function buildConversationIntent(msg: CmdMessage, now: () => number = Date.now): ConversationIntent | null {
  if (msg.noPersist || !Number.isSafeInteger(msg.messageSeq) || msg.messageSeq <= 0) return null;
  const users = new Map<Uuid, number>();
  for (const r of msg.recipients) {
    if (typeof r !== "string" || r.trim() === "") continue;
    users.set(r, r === msg.from ? msg.messageSeq : 0);
  }
  if (users.size === 0) return null;
  return {
    tenant: msg.tenant,
    channel: { channelId: normaliseCommandChannel(msg.channel.channelId), channelType: msg.channel.channelType },
    messageSeq: msg.messageSeq,
    activeAt: msg.timestampMs > 0 ? msg.timestampMs : now(),
    userReadSeqs: users,
  };
}

/**
 * Rejects a malformed intent (InvalidArgumentError naming the field) before anything is written:
 * seq 0, channel type 0 or above 255, a non-command or invalid channel id, no user, a blank or
 * non-UUID user key, a read seq that is negative or greater than the message seq.
 */
export function validateIntent(i: ConversationIntent): void {
  if (typeof i.tenant !== "string" || !UUID_RE.test(i.tenant)) throw new InvalidArgumentError("tenant", "intent tenant must be a UUID");
  const t = i.channel?.channelType;
  if (!Number.isInteger(t) || t < CMD_CHANNEL_TYPE_MIN || t > CMD_CHANNEL_TYPE_MAX) {
    throw new InvalidArgumentError("channelType", `intent channel type must be ${CMD_CHANNEL_TYPE_MIN}…${CMD_CHANNEL_TYPE_MAX}, got ${String(t)}`);
  }
  if (typeof i.channel.channelId !== "string" || !isValidCommandChannelId(i.channel.channelId)) {
    throw new InvalidArgumentError("channelId", `intent channel id must be a command channel id, got ${JSON.stringify(String(i.channel.channelId).slice(0, 64))}`);
  }
  if (!Number.isSafeInteger(i.messageSeq) || i.messageSeq <= 0) throw new InvalidArgumentError("messageSeq", "intent message seq must be ≥ 1");
  if (!Number.isSafeInteger(i.activeAt) || i.activeAt < 0) throw new InvalidArgumentError("activeAt", "intent active time must be ≥ 0");
  if (!(i.userReadSeqs instanceof Map) || i.userReadSeqs.size === 0) throw new InvalidArgumentError("userReadSeqs", "intent names no user");
  for (const [user, read] of i.userReadSeqs) {
    if (typeof user !== "string" || user.trim() === "") throw new InvalidArgumentError("userReadSeqs", "intent has a blank user key");
    if (!UUID_RE.test(user)) throw new InvalidArgumentError("userReadSeqs", `intent user ${JSON.stringify(String(user).slice(0, 64))} is not a UUID`);
    if (!Number.isSafeInteger(read) || read < 0) throw new InvalidArgumentError("userReadSeqs", `read seq of ${user} must be ≥ 0`);
    if (read > i.messageSeq) throw new InvalidArgumentError("userReadSeqs", `read seq ${read} of ${user} is above the message seq ${i.messageSeq}`);
  }
}

/** The intent cloned per owner of its users' slots (the router sends each group to its owner). */
export function splitIntentByOwner(i: ConversationIntent, ownerOf: (tenant: Uuid, user: Uuid) => string): Map<string, ConversationIntent> {
  const out = new Map<string, ConversationIntent>();
  for (const user of [...i.userReadSeqs.keys()].sort()) {
    const owner = ownerOf(i.tenant, user);
    let part = out.get(owner);
    if (!part) {
      part = { tenant: i.tenant, channel: { ...i.channel }, messageSeq: i.messageSeq, activeAt: i.activeAt, userReadSeqs: new Map() };
      out.set(owner, part);
    }
    part.userReadSeqs.set(user, i.userReadSeqs.get(user)!);
  }
  return out;
}
