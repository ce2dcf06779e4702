/**
 * The durable CMD conversation state on Cassandra (spec 001 StateStore), chosen when Cassandra is
 * configured (the authority's settings; docs/cmd-sync-core.md, "The durable state on Cassandra").
 *
 *   cmd_conversation_state  PRIMARY KEY ((tenant_id, user_id), channel_type, channel_id):
 *                           read_seq, deleted_to_seq, active_at, updated_at, last_msg_seq, fence_token (bigint)
 *   cmd_conversation_active PRIMARY KEY ((tenant_id, user_id), active_at, channel_type, channel_id)
 *                           CLUSTERING ORDER BY (active_at DESC, channel_type ASC, channel_id ASC):
 *                           spec 001's sync order, so listActive is one ordered read
 *
 * Cassandra has no max merge, so a write reads the user's rows (SERIAL), merges as the Lua does,
 * and writes with lightweight transactions conditioned on the values it read and on the row's
 * fence token: one conditional BATCH per user (one partition: atomic per user, not across users).
 * A lost race re-reads and retries (CMD_CASSANDRA_LWT_RETRIES). Fencing has two layers: the slot's
 * lease in Redis is checked before writing (as includes/fenceHolds), and a row written with a newer
 * token refuses an older one (`fence_token <= ours`).
 */
import cassandra from "cassandra-driver";
import { UnavailableError, type KeySpace, type Uuid } from "../base/index.js";
import { leaseHolds, type Fence } from "../cluster/index.js";
import { CassandraConnection, type CassandraOptions } from "../cassandra/index.js";
import type { RedisStore } from "../store/index.js";
import { CmdFencedError } from "./errors.js";
import { cmdMetrics } from "./metrics.js";
import { checkRead, checkState, CMD_STATE_READ_CHUNK, isUnreadState, oneSlot } from "./state.js";
import type { CommandChannelKey } from "../cmd-log/index.js";
import type { CmdConversationState, CmdReadPatch, CmdStateStore } from "./types.js";

/** Rounds of read–merge–conditional write per user before a write gives up (UNAVAILABLE, retryable: the pending batch stays). */
export const CMD_CASSANDRA_LWT_RETRIES = 8;
/** Users of one batch written at once (each its own partition and conditional batch). */
export const CMD_CASSANDRA_USER_CONCURRENCY = 16;
/**
 * Slot batches a flush writes at once (CmdStateStore.flushConcurrency). One after another, a
 * flush waited out every slot's Paxos rounds in turn (553 rows/s, issue 26); 8 slots of at most
 * CMD_CASSANDRA_USER_CONCURRENCY users each keep at most 128 conditional batches in flight.
 */
export const CMD_CASSANDRA_FLUSH_CONCURRENCY = 8;
/**
 * Rows this store remembers as last written or read (per tenant, user, channel), at most: a write
 * whose rows are all remembered — or not remembered, taken as new — skips the SERIAL read and goes
 * straight to its conditional batch, whose conditions check exactly what it assumed; a batch not
 * applied is retried the old way, from a SERIAL read (and forgets the user's rows). About 150 B
 * each: ~15 MB at the bound.
 */
export const CMD_CASSANDRA_ROW_CACHE = 100_000;
/** Index rows read per page by listActive. */
export const CMD_CASSANDRA_ACTIVE_PAGE = 500;
export const CMD_CASSANDRA_STATE_TABLE = "cmd_conversation_state";
export const CMD_CASSANDRA_ACTIVE_TABLE = "cmd_conversation_active";

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
  /** null: a row written before the column existed (last seq unknown; the write's condition names null then). */
  lastMsgSeq: number | null;
  fenceToken: number;
}

type Merge = { channel: CommandChannelKey; next: StoredRow; old: StoredRow | null };

const Long = cassandra.types.Long;
const long = (n: number) => Long.fromNumber(n);
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
    lastMsgSeq: r.last_msg_seq == null ? null : num(r.last_msg_seq), fenceToken: num(r.fence_token),
  };
}

