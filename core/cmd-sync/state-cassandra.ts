/**
 * The durable CMD conversation state on Cassandra (spec 001 StateStore), chosen when Cassandra is
 * configured (the authority's settings; docs/cmd-sync-core.md, "The durable state on Cassandra").
 *
 *   cmd_conversation_state  PRIMARY KEY ((tenant_id, user_id), channel_type, channel_id):
 *                           read_seq, deleted_to_seq, active_at, updated_at, last_msg_seq (bigint);
 *                           fence_token, no longer written (the conditional writes before issue 26)
 *   cmd_conversation_active PRIMARY KEY ((tenant_id, user_id), active_at, channel_type, channel_id)
 *                           CLUSTERING ORDER BY (active_at DESC, channel_type ASC, channel_id ASC):
 *                           spec 001's sync order, so listActive is one ordered read
 *
 * Every value of a row only grows (the Lua's max merge), so each cell is written with a write
 * timestamp made from its value (cellTimestamp): Cassandra keeps, per cell, the write with the
 * highest timestamp — the highest value, whoever wrote last. No lightweight transaction, no SERIAL
 * read, no retry: a user's rows are one unlogged batch on the user's partition, read first only
 * where this store does not remember them (to merge, to keep a replay a no-op, and so that a read
 * advance never creates a row). Cells the conditional-write code left have ordinary timestamps,
 * below every value timestamp: the first write after the upgrade replaces them with the maximum
 * of what it read and what it brings. Fencing: the slot's lease in Redis is checked before
 * writing (as includes/fenceHolds); past it, a paused old owner can only write values it really
 * has — the maximum keeps the newest of them — not move any cell back.
 */
import cassandra from "cassandra-driver";
import type { KeySpace, Uuid } from "../base/index.js";
import { leaseHolds, type Fence } from "../cluster/index.js";
import { CassandraConnection, type CassandraOptions } from "../cassandra/index.js";
import type { RedisStore } from "../store/index.js";
import { eachLimited, Limiter } from "../support/index.js";
import { CmdFencedError } from "./errors.js";
import { cmdMetrics } from "./metrics.js";
import { checkRead, checkState, CMD_STATE_READ_CHUNK, isUnreadState, oneSlot } from "./state.js";
import type { CommandChannelKey } from "../cmd-log/index.js";
import type { CmdConversationState, CmdReadPatch, CmdStateStore } from "./types.js";

/**
 * The write timestamp of a cell of value v is this + v: above every ordinary timestamp (µs since
 * 1970, ~1.8e15 now; 2^61 µs is the year 75,000), so a cell of the code before keeps no value that
 * a max merge has passed, and below 2^63 for every value a state holds (< 2^53).
 */
export const CMD_CASSANDRA_CELL_TIMESTAMP_BASE = 2n ** 61n;
/** Users of one batch written at once (each its own partition and batch). */
export const CMD_CASSANDRA_USER_CONCURRENCY = 16;
/**
 * Slot batches a flush writes at once (CmdStateStore.flushConcurrency). One after another, a
 * flush waited out every slot's round trips in turn (553 rows/s with conditional writes, issue
 * 26); a slot's batch often holds a few users only, so 32 slots keep about as many batches in
 * flight as the raw write bench/cmd compares with (with 8: 0.31× of it, with 32: 0.68×).
 */
export const CMD_CASSANDRA_FLUSH_CONCURRENCY = 32;
/** User batches this store has in flight at most, whatever the slots: the bound on Cassandra's queue. */
export const CMD_CASSANDRA_WRITES_IN_FLIGHT = 128;
/**
 * Rows this store remembers as last written or read (per tenant, user, channel; a row read as
 * absent too), at most: a write whose rows are all remembered skips the read. A remembered row
 * behind the stored one (another node wrote since) costs nothing wrong: the merge writes the
 * maximum of it and the write's values, and the cells keep the higher of that and what is stored.
 * About 150 B each: ~15 MB at the bound.
 */
export const CMD_CASSANDRA_ROW_CACHE = 100_000;
/** Index rows read per page by listActive. */
export const CMD_CASSANDRA_ACTIVE_PAGE = 500;
export const CMD_CASSANDRA_STATE_TABLE = "cmd_conversation_state";
export const CMD_CASSANDRA_ACTIVE_TABLE = "cmd_conversation_active";
/** Settings of the tables: `cells` = "value" when every cell carries its value's timestamp (tables made by this code). */
export const CMD_CASSANDRA_META_TABLE = "cmd_state_meta";
const CMD_CASSANDRA_META_CELLS = "cells";

