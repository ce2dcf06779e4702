import { hexToUuid, type KeySpace } from "../base/index.js";
import type { DispatchLog } from "../dispatch/index.js";
import type { RedisStore } from "../store/index.js";
import { listRowsPattern } from "./keys.js";
import { metrics } from "./metrics.js";
import type { ConversationListService } from "./service.js";

/** Row-hash keys one SCAN call asks for (a hint to Redis: each call stays short). */
export const ROLLBACK_RECONCILE_SCAN_COUNT = 200;
/** SCAN calls per chunk at most (a keyspace with few list keys does not turn one chunk into a full scan). */
export const ROLLBACK_RECONCILE_SCANS_PER_CHUNK = 20;
/** Users reconciled per chunk at most (each a full reconcile of up to max_conversations_per_user rows). */
export const ROLLBACK_RECONCILE_USERS_PER_CHUNK = 50;
/** The pause between two chunks of the background sweep: serving traffic goes first. */
export const ROLLBACK_RECONCILE_PAUSE_MS = 100;

export interface RollbackReconcileOptions {
  /** false: nothing runs in the background; the owner calls step()/drain(). */
  background?: boolean;
  scanCount?: number;
  scansPerChunk?: number;
  usersPerChunk?: number;
  pauseMs?: number;
  log?: (line: string) => void;
  onError?: (err: unknown) => void;
}

export interface RollbackSweepReport {
  partitions: number[];
  usersScanned: number;
  usersReconciled: number;
}

interface Sweep extends RollbackSweepReport {
  lost: Set<number>;
  node: number;
  cursor: string;
  queue: string[];
  startedAt: number;
}

const ROWS_KEY = /:clrows:([0-9a-f]{32}):([0-9a-f]{32})$/;

/**
 * The §3.4 trigger "checkpoint rollback replay" (docs/conversation-list.md, "Checkpoint rollback").
 * The list consumer found records of a partition gone before it read them (retention dropped them:
 * its checkpoint was behind the log's low watermark, or missing while the low watermark is above
 * 0). Which users they went to is lost with them, so "affected" is every user who has a row of a
 * conversation on that partition: a record of the gap went to a row whose head it would have
 * moved. Those users are reconciled in full (rows and badge, §4) in bounded chunks in the
 * background: SCAN over the row hashes, ROLLBACK_RECONCILE_USERS_PER_CHUNK users per chunk, a
 * pause between chunks. Partitions lost while a sweep runs make the next sweep.
 */
export class RollbackReconciler {
  private readonly scanCount: number;
  private readonly scansPerChunk: number;
  private readonly usersPerChunk: number;
  private readonly pauseMs: number;
  private readonly waiting = new Set<number>();
  private sweep: Sweep | null = null;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = true;
  /** Sweeps finished so far (tests, status). */
  readonly done: RollbackSweepReport[] = [];

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly log: DispatchLog,
    private readonly list: ConversationListService,
    private readonly opts: RollbackReconcileOptions = {},
  ) {
    this.scanCount = opts.scanCount ?? ROLLBACK_RECONCILE_SCAN_COUNT;
    this.scansPerChunk = opts.scansPerChunk ?? ROLLBACK_RECONCILE_SCANS_PER_CHUNK;
    this.usersPerChunk = opts.usersPerChunk ?? ROLLBACK_RECONCILE_USERS_PER_CHUNK;
    this.pauseMs = opts.pauseMs ?? ROLLBACK_RECONCILE_PAUSE_MS;
  }

  /** The consumer lost offsets [from, to) of `partition`: its users' rows are reconciled in the background. */
  lost(partition: number, from: number, to: number): void {
    this.waiting.add(partition);
    this.updateGauge();
    this.opts.log?.(`conversation list: partition ${partition} lost offsets [${from}, ${to}) to retention; reconciling every user with a row on it in the background (chunks of ${this.usersPerChunk} users)`);
    this.schedule(0);
  }

  /** Partitions waiting for or in a sweep. */
  pending(): number[] {
    return [...new Set([...(this.sweep?.lost ?? []), ...this.waiting])].sort((a, b) => a - b);
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops after the chunk in flight; what is left is not resumed (docs: login and the audit cover it). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running.catch(() => {});
    const left = this.pending();
    if (left.length > 0) this.opts.log?.(`conversation list: stopped with the rollback reconcile of partition(s) ${left.join(", ")} unfinished`);
  }

  private schedule(delay: number): void {
    if (this.stopped || this.opts.background === false || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.step()
        .then((more) => { if (more) this.schedule(this.pauseMs); })
        .catch((err: unknown) => {
          this.opts.onError?.(err);
          this.schedule(this.pauseMs * 10);
        });
    }, delay);
  }

  /** Runs every sweep to its end (tests; a background sweep does the same in chunks). */
  async drain(): Promise<void> {
    while (await this.step());
  }

  /** One chunk; true while work is left. */
  async step(): Promise<boolean> {
    if (!this.sweep) {
      if (this.waiting.size === 0) return false;
      this.sweep = { lost: new Set(this.waiting), partitions: [...this.waiting].sort((a, b) => a - b), node: 0, cursor: "0", queue: [], usersScanned: 0, usersReconciled: 0, startedAt: Date.now() };
      this.waiting.clear();
    }
    const s = this.sweep;
    const nodes = this.store.dataNodes();
    for (let scans = 0; s.queue.length < this.usersPerChunk && s.node < nodes.length && scans < this.scansPerChunk; scans++) {
      const [next, found] = await nodes[s.node]!.scan(s.cursor, "MATCH", listRowsPattern(this.keys), "COUNT", this.scanCount);
      s.queue.push(...found);
      s.cursor = next;
      if (next === "0") s.node++;
    }
    for (const key of s.queue.splice(0, this.usersPerChunk)) {
      const m = ROWS_KEY.exec(key);
      if (!m) continue;
      s.usersScanned++;
      const tenant = hexToUuid(m[1]!);
      const user = hexToUuid(m[2]!);
      const conversations = await this.store.clientForKey(key).hkeys(key);
      if (!conversations.some((c) => s.lost.has(this.log.partitionOf(tenant, hexToUuid(c))))) continue;
      await this.list.reconcileFor(tenant, user, "rollback");
      s.usersReconciled++;
    }
    if (s.node < nodes.length || s.queue.length > 0) return true;
    this.sweep = null;
    this.done.push({ partitions: s.partitions, usersScanned: s.usersScanned, usersReconciled: s.usersReconciled });
    this.updateGauge();
    this.opts.log?.(`conversation list: rollback reconcile of partition(s) ${s.partitions.join(", ")} done: ${s.usersReconciled} of ${s.usersScanned} users reconciled in ${Date.now() - s.startedAt} ms`);
    return this.waiting.size > 0;
  }

  private updateGauge(): void {
    metrics.rollbackPending.set(this.pending().length);
  }
}
