import { status } from "@grpc/grpc-js";
import {
  changeConversation, InvalidArgumentError, listConversations, pageLimit, parseUuid, SNAPSHOT_PAGE, type ConversationListAction, type SessionRow, type SessionFrame,
} from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { summaryOut } from "../../../convert.js";
import { ConversationAction, type Badge, type ListRow, type WatchUserEvent } from "../../../../admin-api/gen/qim/admin/v1/conversation_list.js";
import { ALL_ROLES, defineService, MUTATE, serverStream, unary } from "../../../pipeline/rpc.js";
import { openEndedStream } from "../../../pipeline/stream.js";

function rowOut(r: Omit<SessionRow, "tenant" | "user" | "lastActivitySeq">): ListRow {
  return {
    group: r.conversation, lastActivityId: r.lastActivityId, headConversationSeq: BigInt(r.headSeq), unread: r.unread, unreadExact: r.unreadExact, mentions: r.mentions,
    ...(r.mentionFirstSeq !== null ? { mentionFirstConversationSeq: BigInt(r.mentionFirstSeq) } : {}), ...(r.pinRank !== null ? { pinRank: r.pinRank } : {}),
    muted: r.muted, archived: r.archived, hiddenBeforeConversationSeq: BigInt(r.hiddenBeforeSeq), deletedBeforeConversationSeq: BigInt(r.deletedBeforeSeq), deleted: r.deleted, version: BigInt(r.version),
  };
}

function badgeOut(b: { totalUnread: number; totalMention: number; mutedUnread: number; version: number }): Badge {
  return { totalUnread: b.totalUnread, totalMention: b.totalMention, mutedUnread: b.mutedUnread, version: BigInt(b.version) };
}

export function frameOut(f: SessionFrame): WatchUserEvent {
  const head = { version: BigInt(f.version), previousVersion: BigInt(f.previousVersion), drivingEventId: f.drivingEventId };
  if (f.kind === "badge") return { ...head, frame: { $case: "badge", badge: badgeOut(f) } };
  const r = f.row;
  return {
    ...head,
    frame: { $case: "delta", delta: { row: rowOut({ ...r, version: f.version }) } },
  };
}

const ACTIONS = {
  [ConversationAction.CONVERSATION_ACTION_CLEAR]: "clear",
  [ConversationAction.CONVERSATION_ACTION_DELETE]: "delete",
  [ConversationAction.CONVERSATION_ACTION_PIN]: "pin",
  [ConversationAction.CONVERSATION_ACTION_UNPIN]: "unpin",
  [ConversationAction.CONVERSATION_ACTION_MUTE]: "mute",
  [ConversationAction.CONVERSATION_ACTION_UNMUTE]: "unmute",
  [ConversationAction.CONVERSATION_ACTION_ARCHIVE]: "archive",
  [ConversationAction.CONVERSATION_ACTION_UNARCHIVE]: "unarchive",
} as const satisfies Record<number, ConversationListAction>;

/** unread_audit_sample_rate bounds: a rate in (0, 1]. */
const SAMPLE_RATE_MAX = 1;

/**
 * ConversationListService: a user's list as the engine keeps it (spec 002 §3–§6). Reads are open to
 * every role; reconcile and the actions as a user change state (operator or admin, audited).
 */
export const conversationListService = defineService(catalogEntry("qim.admin.v1.ConversationListService"), {
  listConversations: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = parseUuid(req.user, "user");
      const page = await listConversations(deps.runtime, tenant, user, { limit: pageLimit(req.limit, SNAPSHOT_PAGE), cursor: req.cursor || null });
      return {
        response: {
          entries: page.entries.map((e) => ({ row: rowOut(e.row), ...(e.summary ? { summary: summaryOut(e.summary) } : {}) })),
          ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
          snapshotRevision: BigInt(page.snapshotRevision), projectionComplete: page.projectionComplete, total: page.total,
          snapshotTruncated: page.snapshotTruncated, maxConversationsPerUser: page.maxConversationsPerUser,
        },
      };
    },
  }),
  watchUser: serverStream({
    openEnded: true,
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps, admit, call }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = parseUuid(req.user, "user");
      const end = await openEndedStream<WatchUserEvent, "shutdown">(call, admit, (out) =>
        deps.runtime.sessionView.watch(tenant, user, (frame) => out.send(frameOut(frame)), () => out.end("shutdown")));
      return end === "shutdown" ? { error: { code: status.UNAVAILABLE, domainCode: "UNAVAILABLE", message: "the admin server is shutting down" } } : {};
    },
  }),
  getBadge: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = parseUuid(req.user, "user");
      return { response: badgeOut(await deps.runtime.conversationList.service.badge(tenant, user)) };
    },
  }),
  reconcileBadge: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = parseUuid(req.user, "user");
      const r = await deps.runtime.conversationList.service.reconcile(tenant, user);
      return {
        response: {
          ...(r.drift.badgeBefore ? { before: badgeOut(r.drift.badgeBefore) } : {}), after: badgeOut(r.badge),
          rows: r.rows.length, driftedRows: r.drift.rows, unreadDrift: r.drift.unread, mentionsDrift: r.drift.mentions,
        },
        detail: `${r.rows.length} row(s), ${r.drift.rows} drifted; total_unread ${r.drift.badgeBefore?.totalUnread ?? "none"} -> ${r.badge.totalUnread}`,
      };
    },
  }),
  auditUnread: unary({
    roles: ["admin", "operator", "viewer"], mutates: false,
    async handle(req, { deps, signal }) {
      if (!(req.sampleRate >= 0 && req.sampleRate <= SAMPLE_RATE_MAX)) throw new InvalidArgumentError("sample_rate", "sample_rate is a fraction in (0, 1] (0: the server's default)");
      // a walk over every user: it stops at its next step when the caller gives up
      const r = await deps.runtime.conversationList.service.audit({ ...(req.sampleRate > 0 ? { sampleRate: req.sampleRate } : {}), signal });
      return {
        response: {
          sampleRate: r.sampleRate, idleMs: BigInt(r.idleMs), usersScanned: r.usersScanned, candidates: r.candidates, sampled: r.sampled, drifted: r.drifted, driftRatio: r.driftRatio,
          drifts: r.drifts.map((d) => ({ tenant: d.tenant, user: d.user, group: d.conversation, cachedUnread: d.cachedUnread, definitionalUnread: d.definitionalUnread, cachedMentions: d.cachedMentions, definitionalMentions: d.definitionalMentions })),
        },
      };
    },
  }),
  changeConversation: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = parseUuid(req.user, "user");
      const group = parseUuid(req.group, "group");
      const action = ACTIONS[req.action as keyof typeof ACTIONS];
      if (!action) throw new InvalidArgumentError("action", `action must be one of ${Object.values(ACTIONS).join(", ")}`);
      if (req.pinRank !== undefined && action !== "pin") throw new InvalidArgumentError("pin_rank", "pin_rank is for PIN only");
      const row = await changeConversation({ conversations: deps.runtime.conversations, conversationList: deps.runtime.conversationList.service }, tenant, user, group, action, req.pinRank);
      return { response: { row: rowOut(row) }, detail: `${action} ${group} as ${user}: version ${row.version}` };
    },
  }),
});
