import { hexToUuid, InternalError, type UuidHex } from "../base/index.js";
import { defineScript, luaStatus, statusName, type Arg } from "../lua/index.js";
import type { ConversationKeys } from "./keys.js";

/**
 * The conversation module's scripts (lua/conversation/), each declared once: KEYS by name in the
 * order of the script's header, ARGV from named fields, the reply decoded. The headers document
 * every key, argument and return value.
 */

/** A member's state letter in the member table: Active, Left, Removed; "" never a member. */
export type MemberStateLetter = "A" | "L" | "R" | "";

const leftAtOf = (v: unknown): number | null => (Number(v) < 0 ? null : Number(v));

export const createGroupScript = defineScript({
  name: "createGroup",
  keys: ["grpmeta", "grpmembers"] satisfies (keyof ConversationKeys)[],
  args: (a: { owner: UuidHex; createdAt: number; members: readonly UuidHex[] }) => [a.owner, a.createdAt, ...a.members],
  reply: (r) => (luaStatus(r) === "GROUP_EXISTS" ? { status: "GROUP_EXISTS" as const } : { status: "OK" as const, version: Number(r[1]), memberCount: Number(r[2]) }),
});

export interface CommitMessage {
  clientMessageId: UuidHex;
  sender: UuidHex;
  /** The history entry after its seq (history.ts encodeHistoryRest). */
  rest: string;
}

export type CommitOutcome =
  | { status: "OK"; conversationSeq: number; messageId: UuidHex }
  | { status: "DUPLICATE"; conversationSeq: number; messageId: UuidHex | "" }
  | { status: "MEMBERSHIP_CHANGED"; currentVersion: string }
  /** conversationSeq: the message that holds the id (0 when it is earlier in the same batch). */
  | { status: "IDEMPOTENCY_CONFLICT"; conversationSeq: number }
  | { status: "SENDER_NOT_MEMBER" | "GROUP_NOT_FOUND" }
  /** The group was dissolved at conversation_seq dissolvedAt: nothing of the batch was written. */
  | { status: "GROUP_DISSOLVED"; dissolvedAt: number }
  /** A status this code does not know: that message fails, the others of the batch stand. */
  | { status: "UNEXPECTED"; code: string };

export const commitMessagesScript = defineScript({
  name: "commitMessages",
  keys: ["idem", "grpmeta", "grpmembers", "cseq", "hist", "outbox", "vpending", "unreadidx"] satisfies (keyof ConversationKeys)[],
  args: (a: { version: string; outboxRef: string; messages: readonly CommitMessage[] }) => {
    const out: Arg[] = [a.version, a.outboxRef];
    for (const m of a.messages) out.push(m.clientMessageId, m.sender, m.rest);
    return out;
  },
  /** One outcome per message, in ARGV order. */
  reply: (r): CommitOutcome[] => {
    if ((r.length - 1) % 3 !== 0) throw new InternalError(`commitMessages answered ${r.length} items`);
    const out: CommitOutcome[] = [];
    for (let i = 1; i < r.length; i += 3) {
      const status = statusName(r[i]);
      const seq = Number(r[i + 1]);
      const id = String(r[i + 2]) as UuidHex | "";
      switch (status) {
        case "OK": out.push({ status, conversationSeq: seq, messageId: id as UuidHex }); break;
        case "DUPLICATE": out.push({ status, conversationSeq: seq, messageId: id }); break;
        case "MEMBERSHIP_CHANGED": out.push({ status, currentVersion: String(r[i + 1]) }); break;
        case "IDEMPOTENCY_CONFLICT": out.push({ status, conversationSeq: seq }); break;
        case "GROUP_DISSOLVED": out.push({ status, dissolvedAt: seq }); break;
        case "SENDER_NOT_MEMBER":
        case "GROUP_NOT_FOUND": out.push({ status }); break;
        default: out.push({ status: "UNEXPECTED", code: String(r[i]) });
      }
    }
    return out;
  },
});

export type MembershipApplyOutcome =
  | { status: "OK" | "DUPLICATE"; conversationSeq: number; messageId: UuidHex | ""; version: number; memberCount: number; audienceSize: number }
  | { status: "MEMBERSHIP_CHANGED"; currentVersion: number }
  | { status: "GROUP_DISSOLVED"; dissolvedAt: number }
  | { status: "GROUP_NOT_FOUND" | "PLAN_STALE" | "OWNER_IMMUTABLE" }
  | { status: "GROUP_FULL"; memberCount: number; maxMembers: number };

