/**
 * The dashboard's data, without React or grpc-js: the snapshot as the CLI prints it (JSON lines,
 * the TUI's props), per-second rates from two consecutive snapshots (the server sends raw
 * counters), the plain line printed when stdout is not a terminal, and the connection state.
 */
import type { Snapshot } from "../../admin-api/client.js";
import type { Devices } from "../../admin-api/gen/qim/admin/v1/observe.js";
import { nodeResult } from "../cluster/results.js";
import { cmdBadFileResult } from "../cmd/results.js";
import { UsageError } from "../exit-codes.js";
import { projectionStatusResult, type ProjectionStatusResult } from "../projection/results.js";
import { resultFrom } from "../result.js";

/** The server's bounds of WatchRequest.interval_ms (server/observe.ts). */
export const INTERVAL_BOUNDS_MS = { min: 200, max: 60_000 } as const;

/** The raw counters of the server process (totals since it started); cli/result.ts says how the snapshot's parts are declared. */
const countersResult = resultFrom<NonNullable<Snapshot["counters"]>>()({
  /** By op: join, leave, remove. */
  membershipEvents: (c): Record<string, number> => ({ ...c.membershipEvents }),
  /** By path: send, membership. */
  membershipRetries: (c): Record<string, number> => ({ ...c.membershipRetries }),
  /**
   * Conversations queued for the conversation-set authority since the server process started
   * (qim_session_conversation_state_pending_total): a total, not the backlog, which is
   * projection.pending[].depth ("queue_backlog" in the plain line).
   */
  conversationStateQueuedTotal: (c) => c.conversationStatePending,
  conversationStateWritten: "wire",
  conversationStateFailures: "wire",
  usersRebuilt: "wire",
  messagesCommitted: "wire",
  relayDispatched: "wire",
});
export type CountersResult = ReturnType<typeof countersResult>;

/** The devices of the server process (issue 27): connections now, totals since it started; all zero without a gateway. */
const devicesResult = resultFrom<Devices>()({
  connections: "wire",
  onlineUsers: "wire",
  framesIn: "wire",
  framesOut: "wire",
  pushes: "wire",
  backPressureSoft: "wire",
  backPressureHard: "wire",
  upgradesRefused: "wire",
  deliveryLag: "wire",
  /** Cumulative commit-to-push buckets: upper bound in ms (null: +Inf) and count. */
  commitToPush: (d) => d.commitToPush.map((b) => ({ leMs: Number.isFinite(b.leMs) ? b.leMs : null, count: b.count })),
});
export type DevicesResult = ReturnType<typeof devicesResult>;
const NO_DEVICES: Devices = { connections: 0, onlineUsers: 0, framesIn: 0, framesOut: 0, pushes: 0, backPressureSoft: 0, backPressureHard: 0, upgradesRefused: 0, commitToPush: [], deliveryLag: 0 };

const auditLineResult = resultFrom<Snapshot["audit"][number]>()({ time: "wire", principal: "wire", rpc: "wire", result: "wire" });
export type AuditLineResult = ReturnType<typeof auditLineResult>;

const dashboardSnapshot = resultFrom<Snapshot>()({
  /** Server time of the counters, RFC 3339 (milliseconds since 1970 fit a double exactly). */
  time: (s) => new Date(Number(s.timeMs)).toISOString(),
  timeMs: (s) => Number(s.timeMs),
  /** When the server process started (ms): rates compare only snapshots with the same value. */
  startedAtMs: (s) => Number(s.startedAtMs),
  counters: (s) => countersResult(s.counters!),
  /** As `qimctl projection status --json`. */
  projection: (s) => projectionStatusResult(s.projection!),
  /** The newest audit-log entries, oldest first. */
  audit: (s) => s.audit.map(auditLineResult),
  /** The engine cluster's nodes, as `qimctl cluster nodes --json` (empty from a server that is no node). */
  nodes: (s) => s.nodes.map(nodeResult),
  /** CMD pending files set aside as .bad, as `qimctl cmd status --json` names them (badFiles): each is a warning. */
  cmdBadFiles: (s) => s.cmdBadFiles.map(cmdBadFileResult),
  /** Device connections and delivery of this server process (a server of an older version sends none: zeros). */
  devices: (s) => devicesResult(s.devices ?? NO_DEVICES),
});
export type DashboardSnapshot = ReturnType<typeof dashboardSnapshot>;

/** Per second, between two snapshots of one server process. */
export interface Rates {
  /** Milliseconds between the two snapshots (server time). */
  overMs: number;
  membershipEventsPerSec: number;
  membershipRetriesPerSec: number;
  messagesCommittedPerSec: number;
  relayDispatchedPerSec: number;
  conversationStateQueuedPerSec: number;
  conversationStateWrittenPerSec: number;
  conversationStateFailuresPerSec: number;
  usersRebuiltPerSec: number;
  /** Frames from and to devices, and committed messages pushed onto connections, per second. */
  framesInPerSec: number;
  framesOutPerSec: number;
  pushesPerSec: number;
  /** The 99th percentile of commit-to-push between the two snapshots, as the bucket bound it falls in (ms); null without pushes or past the last finite bucket. */
  commitToPushP99Ms: number | null;
}

