/**
 * ObserveService.Watch (proto/qim/admin/v1/observe.proto): the dashboard's feed. A snapshot is the
 * engine's raw counters from the prom-client registry (core/metrics.ts), the session projection's
 * status and the newest audit-log entries. Read-only: nothing here writes to Redis or the audit log.
 */
import type { ServerWritableStream } from "@grpc/grpc-js";
import { InvalidArgumentError, registry, type ProjectionStack } from "../core/index.js";
import type { AuditLog } from "./audit.js";
import { projectionStatusOut } from "./convert.js";
import type { Counters, Snapshot, WatchRequest } from "./gen/qim/admin/v1/observe.js";

export const WATCH_RPC = "/qim.admin.v1.ObserveService/Watch";
export const WATCH_INTERVAL_MS = { min: 200, max: 60_000, default: 1000 } as const;
/** Audit-log entries per snapshot. */
export const SNAPSHOT_AUDIT_ENTRIES = 8;

/** The counters' epoch: prom-client counters live as long as the process (one registry per process). */
const PROCESS_STARTED_AT_MS = BigInt(Math.round(performance.timeOrigin));

export function watchIntervalMs(req: WatchRequest): number {
  const ms = req.intervalMs === 0 ? WATCH_INTERVAL_MS.default : req.intervalMs;
  if (ms < WATCH_INTERVAL_MS.min || ms > WATCH_INTERVAL_MS.max) {
    throw new InvalidArgumentError("interval_ms", `interval_ms is ${WATCH_INTERVAL_MS.min} to ${WATCH_INTERVAL_MS.max} (0: ${WATCH_INTERVAL_MS.default}), got ${req.intervalMs}`);
  }
  return ms;
}

async function values(name: string): Promise<{ labels: Partial<Record<string, string | number>>; value: number }[]> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`metric ${name} is not registered`);
  return (await metric.get()).values;
}

async function total(name: string): Promise<number> {
  return (await values(name)).reduce((sum, v) => sum + v.value, 0);
}

/** Sums by one label; every known label value is present (0 until seen), so that the shape is stable. */
async function byLabel(name: string, label: string, known: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = Object.fromEntries(known.map((k) => [k, 0]));
  for (const v of await values(name)) {
    const key = String(v.labels[label] ?? "");
    out[key] = (out[key] ?? 0) + v.value;
  }
  return out;
}

/** The counters the dashboard shows, read by their spec names from the process's registry. */
export async function readCounters(): Promise<Counters> {
  const [membershipEvents, membershipRetries, pending, written, failures, rebuilt, committed, dispatched] = await Promise.all([
    byLabel("qim_writer_membership_events_total", "op", ["join", "leave", "remove"]),
    byLabel("qim_writer_membership_retry_total", "path", ["send", "membership"]),
    total("qim_session_conversation_state_pending_total"),
    total("qim_session_conversation_state_written_total"),
    total("qim_session_conversation_state_failures_total"),
    total("qim_session_projection_user_rebuilt_total"),
    total("qim_writer_messages_committed_total"),
    total("qim_relay_dispatched_total"),
  ]);
  return {
    membershipEvents,
    membershipRetries,
    conversationStatePending: pending,
    conversationStateWritten: written,
    conversationStateFailures: failures,
    usersRebuilt: rebuilt,
    messagesCommitted: committed,
    relayDispatched: dispatched,
  };
}

/** How a watch ended without an error: the client went away, or the server is shutting down. */
export type WatchEnd = "cancelled" | "shutdown";

/**
 * The server's watchers. Snapshots are read once for every watcher that asks at the same moment
 * (one read in flight at a time), so N dashboards cost about one status read per tick, not N.
 */
export class Observer {
  private readonly watchers = new Set<(end: WatchEnd) => void>();
  private inflight: Promise<Snapshot> | undefined;
  private closed = false;

  constructor(private readonly projection: ProjectionStack, private readonly audit: AuditLog) {}

  /** Streams being served now (each has at most one timer or one read pending). */
  get active(): number {
    return this.watchers.size;
  }

  snapshot(): Promise<Snapshot> {
    this.inflight ??= this.read().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async read(): Promise<Snapshot> {
    const [status, audit] = await Promise.all([this.projection.status(), this.audit.tail(SNAPSHOT_AUDIT_ENTRIES)]);
    const timeMs = BigInt(Date.now());
    return {
      timeMs,
      startedAtMs: PROCESS_STARTED_AT_MS,
      counters: await readCounters(),
      projection: projectionStatusOut(status),
      audit: audit.map((e) => ({ time: e.time, principal: e.principal, rpc: e.rpc, result: e.result })),
    };
  }

  /**
   * Writes a snapshot now and then one every `intervalMs` (on a fixed cadence; a slow read or a
   * client that does not drain delays the next one, never queues several). Resolves when the
   * client cancels or the server shuts down, with the timer cleared; rejects with the error of a
   * snapshot that could not be read, or with what `admit` throws: it runs before every snapshot is
   * written, so that a caller whose certificate was revoked while the stream was open gets no
   * further snapshot (the deny list is checked per call, and this call never ends by itself).
   */
  watch(call: ServerWritableStream<WatchRequest, Snapshot>, intervalMs: number, admit: () => void = () => {}): Promise<WatchEnd> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let done = false;
      const finish = (end: WatchEnd | { error: unknown }) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.watchers.delete(finish);
        call.off("cancelled", onCancelled);
        if (typeof end === "string") resolve(end);
        else reject(end.error);
      };
      const onCancelled = () => finish("cancelled");
      const tick = () => {
        const due = Date.now() + intervalMs;
        this.snapshot().then((s) => {
          if (done) return;
          try {
            admit();
          } catch (error) {
            finish({ error });
            return;
          }
          const next = () => {
            if (!done) timer = setTimeout(tick, Math.max(0, due - Date.now()));
          };
          if (call.write(s)) next();
          else call.once("drain", next);
        }, (error: unknown) => finish({ error }));
      };
      if (this.closed) return resolve("shutdown");
      if (call.cancelled) return resolve("cancelled");
      this.watchers.add(finish);
      call.on("cancelled", onCancelled);
      tick();
    });
  }

  /** Ends every watch (and any that arrives later) as "shutdown". */
  close(): void {
    this.closed = true;
    for (const finish of [...this.watchers]) finish("shutdown");
  }
}