/** Runs `work` over `items`, at most `limit` at once; rejects with the first failure once all settled. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | null = null;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw (failure as { err: unknown }).err;
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
  private readonly serial: number;
  /** `tenant|user|type|id` → the row as this store last wrote or read it (CMD_CASSANDRA_ROW_CACHE, oldest dropped first). */
  private readonly known = new Map<string, StoredRow>();

  constructor(private readonly deps: CassandraCmdStateStoreDeps) {
    this.conn = new CassandraConnection(deps.cassandra);
    this.keyspace = this.conn.keyspace;
    // the Paxos round of a lightweight transaction (and the reads before one) in the local DC when the writes are
    const c = cassandra.types.consistencies;
    this.serial = [c.localQuorum, c.localOne, c.localSerial].includes(this.conn.consistency) ? c.localSerial : c.serial;
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

  /**
   * Connects and creates the keyspace and both tables if missing. A failure is one UNAVAILABLE
   * line (CassandraConnection.open, as the authority's) and leaves a fresh client for a later init().
   */
  async init(): Promise<void> {
    await this.conn.open(async (client) => {
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
      const rows = await this.readRows(tenant, user, chunk, false);
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
      const rows = await this.readRows(tenant, user, entries.map((e) => e.channel), false);
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
    });
  }

  async upsertStates(states: readonly CmdConversationState[], fence: Fence): Promise<void> {
    if (states.length === 0) return;
    for (const s of states) checkState(s);
    await this.writeBatch(states, fence, (mine, old) => {
      // the channel's rows of the batch, merged in order as the Lua merges them one by one
      let acc: StoredRow | null = old;
      let changed = false;
      for (const s of mine) {
        if (!acc) { acc = { readSeq: s.readSeq, deletedToSeq: s.deletedToSeq, activeAt: s.activeAt, updatedAt: s.updatedAt, lastMsgSeq: s.lastMsgSeq, fenceToken: 0 }; changed = true; continue; }
        const next = {
          readSeq: Math.max(acc.readSeq, s.readSeq), deletedToSeq: Math.max(acc.deletedToSeq, s.deletedToSeq),
          activeAt: Math.max(acc.activeAt, s.activeAt), updatedAt: Math.max(acc.updatedAt, s.updatedAt),
          // a row of the old code keeps its last seq unknown until a sync settles it (upsertCmdStates-4)
          lastMsgSeq: acc.lastMsgSeq === null ? null : Math.max(acc.lastMsgSeq, s.lastMsgSeq!),
          fenceToken: acc.fenceToken,
        };
        // nothing of read, deleted-to, active at, last seq grows: the row stays as it is, its updated at included (a replay is a no-op)
        if (next.readSeq === acc.readSeq && next.deletedToSeq === acc.deletedToSeq && next.activeAt === acc.activeAt && next.lastMsgSeq === acc.lastMsgSeq) continue;
        acc = next;
        changed = true;
      }
      return changed ? acc : null;
    });
  }

  /**
   * A batch of one slot: fence check 1 once, then each user's rows (at most
   * CMD_CASSANDRA_USER_CONCURRENCY users at once), `merge` given one channel's rows of the batch in
   * order and the stored row (null: none), answering the row to write or null for nothing.
   */
  private async writeBatch<T extends { tenant: Uuid; user: Uuid; channel: CommandChannelKey }>(
    rows: readonly T[], fence: Fence, merge: (mine: T[], old: StoredRow | null) => StoredRow | null,
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
      return this.writeUser(slot, list[0]!.tenant, list[0]!.user, list.map((r) => r.channel), fence, (channel, old) => merge(byChannel.get(rowKey(channel)) ?? [], old));
    });
  }

  /** Fence check 1: the slot's lease in Redis names exactly (owner, token), as includes/fenceHolds. */
  private async checkLease(slot: number, fence: Fence): Promise<void> {
    if (await leaseHolds(this.deps.store, this.deps.keys, "slot", slot, fence)) return;
    cmdMetrics.cassandraFenced.inc({ layer: "lease" });
    throw new CmdFencedError(slot);
  }

  private async readRows(tenant: Uuid, user: Uuid, channels: readonly CommandChannelKey[], serial: boolean): Promise<Map<string, StoredRow>> {
    const types = [...new Set(channels.map((c) => c.channelType))];
    const ids = [...new Set(channels.map((c) => c.channelId))];
    // IN on both clustering columns reads their cross product: filtered to the channels asked for
    const res = await this.client.execute(
      `SELECT channel_type, channel_id, read_seq, deleted_to_seq, active_at, updated_at, last_msg_seq, fence_token FROM ${this.state}
       WHERE tenant_id = ? AND user_id = ? AND channel_type IN ? AND channel_id IN ?`,
      [tenant, user, types, ids], serial ? { consistency: this.serial } : {});
    const out = new Map<string, StoredRow>();
    for (const r of res.rows) out.set(`${r.channel_type}|${r.channel_id}`, storedOf(r));
    return out;
  }

  private async deleteIndex(tenant: Uuid, user: Uuid, entries: readonly { activeAt: number; channel: CommandChannelKey }[]): Promise<void> {
    if (entries.length === 0) return;
    await this.client.batch(entries.map((e) => ({
      query: `DELETE FROM ${this.active} WHERE tenant_id = ? AND user_id = ? AND active_at = ? AND channel_type = ? AND channel_id = ?`,
      params: [tenant, user, long(e.activeAt), e.channel.channelType, e.channel.channelId],
    })), { prepare: true, logged: false });
  }

  /**
   * One user's rows: read (SERIAL), merge, write the new index entries, then one conditional batch
   * on the state rows (INSERT … IF NOT EXISTS for new rows; UPDATE … IF the values read AND
   * fence_token <= ours for existing ones), then delete the index entries the move left behind.
   * The index entries come first so that a row is never without its entry: a crash between the
   * steps leaves at most an entry listActive skips (newer than its row) or deletes (older).
   * Not applied: a row carries a newer token → CmdFencedError; otherwise a lost race → again. At
   * the end, the entries this call inserted that are older than their row's active_at now (a race
   * it lost to a newer time) are deleted; entries newer than their row (a refused or abandoned
   * write) stay for listActive to skip: another writer's entry of the same time may be in flight.
   */
  private async writeUser(
    slot: number, tenant: Uuid, user: Uuid, channels: readonly CommandChannelKey[], fence: Fence,
    merge: (channel: CommandChannelKey, old: StoredRow | null) => StoredRow | null,
  ): Promise<void> {
    const unique = [...new Map(channels.map((c) => [rowKey(c), c])).values()];
    // index entries this call inserted, per channel: those a lost race made wrong are deleted at the end
    const inserted = new Map<string, { channel: CommandChannelKey; activeAt: Set<number> }>();
    const done = async (finalActive: Map<string, number>) => {
      const stale: { activeAt: number; channel: CommandChannelKey }[] = [];
      for (const [k, e] of inserted) for (const a of e.activeAt) if (a < (finalActive.get(k) ?? -1)) stale.push({ activeAt: a, channel: e.channel });
      await this.deleteIndex(tenant, user, stale).catch(() => {});
    };
    const userKey = `${tenant}|${user}|`;
    for (let attempt = 0; ; attempt++) {
      // the first attempt assumes what this store last saw (a row it never saw: none) and lets the
      // batch's conditions check it; a retry reads (SERIAL)
      const rows = attempt === 0 ? this.remembered(userKey, unique) : await this.readRows(tenant, user, unique, true);
      if (attempt > 0) for (const c of unique) this.remember(userKey + rowKey(c), rows.get(rowKey(c)) ?? null);
      const merges: Merge[] = [];
      for (const channel of unique) {
        const old = rows.get(rowKey(channel)) ?? null;
        const next = merge(channel, old);
        if (next) merges.push({ channel, old, next: { ...next, fenceToken: Math.max(old?.fenceToken ?? 0, fence.token) } });
      }
      // an assumption no condition would check: a row taken as absent that the merge leaves alone
      // (a read advance of a row this store never saw) — only a read says whether it exists
      if (attempt === 0 && unique.some((c) => !rows.has(rowKey(c)) && !merges.some((m) => m.channel === c))) continue;
      const finalActive = new Map([...rows].map(([k, r]) => [k, r.activeAt]));
      // nothing to write by what is remembered proves nothing (the row may have been written
      // elsewhere, or by the code before an upgrade): only a read says so
      if (merges.length === 0 && attempt > 0) return done(finalActive);
      if (merges.length === 0) continue;
      if (merges.some((m) => m.old && m.old.fenceToken > fence.token)) {
        if (attempt === 0) continue;
        cmdMetrics.cassandraFenced.inc({ layer: "row" });
        throw new CmdFencedError(slot);
      }
      const moved = merges.filter((m) => !m.old || m.next.activeAt !== m.old.activeAt);
      for (const m of moved) {
        const k = rowKey(m.channel);
        const e = inserted.get(k) ?? { channel: m.channel, activeAt: new Set<number>() };
        e.activeAt.add(m.next.activeAt);
        inserted.set(k, e);
      }
      if (moved.length > 0) {
        await this.client.batch(moved.map((m) => ({
          query: `INSERT INTO ${this.active} (tenant_id, user_id, active_at, channel_type, channel_id) VALUES (?, ?, ?, ?, ?)`,
          params: [tenant, user, long(m.next.activeAt), m.channel.channelType, m.channel.channelId],
        })), { prepare: true, logged: false });
      }
      const res = await this.client.batch(merges.map((m) => (m.old
        ? {
          // a row of a table that predates last_msg_seq reads null there (0 here): the condition names null then
          query: `UPDATE ${this.state} SET read_seq = ?, deleted_to_seq = ?, active_at = ?, updated_at = ?, last_msg_seq = ?, fence_token = ?
                  WHERE tenant_id = ? AND user_id = ? AND channel_type = ? AND channel_id = ?
                  IF read_seq = ? AND deleted_to_seq = ? AND active_at = ? AND last_msg_seq = ? AND fence_token <= ?`,
          params: [
            long(m.next.readSeq), long(m.next.deletedToSeq), long(m.next.activeAt), long(m.next.updatedAt), m.next.lastMsgSeq === null ? null : long(m.next.lastMsgSeq), long(m.next.fenceToken),
            tenant, user, m.channel.channelType, m.channel.channelId,
            long(m.old.readSeq), long(m.old.deletedToSeq), long(m.old.activeAt), m.old.lastMsgSeq === null ? null : long(m.old.lastMsgSeq), long(fence.token),
          ],
        }
        : {
          query: `INSERT INTO ${this.state} (tenant_id, user_id, channel_type, channel_id, read_seq, deleted_to_seq, active_at, updated_at, last_msg_seq, fence_token)
                  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
          params: [
            tenant, user, m.channel.channelType, m.channel.channelId, long(m.next.readSeq), long(m.next.deletedToSeq), long(m.next.activeAt), long(m.next.updatedAt),
            long(m.next.lastMsgSeq!), long(m.next.fenceToken),
          ],
        })), { prepare: true, serialConsistency: this.serial });
      if (res.wasApplied()) {
        // entries left behind by the moves: older than the row's active_at now, never right again
        const leftOver = merges.filter((m) => m.old && m.old.activeAt < m.next.activeAt).map((m) => ({ activeAt: m.old!.activeAt, channel: m.channel }));
        await this.deleteIndex(tenant, user, leftOver).catch(() => {});
        for (const m of merges) {
          finalActive.set(rowKey(m.channel), m.next.activeAt);
          this.remember(userKey + rowKey(m.channel), m.next);
        }
        return done(finalActive);
      }
      for (const c of unique) this.known.delete(userKey + rowKey(c));
      // a first attempt on remembered rows that was not applied is not a lost race: read and go again
      if (attempt === 0) continue;
      if (attempt + 1 >= CMD_CASSANDRA_LWT_RETRIES) {
        throw new UnavailableError(`the CMD state write of slot ${slot} lost ${CMD_CASSANDRA_LWT_RETRIES} races on Cassandra in a row; retry`);
      }
      cmdMetrics.cassandraLwtRetries.inc();
    }
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
