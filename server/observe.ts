/**
 * ObserveService.Watch (proto/qim/admin/v1/observe.proto): the dashboard's feed. A snapshot is the
 * engine's raw counters from the prom-client registry (core/metrics/), the session projection's
 * status and the newest audit-log entries. Read-only: nothing here writes to Redis or the audit log.
 */
import type { ServerWritableStream } from "@grpc/grpc-js";
import { InvalidArgumentError, registry, type NodeRecord, type ProjectionStack } from "../core/index.js";
import type { AuditLog } from "./audit.js";
import { clusterNodeOut, projectionStatusOut } from "./convert.js";
import type { CmdBadFile } from "../admin-api/gen/qim/admin/v1/cmd.js";
import type { Counters, Devices, Snapshot, WatchRequest } from "../admin-api/gen/qim/admin/v1/observe.js";
import { openEndedStream } from "./pipeline/stream.js";

export const WATCH_INTERVAL_MS = { min: 200, max: 60_000, default: 1000 } as const;
/** Audit-log entries per snapshot. */
export const SNAPSHOT_AUDIT_ENTRIES = 8;

/** The counters' epoch: prom-client counters live as long as the process (one registry per process). */
export const PROCESS_STARTED_AT_MS = BigInt(Math.round(performance.timeOrigin));

export function watchIntervalMs(req: WatchRequest): number {
  const ms = req.intervalMs === 0 ? WATCH_INTERVAL_MS.default : req.intervalMs;
  if (ms < WATCH_INTERVAL_MS.min || ms > WATCH_INTERVAL_MS.max) {
    throw new InvalidArgumentError("interval_ms", `interval_ms is ${WATCH_INTERVAL_MS.min} to ${WATCH_INTERVAL_MS.max} (0: ${WATCH_INTERVAL_MS.default}), got ${req.intervalMs}`);
  }
  return ms;
}

type MetricValues = { labels: Partial<Record<string, string | number>>; value: number }[];

/** Every counter of the registry by name, with its labelled values: one read of the registry. */
export async function counterValues(): Promise<Map<string, MetricValues>> {
  const out = new Map<string, MetricValues>();
  // prom-client types `type` as an enum its JavaScript does not export; the value is the string
  for (const m of await registry.getMetricsAsJSON()) if (String(m.type) === "counter") out.set(m.name, m.values);
  return out;
}

const totalOf = (v: MetricValues | undefined) => (v ?? []).reduce((sum, x) => sum + x.value, 0);

/** Sums by one label; every known label value is present (0 until seen), so that the shape is stable. */
function byLabel(v: MetricValues | undefined, label: string, known: readonly string[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(known.map((k) => [k, 0]));
  for (const x of v ?? []) {
    const key = String(x.labels[label] ?? "");
    out[key] = (out[key] ?? 0) + x.value;
  }
  return out;
}

/** The counters the dashboard shows, read by their spec names, and every counter's total, from one read of the registry. */
export async function readCounters(): Promise<Counters> {
  const c = await counterValues();
  return {
    totals: Object.fromEntries([...c].map(([name, v]) => [name, totalOf(v)])),
    membershipEvents: byLabel(c.get("qim_writer_membership_events_total"), "op", ["join", "leave", "remove"]),
    membershipRetries: byLabel(c.get("qim_writer_membership_retry_total"), "path", ["send", "membership"]),
    conversationStatePending: totalOf(c.get("qim_session_conversation_state_pending_total")),
    conversationStateWritten: totalOf(c.get("qim_session_conversation_state_written_total")),
    conversationStateFailures: totalOf(c.get("qim_session_conversation_state_failures_total")),
    usersRebuilt: totalOf(c.get("qim_session_projection_user_rebuilt_total")),
    messagesCommitted: totalOf(c.get("qim_writer_messages_committed_total")),
    relayDispatched: totalOf(c.get("qim_relay_dispatched_total")),
  };
}

/** The devices part of a snapshot (issue 27), read by the gateway's and delivery's metric names from one read of the registry. */
export async function readDevices(): Promise<Devices> {
  const all = new Map((await registry.getMetricsAsJSON()).map((m) => [m.name, m.values]));
  const sum = (name: string, labels: Record<string, string> = {}) =>
    (all.get(name) ?? []).filter((v) => Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x)).reduce((a, v) => a + v.value, 0);
  const buckets = (all.get("qim_delivery_commit_to_push_seconds") ?? [])
    .filter((v) => (v as { metricName?: string }).metricName === "qim_delivery_commit_to_push_seconds_bucket")
    .map((v) => ({ leMs: v.labels.le === "+Inf" ? Infinity : Number(v.labels.le) * 1000, count: v.value }));
  return {
    connections: sum("qim_gateway_connections"), onlineUsers: sum("qim_delivery_online_users"),
    framesIn: sum("qim_gateway_frames_total", { direction: "in" }), framesOut: sum("qim_gateway_frames_total", { direction: "out" }),
    pushes: sum("qim_delivery_pushes_total"),
    backPressureSoft: sum("qim_gateway_back_pressure_total", { mark: "soft" }), backPressureHard: sum("qim_gateway_back_pressure_total", { mark: "hard" }),
    upgradesRefused: sum("qim_gateway_upgrades_refused_total"), commitToPush: buckets, deliveryLag: sum("qim_delivery_checkpoint_lag"),
  };
}