/** One JSON line of `qimctl dashboard --output json`. */
export type DashboardLine = DashboardSnapshot & { rates: Rates | null };

export type ConnectionState =
  | { kind: "connecting" }
  | { kind: "connected" }
  /** `attempt` counts the failures in a row; the next attempt is `retryInMs` after this one failed. */
  | { kind: "disconnected"; error: string; attempt: number; retryInMs: number };

/** Throws on a snapshot without counters or projection (not the server this CLI was built for). */
export function snapshotResult(s: Snapshot): DashboardSnapshot {
  if (!s.counters || !s.projection) throw new Error("the server sent a snapshot without counters or projection status");
  return dashboardSnapshot(s);
}

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

/**
 * Rates between two consecutive snapshots: null for the first one, when the server process
 * changed (its counters restarted from 0), or when server time did not move forward.
 */
export function rates(prev: DashboardSnapshot | null, cur: DashboardSnapshot): Rates | null {
  if (!prev || prev.startedAtMs !== cur.startedAtMs) return null;
  const overMs = cur.timeMs - prev.timeMs;
  if (overMs <= 0) return null;
  const per = (a: number, b: number) => Math.max(0, b - a) * 1000 / overMs;
  const p = prev.counters;
  const c = cur.counters;
  return {
    overMs,
    membershipEventsPerSec: per(sum(p.membershipEvents), sum(c.membershipEvents)),
    membershipRetriesPerSec: per(sum(p.membershipRetries), sum(c.membershipRetries)),
    messagesCommittedPerSec: per(p.messagesCommitted, c.messagesCommitted),
    relayDispatchedPerSec: per(p.relayDispatched, c.relayDispatched),
    conversationStateQueuedPerSec: per(p.conversationStateQueuedTotal, c.conversationStateQueuedTotal),
    conversationStateWrittenPerSec: per(p.conversationStateWritten, c.conversationStateWritten),
    conversationStateFailuresPerSec: per(p.conversationStateFailures, c.conversationStateFailures),
    usersRebuiltPerSec: per(p.usersRebuilt, c.usersRebuilt),
    framesInPerSec: per(prev.devices.framesIn, cur.devices.framesIn),
    framesOutPerSec: per(prev.devices.framesOut, cur.devices.framesOut),
    pushesPerSec: per(prev.devices.pushes, cur.devices.pushes),
    commitToPushP99Ms: intervalQuantile(prev.devices.commitToPush, cur.devices.commitToPush, 0.99),
  };
}

/**
 * A quantile of a histogram between two reads of its cumulative buckets: the bound of the first
 * bucket whose count grew by at least q of the total growth; null when nothing was observed or it
 * falls in +Inf.
 */
export function intervalQuantile(prev: DevicesResult["commitToPush"], cur: DevicesResult["commitToPush"], q: number): number | null {
  const before = new Map(prev.map((b) => [b.leMs, b.count]));
  const grown = cur.map((b) => ({ leMs: b.leMs, n: b.count - (before.get(b.leMs) ?? 0) }));
  const total = grown.at(-1)?.n ?? 0;
  if (total <= 0) return null;
  return grown.find((b) => b.n >= q * total)?.leMs ?? null;
}

/** The JSON line of a snapshot: the snapshot's fields, the rates after the time fields. */
export function dashboardLine(s: DashboardSnapshot, r: Rates | null): DashboardLine {
  return { time: s.time, timeMs: s.timeMs, startedAtMs: s.startedAtMs, rates: r, counters: s.counters, projection: s.projection, audit: s.audit, nodes: s.nodes, cmdBadFiles: s.cmdBadFiles, devices: s.devices };
}

/** Total lag over the partitions that have a checkpoint, and the number of partitions not OK. */
export function projectionTotals(p: ProjectionStatusResult): { lag: number; queueBacklog: number; deadLetters: number; notOk: number } {
  return {
    lag: p.partitions.reduce((a, x) => a + (x.lag ?? 0), 0),
    queueBacklog: p.pending.reduce((a, x) => a + x.depth, 0),
    deadLetters: p.pending.reduce((a, x) => a + x.deadLetters, 0),
    notOk: p.partitions.filter((x) => x.verdict !== "OK").length,
  };
}

export const formatRate = (r: number | undefined): string => (r === undefined ? "-" : r.toFixed(1));

