/**
 * What the tests of several server processes share: settle bounds, short leases, the node child's
 * path, a bounded poll, and a Prometheus counter read from a /metrics text.
 */
import { fileURLToPath } from "node:url";

/** How long the test waits for the cluster to settle (leases taken, a drain applied) before it fails. */
export const SETTLE_MS = 30_000;
export const POLL_MS = 100;

/** Short leases so that a drain settles quickly (the defaults are seconds). */
export const LEASE_TTL_MS = 5000;
export const HEARTBEAT_INTERVAL_MS = 500;
export const NODE_CHILD = fileURLToPath(new URL("./node-child.js", import.meta.url));

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, probe: () => Promise<T | undefined | null | false>): Promise<T> {
  const deadline = Date.now() + SETTLE_MS;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${SETTLE_MS} ms${last ? ` (last error: ${String(last)})` : ""}`);
    await sleep(POLL_MS);
  }
}

/** A counter's value in a Prometheus text exposition, summed over the series whose labels include `labels`. */
export function counter(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}