/** How a watch ended without an error: the client went away, or the server is shutting down. */
export type WatchEnd = "cancelled" | "shutdown";

/**
 * The server's watchers. One read serves every watcher that asks at about the same moment: a read
 * in flight is shared, and a snapshot younger than WATCH_INTERVAL_MS.min is reused (never twice
 * for the same watcher). Watchers tick on a shared cadence (multiples of their interval on the
 * process clock), so N dashboards with the same interval ask together and cost one status read per
 * interval, not N; whatever the intervals, reads are at most one per WATCH_INTERVAL_MS.min. The
 * audit lines come from the audit log's in-memory newest records, not from the file.
 */
export class Observer {
  private readonly watchers = new Set<(end: WatchEnd) => void>();
  private inflight: Promise<Snapshot> | undefined;
  /** The newest snapshot and when its read began (Date.now()). */
  private last: { snapshot: Snapshot; readAt: number } | undefined;
  private closed = false;

  /**
   * `nodes`: the engine cluster's nodes (ClusterMembership.nodes), absent on a server that is no
   * node; `cmdBadFiles`: the CMD pending files set aside as .bad (server/routing/cmd-bad.ts);
   * `connections`: each node's published device connection count (core/delivery).
   */
  constructor(
    private readonly projection: ProjectionStack,
    private readonly audit: AuditLog,
    private readonly nodes?: () => Promise<NodeRecord[]>,
    private readonly cmdBadFiles: () => Promise<CmdBadFile[]> = async () => [],
    private readonly connections: () => Promise<Map<string, number>> = async () => new Map(),
  ) {}

  /** Streams being served now (each has at most one timer or one read pending). */
  get active(): number {
    return this.watchers.size;
  }

  /** A snapshot read now, or one read less than WATCH_INTERVAL_MS.min ago that is not `previous`. */
  snapshot(previous?: Snapshot): Promise<Snapshot> {
    const last = this.last;
    if (last && last.snapshot !== previous && Date.now() - last.readAt < WATCH_INTERVAL_MS.min) return Promise.resolve(last.snapshot);
    if (!this.inflight) {
      const readAt = Date.now();
      this.inflight = this.read().then((snapshot) => {
        if (!this.last || this.last.readAt <= readAt) this.last = { snapshot, readAt };
        return snapshot;
      }).finally(() => {
        this.inflight = undefined;
      });
    }
    return this.inflight;
  }

  private async read(): Promise<Snapshot> {
    const [status, counters, nodes, cmdBadFiles, devices, connections] = await Promise.all([
      this.projection.status(), readCounters(), this.nodes ? this.nodes() : [], this.cmdBadFiles(), readDevices(), this.nodes ? this.connections() : new Map<string, number>(),
    ]);
    const badOf = new Map(cmdBadFiles.map((b) => [b.nodeId, b.path]));
    // taken with the time, after the status: a snapshot whose timeMs is after a call's answer has
    // that call's audit record
    const audit = this.audit.recent(SNAPSHOT_AUDIT_ENTRIES);
    return {
      timeMs: BigInt(Date.now()),
      startedAtMs: PROCESS_STARTED_AT_MS,
      counters,
      projection: projectionStatusOut(status),
      audit: audit.map((e) => ({ time: e.time, principal: e.principal, rpc: e.rpc, result: e.result })),
      nodes: nodes.map((n) => clusterNodeOut(n, badOf.get(n.nodeId) ?? "", connections.get(n.nodeId))),
      cmdBadFiles,
      devices,
    };
  }

  /**
   * Writes a snapshot now and then one every `intervalMs`, on the cadence shared by the watchers of
   * that interval (so the second comes one half to one and a half intervals after the first; a
   * slow read or a client that does not drain delays the next one, never queues several). Resolves
   * when the client cancels or the server shuts down, with the timer cleared; rejects with the error of a
   * snapshot that could not be read, or with what `admit` throws: it runs before every snapshot is
   * written, so that a caller whose certificate was revoked while the stream was open gets no
   * further snapshot (the deny list is checked per call, and this call never ends by itself).
   */
  watch(call: ServerWritableStream<WatchRequest, Snapshot>, intervalMs: number, admit: () => void = () => {}): Promise<WatchEnd> {
    if (this.closed) return Promise.resolve("shutdown");
    return openEndedStream<Snapshot, "shutdown">(call, admit, (out) => {
      let timer: NodeJS.Timeout | undefined;
      const end = (how: WatchEnd) => {
        if (how === "shutdown") out.end("shutdown");
      };
      let previous: Snapshot | undefined;
      const tick = () => {
        // the next multiple of intervalMs nearest to one interval from now: watchers with the same
        // interval tick together (and share a read) from their second snapshot on
        const due = Math.round((Date.now() + intervalMs) / intervalMs) * intervalMs;
        this.snapshot(previous).then((s) => {
          if (out.done) return;
          previous = s;
          out.send(s);
          out.whenWritten(() => {
            if (!out.done) timer = setTimeout(tick, Math.max(0, due - Date.now()));
          });
        }, (error: unknown) => out.fail(error));
      };
      this.watchers.add(end);
      tick();
      return () => {
        clearTimeout(timer);
        this.watchers.delete(end);
      };
    });
  }

  /** Ends every watch (and any that arrives later) as "shutdown". */
  close(): void {
    this.closed = true;
    for (const finish of [...this.watchers]) finish("shutdown");
  }
}
