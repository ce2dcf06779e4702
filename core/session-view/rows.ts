/**
 * What this module reads from the conversation-list engine (core/conversation-list, issue 12 part
 * 1): the per (user, conversation) rows, the per-user badge and its change feed. Declared here as
 * the narrow surface the snapshot, the deltas and the watch need, so that any engine with these
 * members serves them (the real ConversationListService does; tests of the pure parts build rows
 * by hand).
 */
import type { Uuid } from "../base/index.js";

export interface ConversationRow {
  tenant: Uuid;
  user: Uuid;
  conversation: Uuid;
  /** The message id (UUIDv7) of the latest visible activity, sortable as text; "" when none. */
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

export interface BadgeState {
  totalUnread: number;
  totalMention: number;
  mutedUnread: number;
  version: number;
}

export interface ConversationChange {
  tenant: Uuid;
  user: Uuid;
  rows: ConversationRow[];
  badge: BadgeState;
  /** The per-user projection version after the change. */
  version: number;
  drivingEventId: string;
  /** Pin, unpin, archive, leave, delete: the sort key or the zone moved (spec 002 §6.3). */
  structural: boolean;
}

/** The part of the conversation-list engine the session view reads. */
export interface ConversationRowSource {
  rows(tenant: string, user: string): Promise<ConversationRow[]>;
  badge(tenant: string, user: string): Promise<BadgeState>;
  onChange(listener: (change: ConversationChange) => void): () => void;
}
