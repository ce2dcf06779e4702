/**
 * The admin server's own evidence of where its time goes (bench/admin), off unless
 * QIM_ADMIN_DIAGNOSTICS=1. Nothing here is on a request's path.
 */
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector";
import { join } from "node:path";
import { monitorEventLoopDelay, performance, PerformanceObserver, type IntervalHistogram, type RecordableHistogram } from "node:perf_hooks";
import type { AuditLog } from "./audit.js";
import { counterValues, readCounters } from "./observe.js";

/** The environment variable that turns the server's diagnostics on (bench/admin sets it). */
export const DIAGNOSTICS_ENV = "QIM_ADMIN_DIAGNOSTICS";
/**
 * With the diagnostics on: a folder where each interval's CPU profile and sampled allocations are
 * written (interval-N.cpuprofile, interval-N.heapprofile).
 */
export const DIAGNOSTICS_PROFILE_ENV = "QIM_ADMIN_DIAGNOSTICS_PROFILE";

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
const ms = (ns: number) => +(ns / 1e6).toFixed(3);
const summary = (h: RecordableHistogram | IntervalHistogram) => (
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
  const projected = async () => Object.fromEntries(((await counterValues()).get("qim_session_projection_records_total") ?? []).map((v) => [String(v.labels.path), v.value]));
  let projectedBefore = await projected();
  // a CPU profile of each interval (node --cpu-prof would cover start-up and shutdown too)
  const profileDir = process.env[DIAGNOSTICS_PROFILE_ENV];
  let profiler: Session | undefined;
  const post = (method: string, params?: object) => new Promise<{ profile?: unknown }>((resolve, reject) =>
    profiler!.post(method, params ?? {}, (e, r) => (e ? reject(e) : resolve(r as { profile?: unknown }))));
  const startSampling = () => post("HeapProfiler.startSampling", { samplingInterval: 262144, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  let interval = 0;
  if (profileDir) {
    profiler = new Session();
    profiler.connect();
    await post("Profiler.enable");
    await post("Profiler.start");
    await startSampling();
  }
  const rotateProfile = async () => {
    if (!profiler) return;
    const { profile } = await post("Profiler.stop");
    const { profile: heap } = await post("HeapProfiler.stopSampling");
    await writeFile(join(profileDir!, `interval-${interval}.cpuprofile`), JSON.stringify(profile));
    await writeFile(join(profileDir!, `interval-${interval++}.heapprofile`), JSON.stringify(heap));
    await post("Profiler.start");
    await startSampling();
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