export const applyMembershipScript = defineScript({
  name: "applyMembership",
  keys: ["idem", "grpmeta", "grpmembers", "grpdeltas", "vpending", "cseq", "hist", "commits", "outbox"] satisfies (keyof ConversationKeys)[],
  args: (a: { idempotencyId: string; version: number; op: number; rest: string; outboxRef: string; broadcastMaxMembers: number; maxMembers: number; targets: readonly UuidHex[] }) =>
    [a.idempotencyId, a.version, a.op, a.rest, a.outboxRef, a.broadcastMaxMembers, a.maxMembers, ...a.targets],
  reply: (r): MembershipApplyOutcome => {
    const status = luaStatus(r);
    switch (status) {
      case "OK":
      case "DUPLICATE":
        return { status, conversationSeq: Number(r[1]), messageId: String(r[2]) as UuidHex | "", version: Number(r[3]), memberCount: Number(r[4]), audienceSize: Number(r[5]) };
      case "MEMBERSHIP_CHANGED":
        return { status, currentVersion: Number(r[1]) };
      case "GROUP_DISSOLVED":
        return { status, dissolvedAt: Number(r[1]) };
      case "GROUP_NOT_FOUND":
      case "PLAN_STALE":
      case "OWNER_IMMUTABLE":
        return { status };
      case "GROUP_FULL":
        return { status, memberCount: Number(r[1]), maxMembers: Number(r[2]) };
      default:
        throw new InternalError(`applyMembership: unexpected ${status}`);
    }
  },
});

export type TransferOwnerOutcome =
  | { status: "OK"; version: number; previousOwner: UuidHex }
  | { status: "DUPLICATE" | "MEMBERSHIP_CHANGED"; version: number }
  | { status: "GROUP_NOT_FOUND" }
  | { status: "GROUP_DISSOLVED"; dissolvedAt: number }
  | { status: "PLAN_STALE" };

export const transferOwnerScript = defineScript({
  name: "transferOwner",
  keys: ["grpmeta", "grpmembers", "grpdeltas", "vpending"] satisfies (keyof ConversationKeys)[],
  args: (a: { version: number; owner: UuidHex }) => [a.version, a.owner],
  reply: (r): TransferOwnerOutcome => {
    const status = luaStatus(r);
    switch (status) {
      case "OK": return { status, version: Number(r[1]), previousOwner: String(r[2]) as UuidHex };
      case "DUPLICATE":
      case "MEMBERSHIP_CHANGED": return { status, version: Number(r[1]) };
      case "GROUP_DISSOLVED": return { status, dissolvedAt: Number(r[1]) };
      case "GROUP_NOT_FOUND":
      case "PLAN_STALE": return { status };
      default: throw new InternalError(`transferOwner: unexpected ${status}`);
    }
  },
});

export type DissolveOutcome =
  | { status: "OK" | "DUPLICATE"; dissolvedAt: number; messageId: UuidHex | ""; version: number }
  | { status: "MEMBERSHIP_CHANGED"; version: number }
  | { status: "GROUP_NOT_FOUND" };

export const dissolveGroupScript = defineScript({
  name: "dissolveGroup",
  keys: ["grpmeta", "cseq", "hist", "vpending", "grpdeltas", "outbox"] satisfies (keyof ConversationKeys)[],
  args: (a: { version: number; rest: string; outboxRef: string }) => [a.version, a.rest, a.outboxRef],
  reply: (r): DissolveOutcome => {
    const status = luaStatus(r);
    switch (status) {
      case "OK":
      case "DUPLICATE": return { status, dissolvedAt: Number(r[1]), messageId: String(r[2]) as UuidHex | "", version: Number(r[3]) };
      case "MEMBERSHIP_CHANGED": return { status, version: Number(r[1]) };
      case "GROUP_NOT_FOUND": return { status };
      default: throw new InternalError(`dissolveGroup: unexpected ${status}`);
    }
  },
});

export const readPlanScript = defineScript({
  name: "readPlan",
  keys: ["grpmeta", "grpmembers"] satisfies (keyof ConversationKeys)[],
  args: (a: { targets: readonly UuidHex[] }) => a.targets,
  reply: (r) => luaStatus(r) === "GROUP_NOT_FOUND"
    ? { status: "GROUP_NOT_FOUND" as const }
    : {
      status: "OK" as const,
      version: Number(r[1]),
      owner: hexToUuid(String(r[2])),
      memberCount: Number(r[3]),
      /** The group's dissolved_at J; null while it is not dissolved. */
      dissolvedAt: Number(r[4]) > 0 ? Number(r[4]) : null,
      /** Each target's state, in ARGV order. */
      states: r.slice(5).map((s) => String(s) as MemberStateLetter),
    },
});

/** The user's interval as readHistory and conversationSummary report it. */
export interface VisibleInterval {
  joinedAt: number;
  leftAt: number | null;
  state: Exclude<MemberStateLetter, "">;
}

export const readHistoryScript = defineScript({
  name: "readHistory",
  keys: ["grpmembers", "hist", "grpmeta"] satisfies (keyof ConversationKeys)[],
  args: (a: { user: UuidHex; after: number; limit: number }) => [a.user, a.after, a.limit],
  reply: (r) => luaStatus(r) === "NOT_VISIBLE"
    ? { status: "NOT_VISIBLE" as const }
    : {
      status: "OK" as const,
      interval: { joinedAt: Number(r[1]), leftAt: leftAtOf(r[2]), state: String(r[3]) } as VisibleInterval,
      earliestAvailableConversationSeq: Number(r[4]),
      entries: r.slice(5).map(String),
    },
});

