/**
 * Spec 000's headline figure (issue 27): the highest open-loop send rate at which SEND_ACK p99 and
 * end-to-end p99 stay within the spec's measured figures for a whole window, with the independent
 * checker passing. The spec measured 10,000 msg/s × 180 s on its hardware (4+4 Redis, tmpfs disks)
 * with SEND_ACK P99 30.0 ms and end-to-end P99 122.2 ms ("后果", 2026-09-27); the issue asks for the
 * rate that holds those two bounds for 60 s here.
 *
 * The search: from a starting rate, double while a window holds; after the first window that does
 * not, bisect between the last that held and the first that did not until they are within 25 % or
 * the steps run out. Each window is a fresh runLoad (new groups, the same node), so one window's
 * backlog does not count against the next.
 */
import { runLoad, type LoadOptions, type LoadReport } from "./run.js";
import type { Target } from "./target.js";

/** Spec 000 "后果": SEND_ACK P99 at 10,000 msg/s (ms). */
export const SPEC000_SEND_ACK_P99_MS = 30;
/** Spec 000 "后果": end-to-end P99 at 10,000 msg/s (ms; the spec's 122.2, rounded down as the issue states it). */
export const SPEC000_END_TO_END_P99_MS = 122;
/** Spec 000 "后果": the open-loop rate those figures were measured at, on the spec's hardware. */
export const SPEC000_RATE = 10_000;
/** Stop bisecting when the last rate that held and the first that did not are within this ratio. */
const BISECT_UNTIL_RATIO = 1.25;

export interface SearchOptions extends Omit<LoadOptions, "rate"> {
  /** The first rate tried (msg/s). */
  from: number;
  /** Windows run at most. */
  maxSteps: number;
  ackP99Ms?: number;
  endToEndP99Ms?: number;
}

export interface SearchStep {
  rate: number;
  held: boolean;
  /** Why it did not hold (empty when it did). */
  why: string[];
  sendAckP99Ms: number;
  endToEndP99Ms: number;
  acked: number;
  deliveries: number;
  checker: boolean;
}

export interface SearchReport {
  options: Omit<SearchOptions, "log">;
  bounds: { sendAckP99Ms: number; endToEndP99Ms: number };
  steps: SearchStep[];
  /** The highest rate whose window held (0: none did). */
  highestHeld: number;
  /** The lowest rate whose window did not hold (null: every window held; the search ran out of steps going up). */
  lowestFailed: number | null;
  /** highestHeld / SPEC000_RATE. */
  ofSpecRate: number;
}

/** Why one window does not hold (empty: it held). */
export function judge(r: LoadReport, bounds: { sendAckP99Ms: number; endToEndP99Ms: number }): string[] {
  const why: string[] = [];
  if (!r.verdict.ok) why.push("the checker failed");
  if (r.failed > 0) why.push(`${r.failed} sends failed`);
  if (r.skipped > 0) why.push(`${r.skipped} sends skipped (a device at its in-flight cap: the node fell behind the open loop)`);
  if (r.acked === 0) why.push("nothing acked");
  if (r.sendAckMs.p99 > bounds.sendAckP99Ms) why.push(`SEND_ACK p99 ${r.sendAckMs.p99} ms > ${bounds.sendAckP99Ms}`);
  if (r.endToEndMs.p99 > bounds.endToEndP99Ms) why.push(`end to end p99 ${r.endToEndMs.p99} ms > ${bounds.endToEndP99Ms}`);
  return why;
}

/** The next rate to try, or null when the search is done: double up to the first failure, then bisect. */
export function nextRate(steps: readonly Pick<SearchStep, "rate" | "held">[], from: number): number | null {
  if (steps.length === 0) return from;
  const held = steps.filter((s) => s.held).map((s) => s.rate);
  const failed = steps.filter((s) => !s.held).map((s) => s.rate);
  const lo = held.length > 0 ? Math.max(...held) : 0;
  const hi = failed.length > 0 ? Math.min(...failed) : null;
  if (hi === null) return lo * 2;
  if (lo === 0) return hi / 2 >= 1 ? Math.floor(hi / 2) : null;
  if (hi / lo <= BISECT_UNTIL_RATIO) return null;
  const mid = Math.round(Math.sqrt(lo * hi));
  return mid > lo && mid < hi ? mid : null;
}

export async function searchMaxRate(t: Target, o: SearchOptions): Promise<SearchReport> {
  const log = o.log ?? (() => {});
  const bounds = { sendAckP99Ms: o.ackP99Ms ?? SPEC000_SEND_ACK_P99_MS, endToEndP99Ms: o.endToEndP99Ms ?? SPEC000_END_TO_END_P99_MS };
  const steps: SearchStep[] = [];
  for (let rate = nextRate(steps, o.from); rate !== null && steps.length < o.maxSteps; rate = nextRate(steps, o.from)) {
    log(`window ${steps.length + 1}: ${rate} msg/s for ${o.durationS} s`);
    const { report } = await runLoad(t, { ...o, rate, log: () => {} });
    const why = judge(report, bounds);
    steps.push({
      rate, held: why.length === 0, why, sendAckP99Ms: report.sendAckMs.p99, endToEndP99Ms: report.endToEndMs.p99,
      acked: report.acked, deliveries: report.deliveries, checker: report.verdict.ok,
    });
    log(`  ${why.length === 0 ? "held" : `did not hold: ${why.join("; ")}`} (SEND_ACK p99 ${report.sendAckMs.p99} ms, end to end p99 ${report.endToEndMs.p99} ms)`);
  }
  const held = steps.filter((s) => s.held).map((s) => s.rate);
  const failed = steps.filter((s) => !s.held).map((s) => s.rate);
  const highestHeld = held.length > 0 ? Math.max(...held) : 0;
  const { log: _log, ...options } = o;
  return { options, bounds, steps, highestHeld, lowestFailed: failed.length > 0 ? Math.min(...failed) : null, ofSpecRate: +(highestHeld / SPEC000_RATE).toFixed(4) };
}
