import net from "node:net";

const LOOPBACK = "127.0.0.1";

/** Ports handed out by this process, never handed out twice (the kernel may reuse a closed one). */
const handedOut = new Set<number>();

function bindProbe(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", () => resolve(null));
    srv.listen({ host: LOOPBACK, port, exclusive: true }, () => {
      const addr = srv.address();
      const got = typeof addr === "object" && addr !== null ? addr.port : null;
      srv.close(() => resolve(got));
    });
  });
}

/** Whether `port` on 127.0.0.1 can be bound right now. */
export async function portIsFree(port: number): Promise<boolean> {
  return (await bindProbe(port)) === port;
}

/**
 * A currently free TCP port on 127.0.0.1 (bind port 0, read it, close), for the dev stack and
 * the test harness. With `{ alsoFree: n }` the port + n is free as well (a Redis Cluster's bus).
 */
export async function freePort(opts: { alsoFree?: number } = {}): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = await bindProbe(0);
    if (port === null || handedOut.has(port)) continue;
    if (opts.alsoFree !== undefined) {
      const other = port + opts.alsoFree;
      if (other > 65535 || handedOut.has(other)) continue;
      if ((await bindProbe(other)) === null) continue;
      handedOut.add(other);
    }
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port found on ${LOOPBACK}${opts.alsoFree !== undefined ? ` (with port + ${opts.alsoFree} free too)` : ""}`);
}
