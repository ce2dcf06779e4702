/**
 * The metrics listener: plain-HTTP GET /metrics (Prometheus text) of the process's one registry
 * (core/metrics/), the engine's counters and the server's. Loopback by default; no principal, no
 * audit: it reads counters only.
 */
import { createServer as createHttpServer } from "node:http";
import { collectDefaultMetrics, Registry } from "prom-client";
import { registry } from "../../../core/index.js";
import { listenAddr, type Listener } from "../../listener.js";

/**
 * How long a scrape of /metrics waits for the projection status it reads first (the gauges only a
 * status read keeps current) before it answers with the values it has: an unreachable store must
 * not make the scrape itself fail, since `qim_store_reachable` is what says so.
 */
const SCRAPE_STATUS_WAIT_MS = 2000;

/**
 * The process's own metrics (prom-client's defaults: resident memory, heap, open files against
 * their limit, event loop delay, GC), in a registry of their own that only a scrape reads: the
 * engine's registry is also read at every dashboard tick (server/observe.ts), and counting the
 * open files lists one entry per device connection. Made with the first metrics listener, once a
 * process (the loop delay and GC pauses are sampled from then on).
 */
let processRegistry: Registry | null = null;

function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export const metricsListener: Listener<{ port: number }> = {
  name: "metrics",
  enabled: (o) => Boolean(o.metricsListen),
  async open(ctx) {
    const m = listenAddr(ctx.options.metricsListen!, "metricsListen");
    const own = processMetrics();
    const server = createHttpServer((req, res) => {
      if (req.url !== "/metrics") { res.writeHead(404).end("not found\n"); return; }
      // the queue depths and dead letters, the epoch another server bumped, the verdicts of a
      // consumer that stopped polling: read now (shared with the dashboards' reads), so that
      // each scrape sees them as of the scrape
      new Promise<void>((resolve) => {
        const wait = setTimeout(resolve, SCRAPE_STATUS_WAIT_MS);
        ctx.observer.snapshot().catch(() => undefined).finally(() => {
          clearTimeout(wait);
          resolve();
        });
      }).then(() => Promise.all([registry.metrics(), own.metrics()])).then(([engine, ownText]) => `${engine}${ownText}`).then(
        (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(m.port, m.host, () => resolve((server.address() as { port: number }).port));
    });
    return {
      handle: { port },
      summary: `metrics on http://${m.host}:${port}/metrics`,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  },
};
