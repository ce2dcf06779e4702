import {
  hexToUuid, InvalidArgumentError, newUuid, parseUuid, PermissionDeniedError, UNREAD_PRECISE_LIMIT, uuidToHex, type KeySpace, type Uuid,
} from "../base/index.js";
import type { ContentWatermarks, ConversationService } from "../conversation/index.js";
import { userKeys, type ConversationStateAuthority, type DrillCheck, type DrillDifference } from "../projection/index.js";
import type { RedisStore } from "../store/index.js";
import { KeyedSerial } from "../support/index.js";
import { listKeys, listRowsPattern, type ListKeys } from "./keys.js";
import { metrics } from "./metrics.js";
import {
  applyEntry, baseOf, contribution, decodePrefs, decodeRow, encodePrefs, encodeRowCore, isDeleted, liveRow, LiveRowCache, moveBase, NewRowCache, prefsOf, rowFromRecompute, toConversationRow,
  type BadgeState, type ConversationRow, type InHandEntry, type RowPrefs, type RowState,
} from "./row.js";
import { applyRowsScript, readLiveViewScript, recomputeUnreadScript, type RowWrite } from "./scripts.js";

/** unread_audit_sample_rate (spec 002 §3.4, a TODO of §10): the share of idle rows with unread the audit compares. Decided: 1%. */
export const UNREAD_AUDIT_SAMPLE_RATE = 0.01;
/** "有未读且 24h 无变更" (spec 002 §3.4): only rows idle this long are audited. */
export const UNREAD_AUDIT_IDLE_MS = 24 * 60 * 60 * 1000;
/**
 * The audit's COUNT for SCAN over users and HSCAN over one user's rows: a user with 5,000
 * conversations is read in ~10 bounded replies, not one. (HSCAN may return a row twice during a
 * rehash; the audit then samples it twice, which a sample tolerates.)
 */
const AUDIT_SCAN_COUNT = 500;

export interface ConversationListOptions {
  /** unread_precise_limit (spec 002 §3.3). */
  unreadPreciseLimit?: number;
  /** The tenant's include_muted policy (§4): muted conversations count in total_unread. Default: no tenant. */
  includeMuted?: (tenant: Uuid) => boolean;
  now?: () => number;
  /** RECONCILE_MIN_INTERVAL_MS (tests shorten it). */
  reconcileMinIntervalMs?: number;
}

export interface ListChange {
  tenant: Uuid;
  user: Uuid;
  /** Absolute values of every row the change wrote (deleted rows with `deleted: true`). */
  rows: ConversationRow[];
  badge: BadgeState;
  /** The per-user projection version stamped on them (monotonic per user). */
  version: number;
  drivingEventId: string;
  /** pin/unpin/archive/unarchive/leave/removal/delete (§6.3: invalidates a snapshot revision). */
  structural: boolean;
}

export interface ReconcileResult {
  rows: ConversationRow[];
  badge: BadgeState;
  /** Rows whose cached unread, mentions or head differed from the definition before the reconcile. */
  drift: { rows: number; unread: number; mentions: number; badgeBefore: BadgeState | null };
}

export interface UnreadAuditDrift {
  tenant: Uuid;
  user: Uuid;
  conversation: Uuid;
  cachedUnread: number;
  definitionalUnread: number;
  cachedMentions: number;
  definitionalMentions: number;
}

export interface UnreadAuditReport {
  sampleRate: number;
  idleMs: number;
  usersScanned: number;
  /** Rows with unread and idle for idleMs. */
  candidates: number;
  sampled: number;
  drifted: number;
  driftRatio: number;
  drifts: UnreadAuditDrift[];
}

/**
 * The per-user bound of the reconcile triggers that a crowd can repeat (spec 002 §3.4 login,
 * MAILBOX_DIRTY): at most one reconcile per user and trigger per minute, whatever the number of
 * logins or rebuilds. A minute: a reconcile is a full recompute of the user's rows (up to
 * max_conversations_per_user range reads); the live view keeps the rows right in between.
 */
export const RECONCILE_MIN_INTERVAL_MS = 60_000;

/** Why a reconcile ran (qim_conversation_list_reconcile_total's label). */
export type ReconcileTrigger = "login" | "mailbox_dirty" | "rollback" | "audit";
export type BoundedReconcileTrigger = "login" | "mailbox_dirty";

export interface BoundedReconcile {
  /** false: one ran within RECONCILE_MIN_INTERVAL_MS (or was running here; it finished first). */
  reconciled: boolean;
  result: ReconcileResult | null;
}

/** Records of one (user, conversation) delivered and not yet written (the compaction window's entries in hand). */
export interface PendingRow {
  conversationHex: string;
  entries: InHandEntry[];
}

type Compute = (cur: RowState | null, prefs: RowPrefs) => Promise<RowState | null>;

interface Staged {
  conversationHex: string;
  compute: Compute;
  prefsChange?: boolean;
}

/**
 * The conversation-list state engine (spec 002 §3, §4, §7): per (user, conversation) rows with
 * the cached unread and mentions kept by the three-state update, the user's badge maintained in
 * the same atomic step, the actions (clear, delete, pin, mute, archive, read), reconcile and
 * rebuild from the authority, and the unread audit. The definitional unread (§3.1, computed by
 * recomputeUnread-5.lua from the unread index and the history) is the truth every cache is corrected to.
 *
 * Writes of one user are serialized in this process; across processes every row write is a
 * compare-and-set against the row it was computed from, retried from the stored row.
 */