/** The line printed per snapshot when stdout is not a terminal (table mode). */
export function plainLine(s: DashboardSnapshot, r: Rates | null): string {
  const t = projectionTotals(s.projection);
  const fields = [
    s.time.replace(/\.\d{3}Z$/, "Z"),
    `epoch=${s.projection.epoch}`,
    `events/s=${formatRate(r?.membershipEventsPerSec)}`,
    `retries/s=${formatRate(r?.membershipRetriesPerSec)}`,
    `lag=${t.lag}`,
    `queue_backlog=${t.queueBacklog}`,
    `queued_total=${s.counters.conversationStateQueuedTotal}`,
    `rebuilt=${s.counters.usersRebuilt}`,
    `authority_written=${s.counters.conversationStateWritten}`,
    `failures=${s.counters.conversationStateFailures}`,
  ];
  if (t.notOk > 0) fields.push(`partitions_not_ok=${t.notOk}`);
  if (t.deadLetters > 0) fields.push(`dead_letters=${t.deadLetters}`);
  if (s.projection.failure) fields.push(`projection_failure=${JSON.stringify(s.projection.failure)}`);
  for (const b of s.cmdBadFiles) fields.push(`cmd_bad_file=${JSON.stringify(b.nodeId ? `${b.nodeId}:${b.path}` : b.path)}`);
  return fields.join(" ");
}

/** `--interval`: seconds, or a number with ms, s or m ("500ms", "1s", "2.5s", "1m"); within the server's bounds. */
export function intervalMs(flag: string, value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  const ms = m ? Math.round(Number(m[1]) * (m[2] === "ms" ? 1 : m[2] === "m" ? 60_000 : 1000)) : NaN;
  if (!(ms >= INTERVAL_BOUNDS_MS.min && ms <= INTERVAL_BOUNDS_MS.max)) {
    throw new UsageError(flag, `expected a duration from 200ms to 60s (e.g. 1s, 500ms, 2.5s), got ${JSON.stringify(value.slice(0, 32))}`);
  }
  return ms;
}

/** How far back the TUI's trends reach (the sparklines of its rates and lags). */
export const TREND_WINDOW_MS = 5 * 60_000;

/** A bounded ring buffer: the newest `capacity` values pushed, oldest first; older ones are dropped. */
export class Ring<T> {
  private readonly items: T[] = [];
  /** Index of the oldest value once the buffer is full. */
  private head = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`a ring holds at least one value, got capacity ${capacity}`);
  }

  get length(): number {
    return this.items.length;
  }

  push(value: T): void {
    if (this.items.length < this.capacity) {
      this.items.push(value);
      return;
    }
    this.items[this.head] = value;
    this.head = (this.head + 1) % this.capacity;
  }

  /** The values, oldest first (a copy). */
  toArray(): T[] {
    return [...this.items.slice(this.head), ...this.items.slice(0, this.head)];
  }
}

/** The series of the TUI's sparklines, oldest first; null where there is no value (no rate yet, no checkpoint). */
export interface Trends {
  /** Server time from the oldest point to the newest (ms). */
  spanMs: number;
  /** How far back the history may reach (TREND_WINDOW_MS). */
  windowMs: number;
  membershipEventsPerSec: (number | null)[];
  messagesCommittedPerSec: (number | null)[];
  relayDispatchedPerSec: (number | null)[];
  /** Per partition of the newest snapshot: its lag at each point (null: not there then, or no checkpoint). */
  lag: { partition: number; values: (number | null)[] }[];
}

interface TrendPoint {
  timeMs: number;
  membershipEventsPerSec: number | null;
  messagesCommittedPerSec: number | null;
  relayDispatchedPerSec: number | null;
  lag: Map<number, number | null>;
}

/**
 * The last TREND_WINDOW_MS of the dashboard's rates and of each partition's lag, one point per
 * snapshot, in a ring of `ceil(window / interval) + 1` points: memory stays bounded however long it
 * runs (1,501 points at the fastest interval). `record` returns the series as plain arrays, so that
 * a paused screen can keep the ones it shows while the history moves on.
 */
export class TrendHistory {
  private readonly ring: Ring<TrendPoint>;

  constructor(intervalMs: number, readonly windowMs: number = TREND_WINDOW_MS) {
    this.ring = new Ring(Math.ceil(windowMs / intervalMs) + 1);
  }

  get capacity(): number {
    return this.ring.capacity;
  }

  record(s: DashboardSnapshot, r: Rates | null): Trends {
    this.ring.push({
      timeMs: s.timeMs,
      membershipEventsPerSec: r?.membershipEventsPerSec ?? null,
      messagesCommittedPerSec: r?.messagesCommittedPerSec ?? null,
      relayDispatchedPerSec: r?.relayDispatchedPerSec ?? null,
      lag: new Map(s.projection.partitions.map((p) => [p.partition, p.lag])),
    });
    const points = this.ring.toArray();
    return {
      spanMs: points[points.length - 1]!.timeMs - points[0]!.timeMs,
      windowMs: this.windowMs,
      membershipEventsPerSec: points.map((p) => p.membershipEventsPerSec),
      messagesCommittedPerSec: points.map((p) => p.messagesCommittedPerSec),
      relayDispatchedPerSec: points.map((p) => p.relayDispatchedPerSec),
      lag: s.projection.partitions.map(({ partition }) => ({ partition, values: points.map((p) => p.lag.get(partition) ?? null) })),
    };
  }
}
