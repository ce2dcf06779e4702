import {
  asOperator, InvalidArgumentError, parseModerationReason, parseUuid, SESSION_PAGE_DEFAULT, SUMMARY_GROUPS_MAX, wireTargetSeq, type AnchorResult, type ReactionSummary,
} from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { historyOut, sendOut, summaryOut } from "../../../convert.js";
import type { ListConversationSummariesResponse } from "../../../../admin-api/gen/qim/admin/v1/messages.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";

/** MessageService: send as a user (drills, demos), history as a user sees it, conversation summaries. */
export const messageService = defineService(catalogEntry("qim.admin.v1.MessageService"), {
  // the drill role may send messages as a user (drills, demos); operators change membership, not traffic
  sendMessage: unary({
    roles: ["admin", "drill"], mutates: true,
    async handle(req, { deps }) {
      const conversations = deps.runtime.conversations;
      const r = await asOperator(conversations, { tenant: req.tenant, group: req.group, user: req.sender, field: "sender" }, () => conversations.send({
        tenant: req.tenant, group: req.group, sender: req.sender, text: req.text,
        ...(req.clientMessageId ? { clientMessageId: req.clientMessageId } : {}), ...(req.mentions.length > 0 ? { mentions: req.mentions } : {}),
      }));
      return { response: sendOut(r), detail: `${r.duplicate ? "duplicate of" : "committed"} seq ${r.conversationSeq}` };
    },
  }),
  readHistory: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const page = await deps.runtime.conversations.history({ tenant: req.tenant, group: req.group, user: req.user, after: safeAfter(req.after), ...(req.limit ? { limit: req.limit } : {}) });
      return { response: historyOut(page) };
    },
  }),
  // moderation (spec 003 §2.4: no window, through the moderation path): operators and admins, audited with the reason
  recallMessage: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const reason = parseModerationReason(req.reason);
      const r = await deps.runtime.conversations.recall({ tenant: req.tenant, group: req.group, seq: wireTargetSeq(req.conversationSeq), reason });
      return { response: anchorOut(r), detail: `${r.duplicate ? "already recalled" : "recalled"} seq ${r.targetSeq} (event seq ${r.eventSeq}); reason: ${reason}` };
    },
  }),
  editMessage: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const reason = parseModerationReason(req.reason);
      const r = await deps.runtime.conversations.edit({
        tenant: req.tenant, group: req.group, seq: wireTargetSeq(req.conversationSeq), reason, text: req.text, ...(req.clientMessageId ? { clientMessageId: req.clientMessageId } : {}),
      });
      return { response: anchorOut(r), detail: `${r.duplicate ? "duplicate edit of" : "edited"} seq ${r.targetSeq} (event seq ${r.eventSeq}); reason: ${reason}` };
    },
  }),
  // a support action as a user (spec 003 §4): operators and admins, audited with the reason
  react: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const reason = parseModerationReason(req.reason);
      const group = parseUuid(req.group, "group");
      const r = await deps.runtime.reactions.react({
        tenant: parseUuid(req.tenant, "tenant"), group, seq: wireTargetSeq(req.conversationSeq), user: parseUuid(req.user, "user"), key: req.reactionKey, remove: req.remove,
      });
      const what = `${req.remove ? "removed" : "added"} ${JSON.stringify(req.reactionKey)} as ${req.user} on seq ${req.conversationSeq}`;
      return { response: { summary: reactionSummaryOut(r.summary), changed: r.changed }, detail: `${r.changed ? what : `unchanged (${what})`}; reason: ${reason}` };
    },
  }),
  getReactions: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const group = parseUuid(req.group, "group");
      const seq = wireTargetSeq(req.conversationSeq);
      const summary = await deps.runtime.reactions.summary(tenant, group, seq);
      const page = req.withUsers ? await deps.runtime.reactions.who(tenant, group, seq, { cursor: req.cursor, ...(req.limit > 0 ? { limit: req.limit } : {}) }) : { rows: [], nextCursor: "" };
      return {
        response: {
          summary: reactionSummaryOut(summary ?? { conversationSeq: seq, version: 0, counts: [], detailRows: 0, withoutDetail: 0 }),
          reactions: page.rows.map((r) => ({ user: r.user, key: r.key, reactedAtMs: BigInt(r.reactedAt ?? 0) })), nextCursor: page.nextCursor,
        },
      };
    },
  }),
  listConversationSummaries: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      if (req.groups.length === 0) {
        // the user's conversations from the session projection (rebuilt first when their mark is behind)
        const list = await deps.runtime.projection.sessions.listSessions({ tenant: req.tenant, user: req.user, limit: req.limit === 0 ? SESSION_PAGE_DEFAULT : req.limit });
        const response: ListConversationSummariesResponse = {
          summaries: list.sessions.map(summaryOut), epoch: BigInt(list.epoch), rebuilt: list.rebuilt, total: list.total, hidden: list.hidden,
        };
        return { response };
      }
      if (req.groups.length > SUMMARY_GROUPS_MAX) throw new InvalidArgumentError("groups", `at most ${SUMMARY_GROUPS_MAX} groups per call`);
      const summaries = await Promise.all(req.groups.map((group) => deps.runtime.conversations.conversationSummary({ tenant: req.tenant, group, user: req.user })));
      const response: ListConversationSummariesResponse = { summaries: summaries.map(summaryOut) };
      return { response };
    },
  }),
});

function reactionSummaryOut(s: ReactionSummary) {
  return {
    conversationSeq: BigInt(s.conversationSeq), summaryVersion: BigInt(s.version), counts: s.counts.map((c) => ({ key: c.key, count: BigInt(c.count) })),
    detailRows: BigInt(s.detailRows), withoutDetail: BigInt(s.withoutDetail),
  };
}

function anchorOut(r: AnchorResult) {
  return { targetSeq: BigInt(r.targetSeq), eventSeq: BigInt(r.eventSeq), eventMessageId: r.eventMessageId ?? "", duplicate: r.duplicate };
}

/**
 * ReadHistoryRequest.after takes the whole uint64 range; no conversation_seq goes past 2^53−1, so
 * "after" anything beyond that is "after 2^53−1": the same empty page, exactly, with no digits lost.
 */
function safeAfter(after: bigint): number {
  return after > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(after);
}
