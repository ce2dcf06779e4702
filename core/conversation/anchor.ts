import { createHash } from "node:crypto";
import {
  EDIT_SELF_WINDOW_MS, FailedPreconditionError, hexToUuid, IdempotencyConflictError, InvalidArgumentError, MODERATION_REASON_MAX_CHARS, newMessageId, NotFoundError,
  PermissionDeniedError, RECALL_SELF_WINDOW_MS, uuidToHex, type Uuid,
} from "../base/index.js";
import { failpoint, FAILPOINTS } from "../support/index.js";
import type { RedisStore } from "../store/index.js";
import { groupDissolvedError } from "./group-event.js";
import { encodeHistoryRest } from "./history.js";
import type { ConversationKeys } from "./keys.js";
import { ADMIN_ACTOR } from "./membership-event.js";
import { applyAnchorEventScript, commitAnchorEventScript } from "./scripts.js";

/** The built-in recall event's custom type (spec 003 §2.3; declared in core/registry's built-ins). */
export const RECALL_CUSTOM_TYPE = "qim.recall.v1";
/** The built-in edit event's custom type. */
export const EDIT_CUSTOM_TYPE = "qim.edit.v1";

export type AnchorAction = "recall" | "edit";

export interface AnchorResult {
  tenant: Uuid;
  group: Uuid;
  targetSeq: number;
  /** The event's own conversation_seq (a recall of a recalled message: its recall event's). */
  eventSeq: number;
  /** Null for an answer that found the recall done before (the event's id is not read again). */
  eventMessageId: Uuid | null;
  /** The event was written before (a retry, or a second recall). */
  duplicate: boolean;
  /** A moderation call (no window, no author check) rather than the author's own. */
  moderation: boolean;
}

/**
 * Recall and edit (spec 003 §2.3–§2.4, issue 29), in the order the spec fixes: first the CONTROL
 * event into the log with its own conversation_seq (commitAnchorEvent), then the target's state
 * and recall_event_conversation_seq / the edit's seq (applyAnchorEvent). A process that dies
 * between the two leaves the event in the bucket's outbox; the relay runs step 2 before it
 * dispatches the event (core/dispatch relay.ts), so the change completes with or without the
 * caller's retry (C-5). A recall's client_message_id is derived from its target, so any retry
 * (the user's or a moderator's) finds the one event.
 */
export async function writeAnchorEvent(store: RedisStore, k: ConversationKeys, req: {
  mode: AnchorAction; tenant: Uuid; group: Uuid; targetSeq: number; actor: Uuid | null; payload: Uint8Array; clientMessageId: string | null; nowMs: number;
  /** The target's reactions by user (reactionWhoKey): a recall deletes them in step 2. */
  rxwho: string;
  onCommit?: (bucket: number) => void;
}): Promise<AnchorResult> {
  const own = req.actor !== null;
  const mode = req.mode === "recall" ? "R" : "E";
  const cmid = req.clientMessageId ?? recallClientMessageId(req.tenant, req.group, req.targetSeq);
  const rest = encodeHistoryRest({
    messageId: newMessageId(), senderId: req.actor ?? ADMIN_ACTOR, kind: "control", countsUnread: false, createdAt: req.nowMs,
    contentType: req.mode === "recall" ? RECALL_CUSTOM_TYPE : EDIT_CUSTOM_TYPE, payload: req.payload, orderNeutral: true,
  });
  const client = store.clientFor(k.tag);
  const r = await commitAnchorEventScript.run(client, k, {
    mode, clientMessageId: cmid, actor: uuidToHex(req.actor ?? ADMIN_ACTOR), own, nowMs: req.nowMs,
    windowMs: req.mode === "recall" ? RECALL_SELF_WINDOW_MS : EDIT_SELF_WINDOW_MS, targetSeq: req.targetSeq, rest, outboxRef: k.outboxRef,
  });
  const what = `message ${req.targetSeq} of group ${req.group}`;
  switch (r.status) {
    case "OK":
    case "DUPLICATE": {
      if (r.status === "OK") failpoint(FAILPOINTS.anchorAfterEvent);
      if (r.eventSeq > 0) await applyAnchorEventScript.run(client, { ...k, rxwho: req.rxwho }, { eventSeq: r.eventSeq, targetSeq: req.targetSeq });
      if (r.status === "OK") req.onCommit?.(k.bucket);
      return {
        tenant: req.tenant, group: req.group, targetSeq: req.targetSeq, eventSeq: r.eventSeq,
        eventMessageId: r.eventMessageId === "" ? null : hexToUuid(r.eventMessageId), duplicate: r.status === "DUPLICATE", moderation: !own,
      };
    }
    case "GROUP_NOT_FOUND":
      // ADR-0021 §3: a user cannot tell a missing group from one they are not in
      if (own) throw new PermissionDeniedError();
      throw new NotFoundError("group", req.group);
    case "SENDER_NOT_MEMBER": throw new PermissionDeniedError();
    case "NO_SUCH_MESSAGE": throw new NotFoundError("message", `${req.targetSeq} of group ${req.group} (absent, trimmed by retention, or an event)`);
    case "NOT_AUTHOR": throw new PermissionDeniedError(`only its sender may ${req.mode} ${what}; moderators use qimctl message ${req.mode}`);
    case "WINDOW_PASSED": {
      const window = req.mode === "recall" ? "recall_self_window (2 min)" : "edit_self_window (15 min)";
      throw new FailedPreconditionError(`${what} was sent at ${new Date(r.sentAt).toISOString()}: ${window} has passed; a moderator may still ${req.mode} it`, { sentAt: r.sentAt, reason: "WINDOW_PASSED" });
    }
    case "MESSAGE_RECALLED": throw new FailedPreconditionError(`${what} was recalled: it cannot be edited`, { reason: "MESSAGE_RECALLED" });
    case "GROUP_DISSOLVED": throw groupDissolvedError(req.group, r.dissolvedAt);
    case "IDEMPOTENCY_CONFLICT": throw new IdempotencyConflictError(req.clientMessageId ?? cmid, r.conversationSeq);
  }
}

/** A moderation reason: 1 to MODERATION_REASON_MAX_CHARS characters, no control characters (it goes to the audit log). */
export function parseModerationReason(reason: unknown): string {
  if (typeof reason !== "string" || reason.trim() === "") throw new InvalidArgumentError("reason", "a moderation recall or edit needs a reason (it is audited)");
  if (reason.length > MODERATION_REASON_MAX_CHARS || /[\u0000-\u001f\u007f]/.test(reason)) {
    throw new InvalidArgumentError("reason", `reason is 1 to ${MODERATION_REASON_MAX_CHARS} characters without control characters`);
  }
  return reason;
}

/** The one client_message_id of a message's recall, whoever asks: a retry finds the event written before. */
export function recallClientMessageId(tenant: Uuid, group: Uuid, seq: number): string {
  return createHash("sha1").update(`recall|${tenant}|${group}|${seq}`).digest("hex").slice(0, 32);
}