export type SummaryReply =
  | { status: "NOT_VISIBLE" }
  | { status: "OK"; interval: VisibleInterval; readConversationSeq: number; headEntry: string | null; unread: number; unreadExact: boolean };

export const conversationSummaryScript = defineScript({
  name: "conversationSummary",
  keys: ["grpmembers", "hist", "readseq", "grpmeta", "unreadidx"] satisfies (keyof ConversationKeys)[],
  args: (a: { user: UuidHex; unreadPreciseLimit: number; hiddenBefore: number; deletedBefore: number }) =>
    [a.user, a.unreadPreciseLimit, a.hiddenBefore, a.deletedBefore],
  reply: (r): SummaryReply => {
    if (luaStatus(r) === "NOT_VISIBLE") return { status: "NOT_VISIBLE" };
    const head = String(r[5]);
    return {
      status: "OK",
      interval: { joinedAt: Number(r[1]), leftAt: leftAtOf(r[2]), state: String(r[3]) as VisibleInterval["state"] },
      readConversationSeq: Number(r[4]),
      headEntry: head === "" ? null : head,
      unread: Number(r[6]),
      unreadExact: Number(r[7]) === 1,
    };
  },
});

export const markReadScript = defineScript({
  name: "markRead",
  keys: ["grpmembers", "hist", "readseq", "grpmeta"] satisfies (keyof ConversationKeys)[],
  args: (a: { user: UuidHex; seq: number }) => [a.user, a.seq],
  reply: (r) => (luaStatus(r) === "NOT_VISIBLE" ? { status: "NOT_VISIBLE" as const } : { status: "OK" as const, readConversationSeq: Number(r[1]) }),
});


export type AnchorEventReply =
  | { status: "OK" | "DUPLICATE"; eventSeq: number; eventMessageId: string }
  | { status: "GROUP_NOT_FOUND" | "SENDER_NOT_MEMBER" | "NO_SUCH_MESSAGE" | "NOT_AUTHOR" | "MESSAGE_RECALLED" }
  | { status: "GROUP_DISSOLVED"; dissolvedAt: number }
  | { status: "WINDOW_PASSED"; sentAt: number }
  | { status: "IDEMPOTENCY_CONFLICT"; conversationSeq: number };

/** Step 1 of a recall or an edit: the event into the log (lua/conversation/commitAnchorEvent-7.lua). */
export const commitAnchorEventScript = defineScript({
  name: "commitAnchorEvent",
  keys: ["idem", "grpmeta", "grpmembers", "cseq", "hist", "outbox", "vpending"] satisfies (keyof ConversationKeys)[],
  args: (a: { mode: "R" | "E"; clientMessageId: string; actor: string; own: boolean; nowMs: number; windowMs: number; targetSeq: number; rest: string; outboxRef: string }) => [
    a.mode, a.clientMessageId, a.actor, a.own ? "1" : "0", a.nowMs, a.windowMs, a.targetSeq, a.rest, a.outboxRef,
  ],
  reply: (r): AnchorEventReply => {
    const status = luaStatus(r);
    switch (status) {
      case "OK": case "DUPLICATE": return { status, eventSeq: Number(r[1]), eventMessageId: String(r[2] ?? "") };
      case "GROUP_NOT_FOUND": case "SENDER_NOT_MEMBER": case "NO_SUCH_MESSAGE": case "NOT_AUTHOR": case "MESSAGE_RECALLED": return { status };
      case "GROUP_DISSOLVED": return { status, dissolvedAt: Number(r[1]) };
      case "WINDOW_PASSED": return { status, sentAt: Number(r[1]) };
      case "IDEMPOTENCY_CONFLICT": return { status, conversationSeq: Number(r[1]) };
      default: throw new InternalError(`commitAnchorEvent: unexpected status ${status}`);
    }
  },
});

/**
 * Step 2 of a recall or an edit: the target's state, and a recall's deletion of the target's
 * reactions (lua/conversation/applyAnchorEvent-4.lua). `rxwho` is the target's reactionWhoKey.
 */
export const applyAnchorEventScript = defineScript({
  name: "applyAnchorEvent",
  keys: ["hist", "unreadidx", "rxsum", "rxwho"] satisfies (keyof ConversationKeys | "rxwho")[],
  args: (a: { eventSeq: number; targetSeq: number }) => [a.eventSeq, a.targetSeq],
  reply: (r): "applied" | "already" | "recalled" => {
    const code = Number(r[0]);
    if (code === 0) return "applied";
    if (code === 1) return "already";
    if (code === 2) return "recalled";
    throw new InternalError(`applyAnchorEvent: unexpected reply ${String(r[0])}`);
  },
});