export class ConversationListService {
  private readonly cap: number;
  private readonly includeMuted: (tenant: Uuid) => boolean;
  private readonly now: () => number;
  private readonly reconcileMinIntervalMs: number;
  private readonly listeners = new Set<(change: ListChange) => void>();
  private readonly perUser = new KeyedSerial();
  /** The live rows of watched users, moved record by record between stored writes (row.ts). */
  private readonly liveRows = new LiveRowCache();
  /** The live rows of watched users' conversations with no stored row yet, moved from one recompute (row.ts). */
  private readonly newRows = new NewRowCache();
  /** Takes the entries in hand of one row from the compaction window (set by the consumer). */
  takePending: (tenant: Uuid, user: Uuid, conversationHex: string) => InHandEntry[] = () => [];
  /** Gives taken entries back when the write that took them failed (else the checkpoint could pass them unwritten). */
  restorePending: (tenant: Uuid, user: Uuid, conversationHex: string, entries: InHandEntry[]) => void = () => {};
  /** The records the consumer holds for a user and has not written yet: conversation hex → records (set by the consumer). */
  heldOf: (tenant: Uuid, user: Uuid) => ReadonlyMap<string, readonly InHandEntry[]> = () => new Map();
  private liveInterest: ((tenant: Uuid, user: Uuid, key?: string) => boolean) | null = null;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly conversations: ConversationService,
    private readonly authority: ConversationStateAuthority,
    opts: ConversationListOptions = {},
  ) {
    this.cap = opts.unreadPreciseLimit ?? UNREAD_PRECISE_LIMIT;
    this.includeMuted = opts.includeMuted ?? (() => false);
    this.now = opts.now ?? Date.now;
    this.reconcileMinIntervalMs = opts.reconcileMinIntervalMs ?? RECONCILE_MIN_INTERVAL_MS;
  }

  /**
   * Every change: after it is durable (a write), or live (publishLive: stored rows + held records,
   * written at the window's flush). Absolute rows + badge with the version and driving event.
   * Returns the unsubscribe.
   */
  onChange(listener: (change: ListChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  listKeys(tenant: Uuid, user: Uuid): ListKeys {
    return listKeys(this.keys, tenant, user);
  }

  /** Runs fn after every earlier write of the same user in this process. */
  withUser<T>(tenant: Uuid, user: Uuid, fn: () => Promise<T>): Promise<T> {
    return this.perUser.run(tenant + user, fn);
  }

  // ---- reads ----

  // Reads are the live view: the stored rows with the records the compaction window holds applied
  // in memory (docs/conversation-list.md, "the low-latency path"), so a page or a badge read right
  // after a send shows it, while the stored row is written once per window.

  async rows(tenantIn: string, userIn: string): Promise<ConversationRow[]> {
    return (await this.rowsAt(tenantIn, userIn)).rows;
  }

  /** The live rows with the user's version read in the same MULTI (what a session snapshot loads). */
  async rowsAt(tenantIn: string, userIn: string): Promise<{ rows: ConversationRow[]; storedVersion: number }> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    const v = await this.view(tenant, user, null);
    return { rows: [...v.rows.entries()].filter(([, r]) => !isDeleted(r)).map(([c, r]) => toConversationRow(tenant, user, c, r)), storedVersion: v.version };
  }

  /**
   * The user's version counter (`clversion`, 0 before the first version): moved by every stored
   * write and every live frame of any process, so a reader that saw it unmoved saw every stored write.
   */
  async storedVersion(tenantIn: string, userIn: string): Promise<number> {
    const k = listKeys(this.keys, parseUuid(tenantIn, "tenant"), parseUuid(userIn, "user"));
    return Number((await this.store.clientFor(k.tag).get(k.version)) ?? 0);
  }

  /**
   * The user's clear and delete watermarks of each conversation (hidden_before, deleted_before;
   * spec 002 §7), from the user's choices: what history and summaries hide (ConversationService's
   * `watermarks` hook). One HMGET on the user's tag.
   */
  async watermarks(tenant: Uuid, user: Uuid, conversations: readonly Uuid[]): Promise<ContentWatermarks[]> {
    if (conversations.length === 0) return [];
    const k = this.listKeys(tenant, user);
    const raws = await this.store.clientFor(k.tag).hmget(k.prefs, ...conversations.map(uuidToHex));
    return raws.map((raw) => {
      const p = decodePrefs(raw);
      return { hiddenBefore: p.hidden, deletedBefore: p.deleted };
    });
  }

  async row(tenantIn: string, userIn: string, conversationIn: string): Promise<ConversationRow | null> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    const hex = uuidToHex(parseUuid(conversationIn, "conversation"));
    const v = await this.view(tenant, user, [hex]);
    const r = v.rows.get(hex);
    return r && !isDeleted(r) ? toConversationRow(tenant, user, hex, r) : null;
  }

  async badge(tenantIn: string, userIn: string): Promise<BadgeState> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    return this.badgeOf(tenant, user, false);
  }

  /**
   * The live badge stamped with a version newly drawn from the user's counter (one INCR): the
   * first frame of a watch. It is above every version any process sent before (a stream opened
   * after a crash or a move of the user's partitions never repeats one with other content).
   */
  async drawnBadge(tenantIn: string, userIn: string): Promise<BadgeState> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    return this.withUser(tenant, user, () => this.badgeOf(tenant, user, true));
  }

  private async badgeOf(tenant: Uuid, user: Uuid, draw: boolean): Promise<BadgeState> {
    const v = await this.view(tenant, user, [], draw);
    if (v.badge === null) return { ...this.sums(await this.rows(tenant, user), tenant), version: v.version };
    return { ...v.badge, version: v.version };
  }

  /**
   * The live view of a user: the stored rows of `hexes` (null: all) and of every held row, the
   * held rows with their records applied (liveRow; a new row or a membership change is a bounded
   * recompute, a read), and the stored badge moved by the held rows' change of contribution
   * (null when no badge is stored). `version` is the user's counter read in the same MULTI, or
   * with `draw` a new version INCRed from it there: then every stored write below it is in what
   * was read and every later one is above it, whichever process makes it.
   */
  private async view(tenant: Uuid, user: Uuid, hexes: readonly string[] | null, draw = false): Promise<{
    stored: Map<string, RowState | null>; rows: Map<string, RowState>; badge: Omit<BadgeState, "version"> | null; version: number;
  }> {
    const k = this.listKeys(tenant, user);
    const held = this.heldOf(tenant, user);
    const wanted = hexes === null ? null : [...new Set([...hexes, ...held.keys()])];
    const heldHexes = [...held.keys()];
    const client = this.store.clientFor(k.tag);
    const stored = new Map<string, RowState | null>();
    let b: Record<string, string>;
    let version: number;
    let prefsRaw: (string | null)[];
    if (wanted === null) {
      // every stored row (a whole-list read): HGETALL in a MULTI
      const m = client.multi().hgetall(k.badge);
      if (draw) m.incr(k.version);
      else m.get(k.version);
      m.hgetall(k.rows);
      if (heldHexes.length > 0) m.hmget(k.prefs, ...heldHexes);
      const res = await m.exec();
      b = (res?.[0]?.[1] ?? {}) as Record<string, string>;
      version = Number((res?.[1]?.[1] as string | number | null) ?? 0);
      for (const [c, raw] of Object.entries((res?.[2]?.[1] ?? {}) as Record<string, string>)) stored.set(c, decodeRow(raw));
      prefsRaw = heldHexes.length > 0 ? ((res?.at(-1)?.[1] ?? []) as (string | null)[]) : [];
    } else {
      // the rows named (a live frame, a row, a badge): one script call, not a MULTI of four
      const r = await readLiveViewScript.run(client, k, { draw, rows: wanted, prefs: heldHexes });
      b = r.badge;
      version = r.version;
      wanted.forEach((c, i) => stored.set(c, r.rows[i] ? decodeRow(r.rows[i]!) : null));
      prefsRaw = r.prefs;
    }
    const rows = new Map<string, RowState>();
    for (const [c, r] of stored) if (r) rows.set(c, r);
    const includeMuted = this.includeMuted(tenant);
    const badge = b.total_unread === undefined ? null
      : { totalUnread: Number(b.total_unread), totalMention: Number(b.total_mention), mutedUnread: Number(b.muted_unread) };
    const userHex = uuidToHex(user);
    for (const [i, c] of heldHexes.entries()) {
      const before = stored.get(c) ?? null;
      const key = tenant + user + c;
      const heldRows = held.get(c)!;
      const prefs = prefsRaw[i] ?? null;
      let live = before ? this.liveRows.of(key, before, heldRows, userHex, this.cap) : this.newRows.of(key, heldRows, prefs, userHex, this.cap);
      if (!live) {
        live = await this.recompute(tenant, user, c, before ? prefsOf(before) : decodePrefs(prefs), before, "live");
        // a row not stored yet: its recompute is the base the window's next records move (row.ts NewRowCache)
        if (live && !before) this.newRows.remember(key, live, heldRows, prefs);
      }
      if (!live) continue;
      if (before) live.headSeq = Math.max(live.headSeq, before.headSeq);
      rows.set(c, live);
      if (badge) {
        const o = contribution(before, includeMuted);
        const n = contribution(live, includeMuted);
        badge.totalUnread += n.totalUnread - o.totalUnread;
        badge.totalMention += n.totalMention - o.totalMention;
        badge.mutedUnread += n.mutedUnread - o.mutedUnread;
      }
    }
    return { stored, rows, badge, version };
  }

  /** Set by the session view: whether someone in this process looks at the user's list live (a held snapshot, a watch). */
  setLiveInterest(fn: ((tenant: Uuid, user: Uuid, key?: string) => boolean) | null): void {
    this.liveInterest = fn;
  }

  /** Whether a change of the user's rows is published live (someone in this process looks at the user's list). */
  looksLive(tenant: Uuid, user: Uuid, key?: string): boolean {
    return this.listeners.size > 0 && (this.liveInterest?.(tenant, user, key) ?? false);
  }

  /**
   * The low-latency path (the consumer calls it when records for `touched` rows arrived): when
   * someone looks at the user live, the live rows that changed and the live badge are published
   * as a change at once. Its version is drawn from the user's counter (an INCR in the MULTI that
   * reads the stored rows, so no extra round trip): durable, shared with every stored write of any
   * process, so no version is ever sent twice or below one sent before — across a SIGKILL or a
   * move of the user's partitions to another node. No row is written: they are stored at the
   * window's flush.
   */
  publishLive(tenant: Uuid, user: Uuid, touched: readonly string[]): Promise<ListChange | null> {
    if (!this.looksLive(tenant, user)) return Promise.resolve(null);
    return this.withUser(tenant, user, async () => {
      const v = await this.view(tenant, user, touched, true);
      const held = this.heldOf(tenant, user);
      const changed: [string, RowState][] = [];
      let structural = false;
      let driving: InHandEntry | null = null;
      for (const c of touched) {
        const live = v.rows.get(c);
        const before = v.stored.get(c) ?? null;
        if (!live || (before && encodeRowCore(before) === encodeRowCore(live))) continue;
        changed.push([c, live]);
        if (before && (before.state !== live.state || isDeleted(live))) structural = true;
        for (const e of held.get(c) ?? []) if (driving === null || e.seq > driving.seq) driving = e;
      }
      // a drawn version left unused is a skipped one, as the merge window makes (§5: gaps are by previous_version)
      if (changed.length === 0) return null;
      const version = v.version;
      const drivingEventId = driving?.eventId ?? "";
      const badge = v.badge ?? this.sums([...v.rows.entries()].map(([c, r]) => toConversationRow(tenant, user, c, r)), tenant);
      const change: ListChange = {
        tenant, user,
        rows: changed.map(([c, r]) => toConversationRow(tenant, user, c, { ...r, version, drivingEventId })),
        badge: { ...badge, version }, version, drivingEventId, structural,
      };
      metrics.liveChanges.inc();
      this.emit(change);
      return change;
    });
  }

  private emit(change: ListChange): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch {
        // a listener's failure is its own (the change is durable, or will be at the flush)
      }
    }
  }

  /** The badge sums of §4 over rows (what the maintained badge must equal). */
  sums(rows: readonly ConversationRow[], tenant: Uuid): Omit<BadgeState, "version"> {
    const includeMuted = this.includeMuted(tenant);
    let totalUnread = 0;
    let totalMention = 0;
    let mutedUnread = 0;
    for (const r of rows) {
      const active = r.membership === "ACTIVE";
      if (active && !r.archived && (!r.muted || includeMuted)) totalUnread += r.unread;
      if (active) totalMention += r.mentions;
      if (r.muted) mutedUnread += r.unread;
    }
    return { totalUnread, totalMention, mutedUnread };
  }

  // ---- the write step ----

  /** The definitional row (bounded recompute, §3.3); null when the user may not see the conversation. */
  async recompute(tenant: Uuid, user: Uuid, conversationHex: string, prefs: RowPrefs, prev: RowState | null, cause: string): Promise<RowState | null> {
    metrics.recomputes.inc({ cause });
    const k = this.conversations.conversationKeys(tenant, hexToUuid(conversationHex));
    const rc = await recomputeUnreadScript.run(this.store.clientFor(k.tag), k, { user: uuidToHex(user), hidden: prefs.hidden, deleted: prefs.deleted, cap: this.cap });
    if (rc.status !== "OK") return null;
    return rowFromRecompute(rc, prefs, prev);
  }

  /**
   * Computes and writes rows of one user in one atomic step (applyRows-4.lua): each row from the
   * stored one; when another writer moved a stored row meanwhile, all are computed again from
   * the stored rows. Call inside withUser.
   */
  private async write(tenant: Uuid, user: Uuid, staged: readonly Staged[], meta: { drivingEventId: string; structural: boolean; fullBadge?: boolean }): Promise<ListChange | null> {
    const k = this.listKeys(tenant, user);
    const client = this.store.clientFor(k.tag);
    const convs = staged.map((s) => s.conversationHex);
    for (let attempt = 1; ; attempt++) {
      const res = convs.length === 0 ? [[null, []], [null, []]] : await client.multi().hmget(k.rows, ...convs).hmget(k.prefs, ...convs).exec();
      const raws = (res?.[0]?.[1] ?? []) as (string | null)[];
      const prefsRaw = (res?.[1]?.[1] ?? []) as (string | null)[];
      const writes: RowWrite[] = [];
      const rows: RowState[] = [];
      const hexes: string[] = [];
      for (const [i, s] of staged.entries()) {
        const cur = raws[i] ? decodeRow(raws[i]!) : null;
        const prefs = cur ? prefsOf(cur) : decodePrefs(prefsRaw[i]);
        const next = await s.compute(cur ? { ...cur } : null, prefs);
        if (!next) continue;
        const prefsChanged = s.prefsChange === true || encodePrefs(prefsOf(next)) !== encodePrefs(decodePrefs(prefsRaw[i]));
        writes.push({ conversationHex: s.conversationHex, expected: raws[i] ?? "", row: encodeRowCore(next), keep: !isDeleted(next), prefs: prefsChanged ? encodePrefs(prefsOf(next)) : "" });
        rows.push(next);
        hexes.push(s.conversationHex);
      }
      if (writes.length === 0 && !meta.fullBadge) return null;
      const reply = await applyRowsScript.run(client, k, { includeMuted: this.includeMuted(tenant), drivingEventId: meta.drivingEventId, fullBadge: meta.fullBadge === true, writes });
      if (reply.status === "ROW_MOVED") {
        metrics.conflicts.inc();
        if (attempt >= 20) throw new Error(`conversation list: rows of ${user} kept moving under ${attempt} attempts`);
        continue;
      }
      metrics.rowWrites.inc(writes.length);
      let badge: Omit<BadgeState, "version"> = { totalUnread: reply.totalUnread, totalMention: reply.totalMention, mutedUnread: reply.mutedUnread };
      if (this.looksLive(tenant, user) && this.heldOf(tenant, user).size > 0) {
        // records arrived for rows this write did not take: what a live reader sees includes them
        const v = await this.view(tenant, user, hexes);
        for (const [i, h] of hexes.entries()) {
          const live = v.rows.get(h);
          if (live && !isDeleted(rows[i]!)) rows[i] = live;
        }
        badge = v.badge ?? badge;
      }
      const change: ListChange = {
        tenant, user,
        rows: rows.map((r, i) => toConversationRow(tenant, user, hexes[i]!, { ...r, version: reply.version, drivingEventId: meta.drivingEventId })),
        badge: { ...badge, version: reply.version },
        version: reply.version,
        drivingEventId: meta.drivingEventId,
        structural: meta.structural,
      };
      this.emit(change);
      return change;
    }
  }

  /**
   * Applies delivered records to a row (a flush of the compaction window): each record newer than
   * the row is added; a late or repeated one, or one that moves the user's own membership, makes
   * the row a bounded recompute instead (only the authority can tell a late record from a repeat).
   */
  private applyEntries(tenant: Uuid, user: Uuid, conversationHex: string, entries: readonly InHandEntry[]): Compute {
    return async (cur, prefs) => (await this.applyInHand(tenant, user, conversationHex, entries, cur, prefs)).row;
  }

  /** applyEntries, saying whether the row was recomputed (then the records in hand are already in it). */
  private async applyInHand(tenant: Uuid, user: Uuid, conversationHex: string, entries: readonly InHandEntry[], cur: RowState | null, prefs: RowPrefs): Promise<{ row: RowState | null; recomputed: boolean }> {
    const userHex = uuidToHex(user);
    if (!cur) return { row: await this.recompute(tenant, user, conversationHex, prefs, null, "new_row"), recomputed: true };
    for (const e of [...entries].sort((a, b) => a.seq - b.seq)) {
      if (!applyEntry(cur, e, userHex, this.cap)) {
        return { row: await this.recompute(tenant, user, conversationHex, prefs, cur, e.membershipHex !== "" ? "membership" : "late_or_repeated"), recomputed: true };
      }
    }
    return { row: cur, recomputed: false };
  }

  /** The compaction flush of one user's rows (the consumer calls it; also the final flush). */
  async flushUser(tenant: Uuid, user: Uuid, pending: readonly PendingRow[]): Promise<ListChange | null> {
    return this.withUser(tenant, user, async () => {
      const userHex = uuidToHex(user);
      const staged = pending.map((p) => ({ conversationHex: p.conversationHex, compute: this.applyEntries(tenant, user, p.conversationHex, p.entries) }));
      const structural = pending.some((p) => p.entries.some((e) => e.membershipHex !== "" && e.membershipHex.includes(userHex)));
      const last = pending.flatMap((p) => p.entries).reduce<InHandEntry | null>((a, e) => (a === null || e.seq > a.seq ? e : a), null);
      return this.write(tenant, user, staged, { drivingEventId: last?.eventId ?? "", structural });
    });
  }

  /**
   * One row changed by the user: the records in hand are applied first, then `change` (which may
   * move base: then the three-state update runs with those records in hand).
   */
  private action(tenantIn: string, userIn: string, conversationIn: string, name: string, structural: boolean,
    change: (r: RowState, ctx: { inHand: InHandEntry[]; windowStart: number | null; userHex: string; tenant: Uuid; user: Uuid; hex: string }) => Promise<RowState | null> | RowState | null): Promise<ConversationRow> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    const conversation = parseUuid(conversationIn, "conversation");
    const hex = uuidToHex(conversation);
    const userHex = uuidToHex(user);
    return this.withUser(tenant, user, async () => {
      // sorted as a copy: the taken array is the one heldOf answered, which a live view may still read
      const inHand = [...this.takePending(tenant, user, hex)].sort((a, b) => a.seq - b.seq);
      let notVisible = false;
      const out = await this.write(tenant, user, [{
        conversationHex: hex,
        prefsChange: true,
        compute: async (cur, prefs) => {
          // the records in hand cover (windowStart, head] only when they were added to the stored
          // row; a recompute already counted everything (§3.2 (a) is then moot)
          const windowStart = cur ? cur.headSeq : null;
          const { row, recomputed } = await this.applyInHand(tenant, user, hex, inHand, cur, prefs);
          if (!row) {
            notVisible = true;
            return null;
          }
          return change(row, { inHand: recomputed ? [] : inHand, windowStart: recomputed ? null : windowStart, userHex, tenant, user, hex });
        },
      }], { drivingEventId: `${name}:${newUuid()}`, structural }).catch((err: unknown) => {
        if (inHand.length > 0) this.restorePending(tenant, user, hex, inHand);
        throw err;
      });
      if (notVisible || !out || out.rows.length === 0) throw new PermissionDeniedError();
      return out.rows[0]!;
    });
  }

  /** Moves base to its new value with the three-state update (§3.2), recomputing for (c). */
  private async rebase(r: RowState, ctx: { inHand: InHandEntry[]; windowStart: number | null; userHex: string; tenant: Uuid; user: Uuid; hex: string }, cause: string): Promise<RowState | null> {
    if (moveBase(r, baseOf(r), ctx.inHand, ctx.windowStart, ctx.userHex)) return r;
    return this.recompute(ctx.tenant, ctx.user, ctx.hex, prefsOf(r), r, cause);
  }

  /**
   * The read position moved (ConversationService.markRead's hook). A read to a position before the
   * head (another device, §3.4) is a recompute or a decrement, never a clear.
   */
  async readMoved(tenant: Uuid, conversation: Uuid, user: Uuid, readSeq: number): Promise<ConversationRow | null> {
    try {
      return await this.action(tenant, user, conversation, "read", false, (r, ctx) => {
        r.read = Math.max(r.read, readSeq);
        return this.rebase(r, ctx, "read");
      });
    } catch (err) {
      if (err instanceof PermissionDeniedError) return null;
      throw err;
    }
  }

  /**
   * Retention moved the conversation's floor to `floor` (issue 26): records below it are gone, so
   * a cached unread counted from a base below `floor - 1` may count trimmed messages; that row is
   * recomputed from the definition (which counts only what remains). A user without a row keeps none.
   */
  async retentionMoved(tenant: Uuid, conversation: Uuid, user: Uuid, floor: number): Promise<void> {
    const cur = await this.row(tenant, user, conversation);
    if (!cur || cur.unread === 0) return;
    try {
      await this.action(tenant, user, conversation, "retention", false, (r, ctx) =>
        (r.unread > 0 && baseOf(r) < floor - 1 ? this.recompute(ctx.tenant, ctx.user, ctx.hex, prefsOf(r), r, "retention") : r));
    } catch (err) {
      if (err instanceof PermissionDeniedError) return;
      throw err;
    }
  }

  /** Clear history (§7): hidden_before = the head; the conversation stays in the list, unread 0. */
  clear(tenant: string, user: string, conversation: string): Promise<ConversationRow> {
    return this.action(tenant, user, conversation, "clear", false, async (r, ctx) => {
      const fresh = await this.recompute(ctx.tenant, ctx.user, ctx.hex, prefsOf(r), r, "clear");
      if (!fresh) return null;
      fresh.hidden = Math.max(fresh.hidden, fresh.headSeq);
      return this.rebase(fresh, { ...ctx, inHand: [], windowStart: null }, "clear");
    });
  }

  /** Delete (§7): deleted_before = the head; the conversation leaves the list until a newer message. */
  delete(tenant: string, user: string, conversation: string): Promise<ConversationRow> {
    return this.action(tenant, user, conversation, "delete", true, async (r, ctx) => {
      const fresh = await this.recompute(ctx.tenant, ctx.user, ctx.hex, prefsOf(r), r, "delete");
      if (!fresh) return null;
      // deleted_before = head.latest (§7), 0 for a conversation with no message yet: the flag
      // keeps it in force, so that message 1 revives the conversation instead of being swallowed
      fresh.deleted = Math.max(fresh.deleted, fresh.headSeq);
      fresh.deletedBeforeSet = true;
      return this.rebase(fresh, { ...ctx, inHand: [], windowStart: null }, "delete");
    });
  }

  pin(tenant: string, user: string, conversation: string, opts: { rank?: number } = {}): Promise<ConversationRow> {
    const rank = opts.rank ?? 0;
    if (!Number.isSafeInteger(rank) || rank < 0 || rank > 0xffffffff) throw new InvalidArgumentError("rank", "pin rank must be an integer from 0 to 4294967295");
    return this.action(tenant, user, conversation, "pin", true, (r) => ({ ...r, pinRank: rank }));
  }

  unpin(tenant: string, user: string, conversation: string): Promise<ConversationRow> {
    return this.action(tenant, user, conversation, "unpin", true, (r) => ({ ...r, pinRank: null }));
  }

  mute(tenant: string, user: string, conversation: string): Promise<ConversationRow> {
    return this.action(tenant, user, conversation, "mute", false, (r) => ({ ...r, muted: true }));
  }

  unmute(tenant: string, user: string, conversation: string): Promise<ConversationRow> {
    return this.action(tenant, user, conversation, "unmute", false, (r) => ({ ...r, muted: false }));
  }

  archive(tenant: string, user: string, conversation: string): Promise<ConversationRow> {
    return this.action(tenant, user, conversation, "archive", true, (r) => ({ ...r, archived: true }));
  }

  unarchive(tenant: string, user: string, conversation: string): Promise<ConversationRow> {
    return this.action(tenant, user, conversation, "unarchive", true, (r) => ({ ...r, archived: false }));
  }

  // ---- reconcile, rebuild, audit ----

  /** Every conversation the user has a row, a choice, a projection entry or an authority row for. */
  private async conversationsOf(tenant: Uuid, user: Uuid): Promise<string[]> {
    const k = this.listKeys(tenant, user);
    const pk = userKeys(this.keys, tenant, user);
    const [res, registered] = await Promise.all([
      this.store.clientFor(k.tag).multi().hkeys(k.rows).hkeys(k.prefs).zrange(pk.convs, "0", "-1").exec(),
      this.authority.conversations(tenant, user),
    ]);
    const all = new Set<string>();
    for (const [, v] of res ?? []) for (const c of v as string[]) all.add(c);
    for (const r of registered) all.add(uuidToHex(r.conversation));
    return [...all].sort();
  }

  /**
   * Reconcile (§3.4: new device or login, checkpoint rollback replay): every row recomputed from
   * the authority, the user's choices kept, the badge recomputed in full (§4) in the same step.
   */
  async reconcile(tenantIn: string, userIn: string): Promise<ReconcileResult> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    const [convs, before] = await Promise.all([this.conversationsOf(tenant, user), this.badgeIfStored(tenant, user)]);
    return this.withUser(tenant, user, async () => {
      const drift = { rows: 0, unread: 0, mentions: 0, badgeBefore: before };
      const staged: Staged[] = convs.map((hex) => ({
        conversationHex: hex,
        compute: async (cur, prefs) => {
          const held = this.takePending(tenant, user, hex);
          const r = await this.recompute(tenant, user, hex, prefs, cur, "reconcile");
          // drift is what the live view (stored row + records held for the window) got wrong, not
          // the window's lag; a held change of the user's own membership is no drift either
          const seen = cur ? liveRow(cur, held, uuidToHex(user), this.cap) : null;
          if (r && seen && (r.unread !== seen.unread || r.mentions !== seen.mentions || r.lastActivityId !== seen.lastActivityId)) {
            drift.rows++;
            drift.unread += Math.abs(r.unread - seen.unread);
            drift.mentions += Math.abs(r.mentions - seen.mentions);
          }
          if (r) r.headSeq = Math.max(r.headSeq, r.lastActivitySeq);
          return r;
        },
      }));
      const change = await this.write(tenant, user, staged, { drivingEventId: `reconcile:${newUuid()}`, structural: true, fullBadge: true });
      const rows = (change?.rows ?? []).filter((r) => !r.deleted);
      const badge = change?.badge ?? (await this.badge(tenant, user));
      return { rows, badge, drift };
    });
  }

  private async badgeIfStored(tenant: Uuid, user: Uuid): Promise<BadgeState | null> {
    const k = this.listKeys(tenant, user);
    const res = await this.store.clientFor(k.tag).multi().hgetall(k.badge).get(k.version).exec();
    const b = (res?.[0]?.[1] ?? {}) as Record<string, string>;
    if (b.total_unread === undefined) return null;
    return { totalUnread: Number(b.total_unread), totalMention: Number(b.total_mention), mutedUnread: Number(b.muted_unread), version: Number((res?.[1]?.[1] as string | null) ?? 0) };
  }

  /**
   * The rebuild drill's check of the list (the drill's `compare`, core/projection/drill.ts): every
   * conversation of the user, the cached unread, unreadExact and mentions against the definition
   * (a bounded recompute: read only), a conversation listed by one and not the other, and the
   * stored badge against the §4 sums over the definitional rows. Mentions are compared only where
   * both counts are exact (beyond unread_precise_limit the definition counts the newest 200).
   * Corrects nothing (reconcile does).
   */
  async drillCheck(tenantIn: string, userIn: string): Promise<DrillCheck> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    const k = this.listKeys(tenant, user);
    const [convs, res] = await Promise.all([
      this.conversationsOf(tenant, user),
      this.store.clientFor(k.tag).multi().hgetall(k.rows).hgetall(k.prefs).hgetall(k.badge).exec(),
    ]);
    const rowsRaw = (res?.[0]?.[1] ?? {}) as Record<string, string>;
    const prefsRaw = (res?.[1]?.[1] ?? {}) as Record<string, string>;
    const badgeRaw = (res?.[2]?.[1] ?? {}) as Record<string, string>;
    const differences: DrillDifference[] = [];
    const definitional: ConversationRow[] = [];
    let compared = 0;
    for (const hex of convs) {
      const cur = rowsRaw[hex] ? decodeRow(rowsRaw[hex]) : null;
      const def = await this.recompute(tenant, user, hex, cur ? prefsOf(cur) : decodePrefs(prefsRaw[hex]), cur, "drill");
      const listed = def !== null && !isDeleted(def);
      if (listed) definitional.push(toConversationRow(tenant, user, hex, def));
      if (!cur && !listed) continue;
      compared++;
      const base = { tenant, user, conversation: hexToUuid(hex) };
      if (!cur || !listed) {
        differences.push({ ...base, field: "listPresence", before: cur !== null, after: listed });
        continue;
      }
      if (cur.unread !== def.unread) differences.push({ ...base, field: "listUnread", before: cur.unread, after: def.unread });
      if (cur.unreadExact !== def.unreadExact) differences.push({ ...base, field: "listUnreadExact", before: cur.unreadExact, after: def.unreadExact });
      if (cur.unreadExact && def.unreadExact && cur.mentions !== def.mentions) differences.push({ ...base, field: "listMentions", before: cur.mentions, after: def.mentions });
    }
    if (badgeRaw.total_unread !== undefined) {
      const sums = this.sums(definitional, tenant);
      const stored = { totalUnread: Number(badgeRaw.total_unread), totalMention: Number(badgeRaw.total_mention), mutedUnread: Number(badgeRaw.muted_unread) };
      const fields = [["badgeTotalUnread", "totalUnread"], ["badgeTotalMention", "totalMention"], ["badgeMutedUnread", "mutedUnread"]] as const;
      for (const [field, key] of fields) {
        if (stored[key] !== sums[key]) differences.push({ tenant, user, conversation: "", field, before: stored[key], after: sums[key] });
      }
    }
    return { compared, differences };
  }

  /** Drops the user's projection rows and badge (J-6 "delete every projection row"); keeps their choices and version. */
  async wipeUser(tenantIn: string, userIn: string): Promise<void> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    const k = this.listKeys(tenant, user);
    await this.withUser(tenant, user, () => this.store.clientFor(k.tag).multi().del(k.rows).del(k.badge).exec());
  }

  /** Rebuild (J-6): wipe the rows and badge, then reconcile from the authority, the history and the user's choices. */
  async rebuild(tenant: string, user: string): Promise<ReconcileResult> {
    await this.wipeUser(tenant, user);
    return this.reconcile(tenant, user);
  }

  /** Reconciles of a user in flight in this process: a trigger that finds one waits for it instead of starting another. */
  private readonly reconciling = new Map<string, Promise<ReconcileResult>>();
  /** Bounded triggers in flight in this process, per user and trigger (from before their SET NX answered). */
  private readonly boundedInFlight = new Map<string, Promise<BoundedReconcile>>();

  /**
   * The engine entry point of the §3.4 trigger "new device / login": the client gateway calls it
   * at AUTH, before it sends AUTH_OK's badge. Bounded per user by RECONCILE_MIN_INTERVAL_MS.
   */
  reconcileOnLogin(tenantIn: string, userIn: string): Promise<BoundedReconcile> {
    return this.reconcileBounded(tenantIn, userIn, "login");
  }

  /**
   * A reconcile of the user unless one ran for the same trigger less than
   * RECONCILE_MIN_INTERVAL_MS ago in any process (a key with that expiry on the user's tag, SET NX:
   * a reconnect storm of 10,000 logins costs one reconcile and at most 10,000 SETs) or is running
   * in this process (then the caller waits for it, so that what it reads next is reconciled; a
   * caller on another process does not wait).
   */
  async reconcileBounded(tenantIn: string, userIn: string, trigger: BoundedReconcileTrigger): Promise<BoundedReconcile> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    const id = `${tenant}${user}:${trigger}`;
    const running = this.boundedInFlight.get(id) ?? this.reconciling.get(tenant + user);
    if (running) {
      await running.catch(() => {});
      metrics.reconcilesBounded.inc({ trigger });
      return { reconciled: false, result: null };
    }
    const attempt = (async (): Promise<BoundedReconcile> => {
      const k = this.listKeys(tenant, user);
      const taken = await this.store.clientFor(k.tag).set(k.reconciled(trigger), "1", "PX", this.reconcileMinIntervalMs, "NX");
      if (taken === null) {
        metrics.reconcilesBounded.inc({ trigger });
        return { reconciled: false, result: null };
      }
      return { reconciled: true, result: await this.reconcileFor(tenant, user, trigger) };
    })();
    this.boundedInFlight.set(id, attempt);
    try {
      return await attempt;
    } finally {
      this.boundedInFlight.delete(id);
    }
  }

  /** reconcile(), counted by trigger and shared with the other triggers of the user in this process. */
  async reconcileFor(tenant: Uuid, user: Uuid, trigger: ReconcileTrigger): Promise<ReconcileResult> {
    const id = tenant + user;
    const running = this.reconciling.get(id);
    if (running) return running;
    const p = this.reconcile(tenant, user);
    this.reconciling.set(id, p);
    try {
      const result = await p;
      metrics.reconciles.inc({ trigger });
      return result;
    } finally {
      this.reconciling.delete(id);
    }
  }

  /**
   * The unread audit (§3.4): rows with unread and no activity for `idleMs`, sampled at
   * `sampleRate`, compared with the definition. Reports drift and sets unread_drift_ratio; it
   * corrects nothing (reconcile does). Users are found with SCAN (an audit, not a serving path).
   */
  async audit(opts: { sampleRate?: number; idleMs?: number; random?: () => number; maxDrifts?: number; signal?: AbortSignal } = {}): Promise<UnreadAuditReport> {
    const sampleRate = opts.sampleRate ?? UNREAD_AUDIT_SAMPLE_RATE;
    const idleMs = opts.idleMs ?? UNREAD_AUDIT_IDLE_MS;
    if (!(sampleRate > 0 && sampleRate <= 1)) throw new InvalidArgumentError("sampleRate", "sample rate must be in (0, 1]");
    if (!Number.isSafeInteger(idleMs) || idleMs < 0) throw new InvalidArgumentError("idleMs", "idle time must be an integer ≥ 0 (ms)");
    const random = opts.random ?? Math.random;
    const now = this.now();
    const report: UnreadAuditReport = { sampleRate, idleMs, usersScanned: 0, candidates: 0, sampled: 0, drifted: 0, driftRatio: 0, drifts: [] };
    const pattern = listRowsPattern(this.keys);
    const re = /:clrows:([0-9a-f]{32}):([0-9a-f]{32})$/;
    const signal = opts.signal;
    for (const client of this.store.dataNodes()) {
      let cursor = "0";
      do {
        signal?.throwIfAborted();
        const [next, found] = await client.scan(cursor, "MATCH", pattern, "COUNT", AUDIT_SCAN_COUNT);
        cursor = next;
        for (const key of found) {
          const m = re.exec(key);
          if (!m) continue;
          const tenant = hexToUuid(m[1]!);
          const user = hexToUuid(m[2]!);
          report.usersScanned++;
          // a user's rows a bounded chunk at a time (HSCAN), never the whole hash in one reply
          let rowCursor = "0";
          do {
            signal?.throwIfAborted();
            const [nextRow, flat] = await client.hscan(key, rowCursor, "COUNT", AUDIT_SCAN_COUNT);
            rowCursor = nextRow;
            for (let i = 0; i + 1 < flat.length; i += 2) {
              const hex = flat[i]!;
              const r = decodeRow(flat[i + 1]!);
              if (r.unread === 0 || now - r.lastActivityAt < idleMs) continue;
              report.candidates++;
              if (random() >= sampleRate) continue;
              report.sampled++;
              const def = await this.recompute(tenant, user, hex, prefsOf(r), r, "audit");
              const defUnread = def?.unread ?? 0;
              const defMentions = def?.mentions ?? 0;
              if (defUnread !== r.unread || defMentions !== r.mentions) {
                report.drifted++;
                if (report.drifts.length < (opts.maxDrifts ?? 100)) {
                  report.drifts.push({ tenant, user, conversation: hexToUuid(hex), cachedUnread: r.unread, definitionalUnread: defUnread, cachedMentions: r.mentions, definitionalMentions: defMentions });
                }
              }
            }
          } while (rowCursor !== "0");
        }
      } while (cursor !== "0");
    }
    report.driftRatio = report.sampled === 0 ? 0 : report.drifted / report.sampled;
    metrics.driftRatio.set(report.driftRatio);
    return report;
  }
}
