/**
 * What this module reads from the conversation-list engine (core/conversation-list): the per
 * (user, conversation) rows, the per-user badge and its change feed. Declared here as the narrow
 * structural surface the snapshot, the deltas and the watch need: ConversationListService has it
 * (the runtime passes it in, so the compiler holds the two together), and the tests of the pure
 * parts build rows by hand without the engine's other fields.
 */
import type { Uuid } from "../base/index.js";

export interface SessionRow {
  tenant: Uuid;
  user: Uuid;
  conversation: Uuid;
  /** 32 lowercase hex of the newest visible record's message id (a UUIDv7: sortable as text); "" when none. */
  lastActivityId: string;
  lastActivitySeq: number;
  headSeq: number;
  unread: number;
  unreadExact: boolean;
  mentions: number;
  mentionFirstSeq: number | null;
  pinRank: number | null;
  muted: boolean;
  archived: boolean;
  hiddenBeforeSeq: number;
  deletedBeforeSeq: number;
  deleted: boolean;
  /** The per-user projection version of the change that last wrote this row. */
  version: number;
}

export interface SessionBadge {
  totalUnread: number;
  totalMention: number;
  mutedUnread: number;
  version: number;
}

export interface SessionChange {
  tenant: Uuid;
  user: Uuid;
  rows: SessionRow[];
  badge: SessionBadge;
  /** The per-user projection version after the change. */
  version: number;
  drivingEventId: string;
  /** Pin, unpin, archive, leave, delete: the sort key or the zone moved (spec 002 §6.3). */
  structural: boolean;
}

/** The part of the conversation-list engine the session view reads. */
export interface ConversationRowSource {
  rows(tenant: string, user: string): Promise<SessionRow[]>;
  badge(tenant: string, user: string): Promise<SessionBadge>;
  onChange(listener: (change: SessionChange) => void): () => void;
}
