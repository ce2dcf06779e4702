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
  const totals: Record<string, number> = {};
  for (const m of await registry.getMetricsAsJSON()) {
    // prom-client types `type` as an enum its JavaScript does not export; the value is the string
    if (String(m.type) === "counter") totals[m.name] = m.values.reduce((sum, v) => sum + v.value, 0);
  }
  return {
    totals,
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

  constructor(private readonly projection: ProjectionStack, private readonly audit: AuditLog) {}

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
    const [status, counters] = await Promise.all([this.projection.status(), readCounters()]);
    // taken with the time, after the status: a snapshot whose timeMs is after a call's answer has
    // that call's audit record
    const audit = this.audit.recent(SNAPSHOT_AUDIT_ENTRIES);
    return {
      timeMs: BigInt(Date.now()),
      startedAtMs: PROCESS_STARTED_AT_MS,
      counters,
      projection: projectionStatusOut(status),
      audit: audit.map((e) => ({ time: e.time, principal: e.principal, rpc: e.rpc, result: e.result })),
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
      let previous: Snapshot | undefined;
      const tick = () => {
        // the next multiple of intervalMs nearest to one interval from now: watchers with the same
        // interval tick together (and share a read) from their second snapshot on
        const due = Math.round((Date.now() + intervalMs) / intervalMs) * intervalMs;
        this.snapshot(previous).then((s) => {
          if (done) return;
          previous = s;
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

/** The environment variable that turns the server's diagnostics on (bench/admin sets it). */
export const DIAGNOSTICS_ENV = "QIM_ADMIN_DIAGNOSTICS";
/**
 * With the diagnostics on: a folder where each interval's CPU profile and sampled allocations are
 * written (interval-N.cpuprofile, interval-N.heapprofile).
 */
export const DIAGNOSTICS_PROFILE_ENV = "QIM_ADMIN_DIAGNOSTICS_PROFILE";

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
const ms = (ns: number) => +(ns / 1e6).toFixed(3);
const summary = (h: import("node:perf_hooks").RecordableHistogram | import("node:perf_hooks").IntervalHistogram) => (
  h.count === 0 ? { n: 0 } : { n: h.count, p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), mean: ms(h.mean) });

/**
 * The server's own evidence of where its time goes, for bench/admin: the event loop's delay
 * (perf_hooks monitorEventLoopDelay, sampled every 5 ms: a 1 ms timer woke an idle loop a
 * thousand times a second) and utilisation, GC pauses by kind, CPU, the audit log's flushes (write + fdatasync, and what each call waited for them) and the
 * relay/projection counters. Off unless QIM_ADMIN_DIAGNOSTICS=1; then every SIGUSR2 logs one line
 * `diagnostics {json}` covering the time since the previous SIGUSR2 (or the start) and starts a
 * new interval, so that a benchmark can bracket its measured phase with two signals.
 */
export async function startDiagnostics(audit: AuditLog, log: (line: string) => void): Promise<{ stop(): void }> {
  const { monitorEventLoopDelay, performance, PerformanceObserver } = await import("node:perf_hooks");
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const gc = new Map<string, { n: number; totalMs: number; maxMs: number }>();
  const kinds: Record<number, string> = { 1: "minor", 2: "major", 4: "incremental", 8: "weakcb" };
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = kinds[(e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? "other";
      const g = gc.get(kind) ?? { n: 0, totalMs: 0, maxMs: 0 };
      g.n++;
      g.totalMs += e.duration;
      g.maxMs = Math.max(g.maxMs, e.duration);
      gc.set(kind, g);
    }
  });
  obs.observe({ entryTypes: ["gc"] });
  let elu = performance.eventLoopUtilization();
  let cpu = process.cpuUsage();
  let at = process.hrtime.bigint();
  let counters = await readCounters();
  const projected = async () => Object.fromEntries((await values("qim_session_projection_records_total")).map((v) => [String(v.labels.path), v.value]));
  let projectedBefore = await projected();
  // a CPU profile of each interval (node --cpu-prof would cover start-up and shutdown too)
  const profileDir = process.env[DIAGNOSTICS_PROFILE_ENV];
  let profiler: import("node:inspector").Session | undefined;
  let interval = 0;
  if (profileDir) {
    const { Session } = await import("node:inspector");
    profiler = new Session();
    profiler.connect();
    await new Promise<void>((resolve, reject) => profiler!.post("Profiler.enable", (e) => (e ? reject(e) : resolve())));
    await new Promise<void>((resolve, reject) => profiler!.post("Profiler.start", (e) => (e ? reject(e) : resolve())));
    await new Promise<void>((resolve, reject) => profiler!.post("HeapProfiler.startSampling", { samplingInterval: 262144, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }, (e) => (e ? reject(e) : resolve())));
  }
  const rotateProfile = async () => {
    if (!profiler) return;
    const { writeFile } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const profile = await new Promise<unknown>((resolve, reject) => profiler!.post("Profiler.stop", (e, r) => (e ? reject(e) : resolve(r.profile))));
    const heap = await new Promise<unknown>((resolve, reject) => profiler!.post("HeapProfiler.stopSampling", (e, r) => (e ? reject(e) : resolve(r.profile))));
    await writeFile(join(profileDir!, `interval-${interval}.cpuprofile`), JSON.stringify(profile));
    await writeFile(join(profileDir!, `interval-${interval++}.heapprofile`), JSON.stringify(heap));
    await new Promise<void>((resolve, reject) => profiler!.post("Profiler.start", (e) => (e ? reject(e) : resolve())));
    await new Promise<void>((resolve, reject) => profiler!.post("HeapProfiler.startSampling", { samplingInterval: 262144, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }, (e) => (e ? reject(e) : resolve())));
    await new Promise<void>((resolve, reject) => profiler!.post("HeapProfiler.startSampling", { samplingInterval: 262144, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }, (e) => (e ? reject(e) : resolve())));
  };
  let auditBefore = { flushes: audit.stats.flushes, records: audit.stats.records };
  const report = () => void (async () => {
    const now = process.hrtime.bigint();
    await rotateProfile();
    const c = await readCounters();
    const p = await projected();
    const line = {
      seconds: +(Number(now - at) / 1e9).toFixed(3),
      cpuMs: (({ user, system }) => +((user + system) / 1000).toFixed(1))(process.cpuUsage(cpu)),
      eventLoopUtilization: +performance.eventLoopUtilization(elu).utilization.toFixed(3),
      eventLoopDelayMs: summary(loop),
      gc: Object.fromEntries([...gc].map(([k, g]) => [k, { n: g.n, totalMs: +g.totalMs.toFixed(1), maxMs: +g.maxMs.toFixed(2) }])),
      audit: {
        flushes: audit.stats.flushes - auditBefore.flushes,
        records: audit.stats.records - auditBefore.records,
        flushMs: summary(audit.stats.flushNs),
        writeMs: summary(audit.stats.writeNs),
        syncMs: summary(audit.stats.syncNs),
        waitMs: summary(audit.stats.waitNs),
        handlerMs: summary(audit.stats.handlerNs),
      },
      committed: c.messagesCommitted + sum(c.membershipEvents) - counters.messagesCommitted - sum(counters.membershipEvents),
      relayed: c.relayDispatched - counters.relayDispatched,
      projected: Object.fromEntries(Object.entries(p).map(([k, v]) => [k, v - (projectedBefore[k] ?? 0)])),
    };
    log(`diagnostics ${JSON.stringify(line)}`);
    loop.reset();
    gc.clear();
    audit.stats.flushNs.reset();
    audit.stats.writeNs.reset();
    audit.stats.syncNs.reset();
    audit.stats.waitNs.reset();
    audit.stats.handlerNs.reset();
    auditBefore = { flushes: audit.stats.flushes, records: audit.stats.records };
    elu = performance.eventLoopUtilization();
    cpu = process.cpuUsage();
    at = now;
    counters = c;
    projectedBefore = p;
  })().catch((err: unknown) => log(`diagnostics failed: ${String(err)}`));
  process.on("SIGUSR2", report);
  log(`diagnostics on (${DIAGNOSTICS_ENV}): SIGUSR2 logs one line per interval`);
  return {
    stop() {
      process.off("SIGUSR2", report);
      loop.disable();
      obs.disconnect();
      profiler?.disconnect();
    },
  };
}
