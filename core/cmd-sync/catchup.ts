import { COMMIT_BUCKET_COUNT, hexToUuid, userTag, type KeySpace, type Uuid } from "../base/index.js";
import { SLOT_COUNT, slotOfUser, unitLeaseKey, type Fence } from "../cluster/index.js";
import { RedisStore } from "../store/index.js";
import { cmdRecentKey, type CmdLog, type CmdMessage, type CommandChannelKey } from "../cmd-log/index.js";
import { cmdFlushPointKey } from "./keys.js";
import { cmdMetrics as logMetrics } from "./metrics.js";
import { raiseCmdFlushPointScript, scanCmdRecentScript, scanCmdRecentsScript, type RecentPage } from "./scripts.js";
import type { CmdFlushReport, ConversationIntent } from "./types.js";

/** How often every node reads every bucket's recent-commit index past its cursors. */
export const CMD_CATCHUP_INTERVAL_MS = 1000;
/**
 * How far before a flush point (or a cursor) a scan starts again: covers clock steps between the
 * Redis instances' TIME and commits of one millisecond read on both sides of a cursor. Replays are
 * harmless (pending coalescing and the durable writes are monotonic max merges).
 */
export const CMD_SCAN_OVERLAP_MS = 5000;
/** The most often a slot's flush point is written (a fenced write per owned slot). */
export const CMD_FLUSH_POINT_INTERVAL_MS = 5000;
/**
 * A slot the scan pushed nothing for since its last flush point gets a new one only this often:
 * an older flush point is always safe (a recovery only reads more of the index), and idle slots
 * then cost no writes (256 fenced writes every few seconds for nothing otherwise).
 */
export const CMD_FLUSH_POINT_IDLE_MS = 10 * 60_000;
/** Recent-commit entries read per bucket per call. */
export const CMD_SCAN_PAGE = 500;

/** What the scan needs of the pending buffer (core/cmd-sync/pending.ts). */
export interface CatchUpPending {
  pushIntent(intent: ConversationIntent): boolean;
  flush(): Promise<CmdFlushReport>;
  oldestPendingAt(slot: number): number | null;
}

export interface CatchUpOptions {
  store: RedisStore;
  keys: KeySpace;
  log: CmdLog;
  pending: CatchUpPending;
  buildIntent: (msg: CmdMessage) => ConversationIntent | null;
  /** Local belief that this node owns the slot (no I/O). */
  ownsSlot: (slot: number) => boolean;
  /** The slot's fence for a write, null when not ours. */
  fenceOf: (slot: number) => Fence | null;
  /** Every slot this node owns now. */
  ownedSlots: () => number[];
  intervalMs?: number;
  overlapMs?: number;
  flushPointIntervalMs?: number;
  flushPointIdleMs?: number;
  pageSize?: number;
  say?: (line: string) => void;
}

/**
 * New entries a bucket's first page of a round holds at most (the round reads every bucket's first
 * page in one call per instance): nearly every bucket has nothing new, and a bucket with more reads
 * on in pages of CMD_SCAN_PAGE by itself.
 */
export const CMD_FIRST_PAGE = 32;

/** A bucket's first page of a round and the limit it was read with. */
interface FirstPage {
  page: RecentPage;
  limit: number;
}

interface Cursor {
  /** Every entry with a score below it was processed. */
  at: number;
  /** Members with score === at processed already. */
  seen: Set<string>;
}

interface Parsed {
  tenant: Uuid;
  channel: CommandChannelKey;
  seq: number;
}

function parseMember(member: string): Parsed | null {
  const a = member.indexOf("|");
  const b = member.indexOf("|", a + 1);
  const c = member.lastIndexOf("|");
  if (a !== 32 || b < 0 || c <= b) return null;
  const type = Number(member.slice(a + 1, b));
  const seq = Number(member.slice(c + 1));
  if (!Number.isInteger(type) || !Number.isSafeInteger(seq) || seq < 1) return null;
  return { tenant: hexToUuid(member.slice(0, a)), channel: { channelType: type, channelId: member.slice(b + 1, c) }, seq };
}

/**
 * The owners' catch-up scan and recovery (docs/cmd-sync-log.md): why a SIGKILL of an owner loses
 * no CMD conversation update. Every CMD commit is indexed in its bucket's `cmdrecent` by Redis
 * TIME. Every node reads every bucket's index past its per-bucket cursor each interval and pushes
 * into its own pending buffer the intents of the recipients whose slot it owns, whatever the live
 * path did (replays are harmless). Each owned slot's flush point says up to when all of that is
 * durably flushed; a node that takes a slot over rebuilds the slot's pending view from the log
 * past that point.
 */