export interface CassandraCmdStateStoreDeps {
  /** The slots' leases (fence check 1) live in Redis. */
  store: RedisStore;
  keys: KeySpace;
  /** The engine's Cassandra settings (the authority's): contact points, keyspace, consistency, credentials, TLS. */
  cassandra: CassandraOptions;
}

interface StoredRow {
  readSeq: number;
  deletedToSeq: number;
  activeAt: number;
  updatedAt: number;
  /** null: a row written before the column existed (last seq unknown until a sync settles it). */
  lastMsgSeq: number | null;
}

type Merge = { channel: CommandChannelKey; next: StoredRow; old: StoredRow | null };

const Long = cassandra.types.Long;
const long = (n: number) => Long.fromNumber(n);
/** A cell's write timestamp: CMD_CASSANDRA_CELL_TIMESTAMP_BASE + its value. */
const cellTimestamp = (value: number): cassandra.types.Long => Long.fromString((CMD_CASSANDRA_CELL_TIMESTAMP_BASE + BigInt(value)).toString());
const num = (v: unknown): number => (v == null ? 0 : typeof v === "number" ? v : Number((v as { toString(): string }).toString()));
const rowKey = (c: CommandChannelKey) => `${c.channelType}|${c.channelId}`;

function stateOf(tenant: Uuid, user: Uuid, channel: CommandChannelKey, s: StoredRow): CmdConversationState {
  return {
    tenant, user, channel: { channelId: channel.channelId, channelType: channel.channelType },
    readSeq: s.readSeq, deletedToSeq: s.deletedToSeq, activeAt: s.activeAt, updatedAt: s.updatedAt, lastMsgSeq: s.lastMsgSeq,
  };
}

function storedOf(r: cassandra.types.Row): StoredRow {
  return {
    readSeq: num(r.read_seq), deletedToSeq: num(r.deleted_to_seq), activeAt: num(r.active_at), updatedAt: num(r.updated_at),
    lastMsgSeq: r.last_msg_seq == null ? null : num(r.last_msg_seq),
  };
}

function groupByUser<T extends { tenant: Uuid; user: Uuid }>(rows: readonly T[]): T[][] {
  const by = new Map<string, T[]>();
  for (const r of rows) {
    const k = `${r.tenant}|${r.user}`;
    const list = by.get(k);
    if (list) list.push(r); else by.set(k, [r]);
  }
  return [...by.values()];
}

export class CassandraCmdStateStore implements CmdStateStore {
  readonly kind = "cassandra" as const;
  readonly flushConcurrency = CMD_CASSANDRA_FLUSH_CONCURRENCY;
  private readonly conn: CassandraConnection;
  private readonly keyspace: string;
  /** `tenant|user|type|id` → the row as this store last wrote or read it (CMD_CASSANDRA_ROW_CACHE, oldest dropped first). */
  private readonly known = new Map<string, StoredRow>();

  constructor(private readonly deps: CassandraCmdStateStoreDeps) {
    this.conn = new CassandraConnection(deps.cassandra);
    this.keyspace = this.conn.keyspace;
  }

  private get client(): cassandra.Client {
    return this.conn.client;
  }

  describe(): string {
    return `cassandra ${this.deps.cassandra.contactPoints.join(",")} keyspace ${this.keyspace} (tables ${CMD_CASSANDRA_STATE_TABLE}, ${CMD_CASSANDRA_ACTIVE_TABLE})`;
  }

  private get state(): string {
    return `${this.keyspace}.${CMD_CASSANDRA_STATE_TABLE}`;
  }

  private get active(): string {
    return `${this.keyspace}.${CMD_CASSANDRA_ACTIVE_TABLE}`;
  }

  private get meta(): string {
    return `${this.keyspace}.${CMD_CASSANDRA_META_TABLE}`;
  }

  /**
   * Whether an upsert reads the rows it does not remember before writing: in tables the code
   * before issue 26's rewrite made (no marker in cmd_state_meta), whose cells may carry ordinary
   * timestamps and unknown last seqs; there the merge must start from what is stored. In tables
   * made since, every cell carries its value's timestamp and an upsert writes blind: each cell
   * keeps the higher of the stored and the written value by itself.
   */
  private readsFirst = true;

