import { hexToUuid, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { listRowsPattern } from "./keys.js";
import { metrics } from "./metrics.js";
import { decodeRow, liveRow, prefsOf } from "./row.js";
import { UNREAD_AUDIT_IDLE_MS, UNREAD_AUDIT_SAMPLE_RATE, type ConversationListService } from "./service.js";

/** How often the background unread audit takes a step by default (server setting conversation_list.unread_audit_interval). */
export const UNREAD_AUDIT_INTERVAL_MS = 10_000;
/** Rows examined per step at most (a user's whole row hash is read at once: at most max_conversations_per_user over it). */
export const UNREAD_AUDIT_ROWS_PER_TICK = 5_000;
/** Row-hash keys one SCAN call asks for. */
export const UNREAD_AUDIT_SCAN_COUNT = 100;
/** SCAN calls per step at most. */
export const UNREAD_AUDIT_SCANS_PER_TICK = 10;

export interface UnreadAuditSamplerOptions {
  /** Between two steps; 0: no background audit (the owner may still call tick()). */
  intervalMs?: number;
  sampleRate?: number;
  idleMs?: number;
  rowsPerTick?: number;
  scanCount?: number;
  scansPerTick?: number;
  /** false: drift is measured and reported, not corrected. Default true. */
  correct?: boolean;
  random?: () => number;
  /** The clock rows are idle against (tests: a clock 24 h ahead instead of a wait). */
  now?: () => number;
  log?: (line: string) => void;
  onError?: (err: unknown) => void;
}

/** One finished pass over every row hash of every data node. */
export interface UnreadAuditPass {
  rowsExamined: number;
  candidates: number;
  sampled: number;
  drifted: number;
  driftRatio: number;
  usersReconciled: number;
}

interface PassState extends UnreadAuditPass {
  node: number;
  cursor: string;
  queue: string[];
}

const ROWS_KEY = /:clrows:([0-9a-f]{32}):([0-9a-f]{32})$/;

/**
 * The background unread audit of spec 002 §3.4: "rows with unread and no change for 24 h, sampled
 * at unread_audit_sample_rate, reconciled". Each tick does bounded work — a few SCAN calls over the
 * row hashes, at most UNREAD_AUDIT_ROWS_PER_TICK rows examined — and carries its cursor to the next
 * tick. A sampled row is compared with the definition (a bounded recompute, read only) as the live
 * view shows it (stored row + records held in this process), like reconcile's drift. A user with a
 * drifted row is reconciled (rows and badge recomputed in full, §4) at the end of the tick, unless
 * `correct` is false. When a pass over every data node ends, unread_drift_ratio is set to
 * drifted / sampled of that pass (0 when nothing was sampled) and a line is logged.
 */
export class UnreadAuditSampler {
  readonly intervalMs: number;
  private readonly sampleRate: number;
  private readonly idleMs: number;
  private readonly rowsPerTick: number;
  private readonly scanCount: number;
  private readonly scansPerTick: number;
  private readonly random: () => number;
  private readonly now: () => number;
  private pass: PassState = freshPass();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = true;
  /** The last finished pass (null before the first). */
  lastPass: UnreadAuditPass | null = null;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly list: ConversationListService,
    private readonly opts: UnreadAuditSamplerOptions = {},
  ) {
    this.intervalMs = opts.intervalMs ?? UNREAD_AUDIT_INTERVAL_MS;
    this.sampleRate = opts.sampleRate ?? UNREAD_AUDIT_SAMPLE_RATE;
    this.idleMs = opts.idleMs ?? UNREAD_AUDIT_IDLE_MS;
    this.rowsPerTick = opts.rowsPerTick ?? UNREAD_AUDIT_ROWS_PER_TICK;
    this.scanCount = opts.scanCount ?? UNREAD_AUDIT_SCAN_COUNT;
    this.scansPerTick = opts.scansPerTick ?? UNREAD_AUDIT_SCANS_PER_TICK;
    this.random = opts.random ?? Math.random;
    this.now = opts.now ?? Date.now;
    if (!(this.sampleRate > 0 && this.sampleRate <= 1)) throw new Error(`unread audit: sample rate must be in (0, 1], got ${this.sampleRate}`);
  }

  start(): void {
    if (this.intervalMs <= 0) return;
    this.stopped = false;
    const tick = () => {
      this.timer = undefined;
      this.running = this.tick()
        .catch((err: unknown) => this.opts.onError?.(err))
        .finally(() => { if (!this.stopped) this.timer = setTimeout(tick, this.intervalMs); });
    };
    this.timer = setTimeout(tick, this.intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running.catch(() => {});
  }

  /** One bounded step; returns the pass it finished, or null when the pass goes on. */
  async tick(): Promise<UnreadAuditPass | null> {
    const p = this.pass;
    const nodes = this.store.dataNodes();
    for (let scans = 0; p.queue.length === 0 && p.node < nodes.length && scans < this.scansPerTick; scans++) {
      const [next, found] = await nodes[p.node]!.scan(p.cursor, "MATCH", listRowsPattern(this.keys), "COUNT", this.scanCount);
      p.queue.push(...found);
      p.cursor = next;
      if (next === "0") {
        p.node++;
        p.cursor = "0";
      }
    }
    const now = this.now();
    const before = { sampled: p.sampled, drifted: p.drifted };
    const drifted = new Map<string, { tenant: Uuid; user: Uuid }>();
    let examined = 0;
    while (p.queue.length > 0 && examined < this.rowsPerTick) {
      const key = p.queue.shift()!;
      const m = ROWS_KEY.exec(key);
      if (!m) continue;
      const tenant = hexToUuid(m[1]!);
      const user = hexToUuid(m[2]!);
      const raw = await this.store.clientForKey(key).hgetall(key);
      const held = this.list.heldOf(tenant, user);
      for (const [hex, v] of Object.entries(raw)) {
        examined++;
        const r = decodeRow(v);
        if (r.unread === 0 || now - r.lastActivityAt < this.idleMs) continue;
        p.candidates++;
        if (this.random() >= this.sampleRate) continue;
        p.sampled++;
        const seen = liveRow({ ...r }, held.get(hex) ?? [], uuidToHex(user)) ?? r;
        const def = await this.list.recompute(tenant, user, hex, prefsOf(r), r, "audit");
        if ((def?.unread ?? 0) !== seen.unread || (def?.mentions ?? 0) !== seen.mentions) {
          p.drifted++;
          drifted.set(tenant + user, { tenant, user });
        }
      }
    }
    p.rowsExamined += examined;
    metrics.auditRows.inc({ outcome: "examined" }, examined);
    metrics.auditRows.inc({ outcome: "sampled" }, p.sampled - before.sampled);
    metrics.auditRows.inc({ outcome: "drifted" }, p.drifted - before.drifted);
    if (this.opts.correct !== false) {
      for (const { tenant, user } of drifted.values()) {
        await this.list.reconcileFor(tenant, user, "audit");
        p.usersReconciled++;
      }
    }
    if (p.node < nodes.length || p.queue.length > 0) return null;
    const done: UnreadAuditPass = {
      rowsExamined: p.rowsExamined, candidates: p.candidates, sampled: p.sampled, drifted: p.drifted,
      driftRatio: p.sampled === 0 ? 0 : p.drifted / p.sampled, usersReconciled: p.usersReconciled,
    };
    metrics.driftRatio.set(done.driftRatio);
    this.lastPass = done;
    this.pass = freshPass();
    if (done.drifted > 0 || done.sampled > 0) {
      this.opts.log?.(`conversation list: unread audit pass: ${done.sampled} of ${done.candidates} idle rows with unread sampled, ${done.drifted} drifted (unread_drift_ratio ${done.driftRatio}), ${done.usersReconciled} users reconciled`);
    }
    return done;
  }
}

function freshPass(): PassState {
  return { node: 0, cursor: "0", queue: [], rowsExamined: 0, candidates: 0, sampled: 0, drifted: 0, driftRatio: 0, usersReconciled: 0 };
}