export class CmdCatchUp {
  private readonly intervalMs: number;
  private readonly overlapMs: number;
  private readonly flushPointIntervalMs: number;
  private readonly flushPointIdleMs: number;
  private readonly pageSize: number;
  private readonly cursors: Cursor[] = [];
  private readonly written = new Map<number, number>();
  /** Slots the scan pushed intents for since their last flush point. */
  private readonly dirty = new Set<number>();
  /** Slots taken over whose recovery has not completed: their flush point is not written meanwhile. */
  private readonly recovering = new Set<number>();
  private readonly toRecover = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private started = false;
  private lastFlushPointAt = -Infinity;
  /** Rounds completed (tests and the status wait on it). */
  rounds = 0;

  constructor(private readonly o: CatchUpOptions) {
    this.intervalMs = o.intervalMs ?? CMD_CATCHUP_INTERVAL_MS;
    this.overlapMs = o.overlapMs ?? CMD_SCAN_OVERLAP_MS;
    this.flushPointIntervalMs = o.flushPointIntervalMs ?? CMD_FLUSH_POINT_INTERVAL_MS;
    this.flushPointIdleMs = o.flushPointIdleMs ?? CMD_FLUSH_POINT_IDLE_MS;
    this.pageSize = o.pageSize ?? CMD_SCAN_PAGE;
  }

  private say(line: string): void {
    this.o.say?.(`cmd-sync: ${line}`);
  }