  private readonly inFlight = new Limiter(CMD_CASSANDRA_WRITES_IN_FLIGHT);

  /** Whether upserts read first (tables of the code before value timestamps), for docs and tests. */
  get readsBeforeUpsert(): boolean {
    return this.readsFirst;
  }

  /**
   * Connects and creates the keyspace and both tables if missing. A failure is one UNAVAILABLE
   * line (CassandraConnection.open, as the authority's) and leaves a fresh client for a later init().
   */
  async init(): Promise<void> {
    await this.conn.open(async (client) => {
      // tables this code makes hold value timestamps only; tables the conditional-write code made
      // may hold ordinary ones, and are read before every write of a row not remembered
      const existed = (await client.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?", [this.keyspace, CMD_CASSANDRA_STATE_TABLE], { prepare: true })).rows.length > 0;
      await client.execute(`CREATE TABLE IF NOT EXISTS ${this.meta} (name text PRIMARY KEY, value text)`, [], { prepare: false });
      if (!existed) await client.execute(`INSERT INTO ${this.meta} (name, value) VALUES (?, ?)`, [CMD_CASSANDRA_META_CELLS, "value"], { prepare: true });
      const marked = (await client.execute(`SELECT value FROM ${this.meta} WHERE name = ?`, [CMD_CASSANDRA_META_CELLS], { prepare: true })).first()?.value === "value";
      this.readsFirst = !marked;
      await client.execute(
        `CREATE TABLE IF NOT EXISTS ${this.state} (
           tenant_id uuid, user_id uuid, channel_type int, channel_id text,
           read_seq bigint, deleted_to_seq bigint, active_at bigint, updated_at bigint, last_msg_seq bigint, fence_token bigint,
           PRIMARY KEY ((tenant_id, user_id), channel_type, channel_id))`,
        [], { prepare: false });
      await this.addLastMsgSeq();
      await client.execute(
        `CREATE TABLE IF NOT EXISTS ${this.active} (
           tenant_id uuid, user_id uuid, active_at bigint, channel_type int, channel_id text,
           PRIMARY KEY ((tenant_id, user_id), active_at, channel_type, channel_id))
         WITH CLUSTERING ORDER BY (active_at DESC, channel_type ASC, channel_id ASC)`,
        [], { prepare: false });
    });
  }

  /**
   * A table created before the last seq was kept gets the column (its rows read null: last seq
   * unknown, unread until a sync settles them — docs/cmd-sync-core.md, the upgrade).
   * Cassandra has ALTER … ADD IF NOT EXISTS only from 5.0: the column is added when the schema
   * lacks it.
   */
  private async addLastMsgSeq(): Promise<void> {
    const cols = await this.client.execute(
      "SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ? AND column_name = ?",
      [this.keyspace, CMD_CASSANDRA_STATE_TABLE, "last_msg_seq"], { prepare: true });
    if (cols.rows.length === 0) await this.client.execute(`ALTER TABLE ${this.state} ADD last_msg_seq bigint`, [], { prepare: false });
  }

  /** Shuts the client down; a later init() starts on a fresh one. */
  async close(): Promise<void> {
    await this.conn.close();
  }

  async get(tenant: Uuid, user: Uuid, channel: CommandChannelKey): Promise<CmdConversationState | null> {
    const res = await this.client.execute(
      `SELECT read_seq, deleted_to_seq, active_at, updated_at, last_msg_seq FROM ${this.state} WHERE tenant_id = ? AND user_id = ? AND channel_type = ? AND channel_id = ?`,
      [tenant, user, channel.channelType, channel.channelId]);
    const r = res.first();
    if (!r) return null;
    return stateOf(tenant, user, channel, storedOf(r));
  }

  async getMany(tenant: Uuid, user: Uuid, channels: readonly CommandChannelKey[]): Promise<CmdConversationState[]> {
    const out: CmdConversationState[] = [];
    for (let i = 0; i < channels.length; i += CMD_STATE_READ_CHUNK) {
      const chunk = channels.slice(i, i + CMD_STATE_READ_CHUNK);
      const rows = await this.readRows(tenant, user, chunk);
      for (const c of chunk) {
        const s = rows.get(rowKey(c));
        if (s) out.push(stateOf(tenant, user, c, s));
      }
    }
    return out;
  }

  /**
   * The index in order, each entry checked against its state row: an entry whose active_at is
   * older than the row's is left over from a move (deleted here: the row's active_at only grows,
   * so it can never be right again); a newer one, or one without a row, is a write in flight (or
   * one that died between its two steps) and is skipped, never deleted. Pages until `limit` good
   * rows or the end.
   */
  listActive(tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]> {
    return this.listIndex(tenant, user, limit, () => true);
  }

  /**
   * The unread rows in the index's order: the index is paged (CMD_CASSANDRA_ACTIVE_PAGE entries and
   * their rows a call) past the read rows until `limit` unread ones or the end. Every call is
   * bounded; a user with many read channels costs more pages, never a missed unread one (issue 23).
   * A second index of the unread rows only would need a move protocol of its own beside the active
   * one (a conditional batch cannot span tables); docs/cmd-sync-core.md.
   */
  listUnread(tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]> {
    return this.listIndex(tenant, user, limit, isUnreadState);
  }

  private async listIndex(tenant: Uuid, user: Uuid, limit: number, keep: (s: CmdConversationState) => boolean): Promise<CmdConversationState[]> {
    if (!Number.isSafeInteger(limit) || limit <= 0) return [];
    const out: CmdConversationState[] = [];
    let pageState: string | undefined;
    do {
      const page = await this.client.execute(
        `SELECT active_at, channel_type, channel_id FROM ${this.active} WHERE tenant_id = ? AND user_id = ?`,
        [tenant, user], { fetchSize: Math.min(CMD_CASSANDRA_ACTIVE_PAGE, limit), ...(pageState ? { pageState } : {}) });
      pageState = page.pageState ?? undefined;
      if (page.rows.length === 0) break;
      const entries = page.rows.map((r) => ({ activeAt: num(r.active_at), channel: { channelType: Number(r.channel_type), channelId: String(r.channel_id) } }));
      const rows = await this.readRows(tenant, user, entries.map((e) => e.channel));
      const stale: typeof entries = [];
      for (const e of entries) {
        const s = rows.get(rowKey(e.channel));
        if (!s || s.activeAt < e.activeAt) continue;
        if (s.activeAt > e.activeAt) { stale.push(e); continue; }
        const state = stateOf(tenant, user, e.channel, s);
        if (out.length < limit && keep(state)) out.push(state);
      }
      if (stale.length > 0) await this.deleteIndex(tenant, user, stale).catch(() => {});
    } while (pageState && out.length < limit);
    return out;
  }

  async advanceReadSeqs(patches: readonly CmdReadPatch[], fence: Fence, updatedAt: number = Date.now()): Promise<void> {
    if (patches.length === 0) return;
    for (const p of patches) checkRead(p);
    await this.writeBatch(patches, fence, (mine, old) => {
      // a missing row is a no-op; a read seq never goes back; updated at only grows; a settled last
      // seq is max-merged into the row's (an unknown one taken as none), as advanceCmdStateReads
      if (!old) return null;
      const read = Math.max(old.readSeq, ...mine.map((p) => p.readSeq));
      let last = old.lastMsgSeq;
      for (const p of mine) if (p.lastMsgSeq !== undefined) last = last === null ? p.lastMsgSeq : Math.max(last, p.lastMsgSeq);
      if (read === old.readSeq && last === old.lastMsgSeq) return null;
      return { ...old, readSeq: read, lastMsgSeq: last, updatedAt: Math.max(old.updatedAt, updatedAt) };
    }, true);
  }

  async upsertStates(states: readonly CmdConversationState[], fence: Fence): Promise<void> {
    if (states.length === 0) return;
    for (const s of states) checkState(s);
    await this.writeBatch(states, fence, (mine, old) => {
      // the channel's rows of the batch, merged in order as the Lua merges them one by one
      let acc: StoredRow | null = old;
      let changed = false;
      for (const s of mine) {
        if (!acc) { acc = { readSeq: s.readSeq, deletedToSeq: s.deletedToSeq, activeAt: s.activeAt, updatedAt: s.updatedAt, lastMsgSeq: s.lastMsgSeq }; changed = true; continue; }
        const next = {
          readSeq: Math.max(acc.readSeq, s.readSeq), deletedToSeq: Math.max(acc.deletedToSeq, s.deletedToSeq),
          activeAt: Math.max(acc.activeAt, s.activeAt), updatedAt: Math.max(acc.updatedAt, s.updatedAt),
          // a row of the old code keeps its last seq unknown until a sync settles it (upsertCmdStates-4)
          lastMsgSeq: acc.lastMsgSeq === null ? null : Math.max(acc.lastMsgSeq, s.lastMsgSeq!),
        };
        // nothing of read, deleted-to, active at, last seq grows: the row stays as it is, its updated at included (a replay is a no-op)
        if (next.readSeq === acc.readSeq && next.deletedToSeq === acc.deletedToSeq && next.activeAt === acc.activeAt && next.lastMsgSeq === acc.lastMsgSeq) continue;
        acc = next;
        changed = true;
      }
      return changed ? acc : null;
    }, this.readsFirst);
  }

  /**
   * A batch of one slot: the lease check once, then each user's rows (at most
   * CMD_CASSANDRA_USER_CONCURRENCY users at once), `merge` given one channel's rows of the batch in
   * order and the stored row (null: none, or not known when `readUnknown` is false), answering the
   * row to write or null for nothing.
   */
  private async writeBatch<T extends { tenant: Uuid; user: Uuid; channel: CommandChannelKey }>(
    rows: readonly T[], fence: Fence, merge: (mine: T[], old: StoredRow | null) => StoredRow | null, readUnknown: boolean,
  ): Promise<void> {
    const slot = oneSlot(rows);
    await this.checkLease(slot, fence);
    await eachLimited(groupByUser(rows), CMD_CASSANDRA_USER_CONCURRENCY, (list) => {
      const byChannel = new Map<string, T[]>();
      for (const r of list) {
        const k = rowKey(r.channel);
        const same = byChannel.get(k);
        if (same) same.push(r); else byChannel.set(k, [r]);
      }
      return this.writeUser(list[0]!.tenant, list[0]!.user, list.map((r) => r.channel), (channel, old) => merge(byChannel.get(rowKey(channel)) ?? [], old), readUnknown);
    });
  }

  /** The fence: the slot's lease in Redis names exactly (owner, token), as includes/fenceHolds. */
  private async checkLease(slot: number, fence: Fence): Promise<void> {
    if (await leaseHolds(this.deps.store, this.deps.keys, "slot", slot, fence)) return;
    cmdMetrics.cassandraFenced.inc({ layer: "lease" });
    throw new CmdFencedError(slot);
  }

  private async readRows(tenant: Uuid, user: Uuid, channels: readonly CommandChannelKey[]): Promise<Map<string, StoredRow>> {
    const types = [...new Set(channels.map((c) => c.channelType))];
    const ids = [...new Set(channels.map((c) => c.channelId))];
    // IN on both clustering columns reads their cross product: filtered to the channels asked for
    const res = await this.client.execute(
      `SELECT channel_type, channel_id, read_seq, deleted_to_seq, active_at, updated_at, last_msg_seq FROM ${this.state}
       WHERE tenant_id = ? AND user_id = ? AND channel_type IN ? AND channel_id IN ?`,
      [tenant, user, types, ids]);
    const out = new Map<string, StoredRow>();
    for (const r of res.rows) out.set(`${r.channel_type}|${r.channel_id}`, storedOf(r));
    return out;
  }

  private async deleteIndex(tenant: Uuid, user: Uuid, entries: readonly { activeAt: number; channel: CommandChannelKey }[]): Promise<void> {
    if (entries.length === 0) return;
    await this.client.batch(entries.map((e) => this.indexStatement("delete", tenant, user, e.activeAt, e.channel)), { prepare: true, logged: false });
  }

  /** The index entry of a row at an active time, written or deleted. */
  private indexStatement(op: "insert" | "delete", tenant: Uuid, user: Uuid, activeAt: number, c: CommandChannelKey): { query: string; params: unknown[] } {
    return {
      query: op === "insert"
        ? `INSERT INTO ${this.active} (tenant_id, user_id, active_at, channel_type, channel_id) VALUES (?, ?, ?, ?, ?)`
        : `DELETE FROM ${this.active} WHERE tenant_id = ? AND user_id = ? AND active_at = ? AND channel_type = ? AND channel_id = ?`,
      params: [tenant, user, long(activeAt), c.channelType, c.channelId],
    };
  }

  /**
   * One user's rows, without a lightweight transaction: the rows this store does not remember are
   * read (at the store's consistency), each channel's merge computed, and everything written in
   * ONE unlogged batch on the user's partition (state and index share the partition key, so the
   * batch is one mutation, applied whole on each replica): the index entry of a row whose active
   * time moved, the deletion of the entry it left behind, and the row's cells, each written with
   * the timestamp of its value (cellTimestamp). A writer that raced this one with other values
   * loses or wins cell by cell by value: what stays is the maximum of every write, the max merge
   * the Lua does, whoever wrote last and whatever it had read.
   */
  private async writeUser(
    tenant: Uuid, user: Uuid, channels: readonly CommandChannelKey[],
    merge: (channel: CommandChannelKey, old: StoredRow | null) => StoredRow | null, readUnknown: boolean,
  ): Promise<void> {
    const unique = [...new Map(channels.map((c) => [rowKey(c), c])).values()];
    const userKey = `${tenant}|${user}|`;
    const rows = this.remembered(userKey, unique);
    const unknown = unique.filter((c) => !this.known.has(userKey + rowKey(c)));
    if (unknown.length > 0 && readUnknown) {
      const read = await this.readRows(tenant, user, unknown);
      for (const c of unknown) {
        const r = read.get(rowKey(c)) ?? null;
        if (r) rows.set(rowKey(c), r);
        this.remember(userKey + rowKey(c), r);
      }
    }
    const merges: Merge[] = [];
    for (const channel of unique) {
      const old = rows.get(rowKey(channel)) ?? null;
      const next = merge(channel, old);
      if (next) merges.push({ channel, old, next });
    }
    if (merges.length === 0) return;
    const statements: { query: string; params: unknown[] }[] = [];
    for (const m of merges) {
      const c = m.channel;
      if (!m.old || m.next.activeAt !== m.old.activeAt) statements.push(this.indexStatement("insert", tenant, user, m.next.activeAt, c));
      // the entry a move left behind: older than the row's active time now, never right again
      if (m.old && m.old.activeAt < m.next.activeAt) statements.push(this.indexStatement("delete", tenant, user, m.old.activeAt, c));
      // the cells that change (an unchanged one is stored already, at least as high), those of one
      // value in one statement (one timestamp); a row of the old code keeps its last seq unknown
      // (null) until a sync settles it: no cell then
      const byValue = new Map<number, string[]>();
      const cell = (column: string, value: number | null, was: number | null | undefined) => {
        if (value === null || value === was) return;
        const cols = byValue.get(value);
        if (cols) cols.push(column); else byValue.set(value, [column]);
      };
      cell("read_seq", m.next.readSeq, m.old?.readSeq);
      cell("deleted_to_seq", m.next.deletedToSeq, m.old?.deletedToSeq);
      cell("active_at", m.next.activeAt, m.old?.activeAt);
      cell("updated_at", m.next.updatedAt, m.old?.updatedAt);
      cell("last_msg_seq", m.next.lastMsgSeq, m.old?.lastMsgSeq);
      for (const [value, cols] of byValue) {
        statements.push({
          query: `UPDATE ${this.state} USING TIMESTAMP ? SET ${cols.map((col) => `${col} = ?`).join(", ")} WHERE tenant_id = ? AND user_id = ? AND channel_type = ? AND channel_id = ?`,
          params: [cellTimestamp(value), ...cols.map(() => long(value)), tenant, user, c.channelType, c.channelId],
        });
      }
    }
    await this.inFlight.run(() => this.client.batch(statements, { prepare: true, logged: false }));
    // remembered as written: what is stored is at least that (higher where another writer went further)
    for (const m of merges) this.remember(userKey + rowKey(m.channel), m.next);
  }

  /** The remembered rows of a user's channels (a channel not remembered: absent, i.e. new). */
  private remembered(userKey: string, channels: readonly CommandChannelKey[]): Map<string, StoredRow> {
    const out = new Map<string, StoredRow>();
    for (const c of channels) {
      const r = this.known.get(userKey + rowKey(c));
      if (r) out.set(rowKey(c), r);
    }
    return out;
  }

  private remember(key: string, row: StoredRow | null): void {
    this.known.delete(key);
    if (!row) return;
    this.known.set(key, row);
    if (this.known.size > CMD_CASSANDRA_ROW_CACHE) this.known.delete(this.known.keys().next().value!);
  }
}
