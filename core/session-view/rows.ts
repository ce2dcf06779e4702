/**
 * What this module reads from the conversation-list engine (core/conversation-list): the per
 * (user, conversation) rows, the per-user badge and its change feed. Picked here as the narrow
 * structural surface the snapshot, the deltas and the watch need: ConversationListService has it
 * (the runtime passes it in, so the compiler holds the two together), and the tests of the pure
 * parts build rows by hand without the engine's other fields.
 */
import type { Uuid } from "../base/index.js";
import type { BadgeState, ConversationRow } from "../conversation-list/index.js";

/** The fields of the engine's row the snapshot, the deltas and the watch read (and tests build by hand). */
export type SessionRow = Pick<ConversationRow,
  "tenant" | "user" | "conversation" | "lastActivityId" | "lastActivitySeq" | "headSeq" | "unread" | "unreadExact" | "mentions"
  | "mentionFirstSeq" | "pinRank" | "muted" | "archived" | "hiddenBeforeSeq" | "deletedBeforeSeq" | "deleted" | "version">;

export type SessionBadge = BadgeState;

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
  /**
   * The user's stored projection version, which every stored write of any process moves: a held
   * snapshot whose version it no longer is re-reads the rows, so that writes other nodes make (the
   * owners of the user's other conversations' partitions) reach this node's pages too.
   */
  storedVersion?(tenant: string, user: string): Promise<number>;
  /** The rows with the stored version read in the same atomic step (one round trip where rows + storedVersion take two). */
  rowsAt?(tenant: string, user: string): Promise<{ rows: SessionRow[]; storedVersion: number }>;
  badge(tenant: string, user: string): Promise<SessionBadge>;
  /**
   * The badge at a version newly drawn from the user's counter: a watch's first frame, so that a
   * stream opened after a crash or a move of the user's partitions starts above every version any
   * process sent before (absent: `badge`, at the version last drawn).
   */
  drawnBadge?(tenant: string, user: string): Promise<SessionBadge>;
  onChange(listener: (change: SessionChange) => void): () => void;
  /**
   * Tells the engine which users someone in this process looks at live (a held snapshot, a
   * watch): their changes are published on the low-latency path before the rows are stored.
   */
  setLiveInterest?(interested: ((tenant: Uuid, user: Uuid, key?: string) => boolean) | null): void;
}