  /** Redis time (ms) of the instance serving a tag. */
  private async redisNow(): Promise<number> {
    const [s, us] = await this.o.store.clientFor(userTag(0)).time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  /** The stored flush points of slots (null where none). */
  async flushPoints(slots: readonly number[]): Promise<(number | null)[]> {
    return Promise.all(slots.map(async (s) => {
      const v = await this.o.store.clientFor(userTag(s)).get(cmdFlushPointKey(this.o.keys, s));
      return v === null ? null : Number(v);
    }));
  }

  /** Where a scan for `slots` starts: their oldest flush point (a slot without one: the index's retention) less the overlap. */
  private async startFor(slots: readonly number[]): Promise<number> {
    const now = await this.redisNow();
    if (slots.length === 0) return now - this.overlapMs;
    const fps = await this.flushPoints(slots);
    const oldest = Math.min(...fps.map((f) => f ?? now - this.o.log.retentionMs));
    return oldest - this.overlapMs;
  }

  /**
   * Sets every bucket's cursor from the flush points of the slots owned now, runs the first round
   * (so that a node restarting under load has its owned users' pending view before it serves), then
   * one round every interval. Slots taken later go through recover().
   */
  async start(): Promise<void> {
    if (this.started) return;
    await this.prime();
    await this.round();
    this.started = true;
    this.schedule();
  }

  /** Sets the cursors only (no round, no interval): the caller runs round() itself (tests). */
  async prime(): Promise<void> {
    const from = await this.startFor(this.o.ownedSlots());
    for (let b = 0; b < COMMIT_BUCKET_COUNT; b++) this.cursors[b] = { at: from, seen: new Set() };
  }

  private schedule(): void {
    if (!this.started) return;
    this.timer = setTimeout(() => {
      // after a settle() in progress, never beside it
      this.running = this.running.then(() => this.round())
        .catch((err: unknown) => { logMetrics.scanFailures.inc({ what: "round" }); this.say(`catch-up round failed: ${(err as Error).message}`); })
        .finally(() => this.schedule());
    }, this.intervalMs);
  }

  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /**
   * One round now, then the buffer's flush and the flush points of the slots that changed, after
   * any round in progress (never beside one): afterwards no background write of earlier work is
   * due (tests that check "nothing written", tools). Rejects with the round's or flush's error.
   */
  settle(): Promise<void> {
    const next = this.running.then(async () => {
      await this.round();
      this.lastFlushPointAt = performance.now();
      await this.writeFlushPoints();
    });
    this.running = next.catch(() => {});
    return next;
  }

  /** A slot was taken: its pending view is rebuilt from its flush point on the next round. */
  slotAcquired(slot: number): void {
    this.recovering.add(slot);
    this.toRecover.add(slot);
  }

  slotLost(slot: number): void {
    this.recovering.delete(slot);
    this.toRecover.delete(slot);
    this.written.delete(slot);
    this.dirty.delete(slot);
  }

  /** Slots whose recovery is not complete (status). */
  recoveringSlots(): number[] {
    return [...this.recovering].sort((a, b) => a - b);
  }

  /** One round: recoveries due, the scan of every bucket past its cursor, then the flush points when due. */
  async round(): Promise<void> {
    if (this.toRecover.size > 0) await this.recoverDue();
    // every bucket's first page in one call per instance (per hash tag on a Cluster); only a bucket
    // whose page came back full reads on, on its own
    const first = await this.firstPages();
    // settled, not raced: a failed bucket must not leave the others' scans running into the next round
    const results = await Promise.allSettled(this.cursors.map((c, b) => this.scanBucket(b, c, null, "scan", first[b])));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    this.rounds++;
    const now = await this.redisNow();
    logMetrics.scanLag.set(Math.max(0, now - Math.min(...this.cursors.map((c) => c.at))) / 1000);
    if (performance.now() - this.lastFlushPointAt >= this.flushPointIntervalMs) {
      this.lastFlushPointAt = performance.now();
      await this.writeFlushPoints().catch((err: unknown) => { logMetrics.scanFailures.inc({ what: "flush_point" }); this.say(`flush points failed: ${(err as Error).message}`); });
    }
  }

  private async recoverDue(): Promise<void> {
    const slots = [...this.toRecover].filter((s) => this.o.ownsSlot(s));
    for (const s of this.toRecover) if (!this.o.ownsSlot(s)) this.slotLost(s);
    this.toRecover.clear();
    if (slots.length === 0) return;
    const only = new Set(slots);
    try {
      const from = await this.startFor(slots);
      const ok = (await Promise.all(Array.from({ length: COMMIT_BUCKET_COUNT }, (_, b) => this.scanBucket(b, { at: from, seen: new Set() }, only, "recovery")))).every(Boolean);
      if (!ok) throw new Error("the pending buffer refused intents (full)");
      for (const s of slots) if (this.o.ownsSlot(s)) this.recovering.delete(s);
      logMetrics.recoveredSlots.inc(slots.length);
      this.say(`recovered ${slots.length} slot(s) from the CMD log since ${new Date(from).toISOString()}`);
    } catch (err) {
      for (const s of slots) this.toRecover.add(s);
      logMetrics.scanFailures.inc({ what: "recovery" });
      this.say(`recovery of ${slots.length} slot(s) failed, retried next round: ${(err as Error).message}`);
    }
  }

  /**
   * Reads a bucket's index from the cursor to its end and pushes the intents of the owned
   * recipients (of `only` slots when given). The cursor moves past an entry only once its push was
   * accepted; a refused push (buffer full) stops the bucket there until the next round. Resolves
   * false when it stopped so.
   */
  private async scanBucket(bucket: number, cur: Cursor, only: Set<number> | null, path: "scan" | "recovery", first?: FirstPage): Promise<boolean> {
    const key = cmdRecentKey(this.o.keys, bucket);
    const client = this.o.store.clientForKey(key);
    let given = first;
    for (;;) {
      const limit = given?.limit ?? this.pageSize + cur.seen.size;
      const page = given?.page ?? await scanCmdRecentScript.run(client, { recent: key }, { min: cur.at, limit });
      given = undefined;
      const fresh = page.entries.filter((e) => !(e.score === cur.at && cur.seen.has(e.member)));
      logMetrics.scanEntries.inc(fresh.length);
      const messages = await this.loadAll(fresh.map((e) => e.member));
      for (const e of fresh) {
        const msg = messages.get(e.member);
        if (msg && !this.push(msg, only, path)) return false;
        if (e.score > cur.at) {
          cur.at = e.score;
          cur.seen = new Set();
        }
        cur.seen.add(e.member);
      }
      if (page.entries.length < limit) {
        // the whole index up to the instance's clock is read: nothing below it can still appear
        if (page.nowMs > cur.at) {
          cur.at = page.nowMs;
          cur.seen = new Set();
        }
        return true;
      }
    }
  }

  /**
   * Every bucket's first page of this round from its cursor, one call per instance (per hash tag on
   * a Cluster), pages of CMD_FIRST_PAGE new entries at most so that a backlog does not make one long
   * call: a bucket whose page came back full reads on by itself. A bucket of an instance whose call
   * failed has no first page (it reads by itself, and fails there as before).
   */
  private async firstPages(): Promise<(FirstPage | undefined)[]> {
    const scans = this.cursors.map((c, b) => ({ recent: cmdRecentKey(this.o.keys, b), min: c.at, limit: Math.min(this.pageSize, CMD_FIRST_PAGE) + c.seen.size }));
    const pages = new Array<FirstPage | undefined>(scans.length);
    await Promise.allSettled(this.o.store.byTarget(scans.map((s) => RedisStore.tagOf(s.recent))).map(async ({ client, idx }) => {
      const got = await scanCmdRecentsScript.run(client, idx.map((i) => scans[i]!));
      idx.forEach((i, j) => { pages[i] = { page: got[j]!, limit: scans[i]!.limit }; });
    }));
    return pages;
  }

  /** The history entries of index members, one range read per channel. */
  private async loadAll(members: readonly string[]): Promise<Map<string, CmdMessage>> {
    const byChannel = new Map<string, { p: Parsed; seqs: Map<number, string> }>();
    for (const m of members) {
      const p = parseMember(m);
      if (!p) continue;
      const id = `${p.tenant}|${p.channel.channelType}|${p.channel.channelId}`;
      const g = byChannel.get(id) ?? { p, seqs: new Map<number, string>() };
      g.seqs.set(p.seq, m);
      byChannel.set(id, g);
    }
    const out = new Map<string, CmdMessage>();
    await Promise.all([...byChannel.values()].map(async ({ p, seqs }) => {
      const min = Math.min(...seqs.keys());
      const max = Math.max(...seqs.keys());
      for (const msg of await this.o.log.load(p.tenant, p.channel, min - 1, max - min + 1)) {
        const member = seqs.get(msg.messageSeq);
        if (member !== undefined) out.set(member, msg);
      }
    }));
    return out;
  }

  /** Pushes the message's intent for the recipients whose slot this node owns (and is in `only`). */
  private push(msg: CmdMessage, only: Set<number> | null, path: "scan" | "recovery"): boolean {
    const intent = this.o.buildIntent(msg);
    if (!intent) return true;
    const mine = new Map<Uuid, number>();
    for (const [user, read] of intent.userReadSeqs) {
      const slot = slotOfUser(intent.tenant, user);
      if ((only === null || only.has(slot)) && this.o.ownsSlot(slot)) mine.set(user, read);
    }
    if (mine.size === 0) return true;
    if (!this.o.pending.pushIntent({ ...intent, userReadSeqs: mine })) return false;
    for (const user of mine.keys()) this.dirty.add(slotOfUser(intent.tenant, user));
    logMetrics.scanPushed.inc({ path });
    return true;
  }

  /**
   * Flush points of the owned slots: T = min(the oldest bucket cursor, the slot's oldest unflushed
   * pending entry) − overlap, after a flush. Every commit before the cursor was pushed before the
   * flush began, so after it each one is durable or still pending (and then not before the slot's
   * oldest pending time). Not for slots still recovering. Fenced; never lowered.
   */
  async writeFlushPoints(): Promise<void> {
    if (this.cursors.length === 0) return;
    const scanned = Math.min(...this.cursors.map((c) => c.at));
    await this.o.pending.flush();
    const slots = this.o.ownedSlots().filter((s) => !this.recovering.has(s));
    await Promise.all(slots.map(async (slot) => {
      const oldest = this.o.pending.oldestPendingAt(slot);
      const at = Math.min(scanned, oldest ?? Infinity) - this.overlapMs;
      const last = this.written.get(slot) ?? -Infinity;
      if (at <= last || (!this.dirty.has(slot) && at - last < this.flushPointIdleMs)) return;
      const fence = this.o.fenceOf(slot);
      if (!fence) return;
      const r = await raiseCmdFlushPointScript.run(this.o.store.clientFor(userTag(slot)), {
        flushpt: cmdFlushPointKey(this.o.keys, slot), lease: unitLeaseKey(this.o.keys, "slot", slot),
      }, { owner: fence.owner, token: fence.token, at });
      logMetrics.flushPointWrites.inc({ result: r.status === "OK" ? "ok" : "fenced" });
      if (r.status === "OK") {
        this.written.set(slot, r.stored);
        this.dirty.delete(slot);
      }
    }));
  }
}

export const ALL_SLOTS: readonly number[] = Array.from({ length: SLOT_COUNT }, (_, s) => s);
