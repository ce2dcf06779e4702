// The admin gRPC listener's settings (engine-free: the CLI reads them for `server start --help`).
import type { ListenerSettings } from "../../listener.js";

export interface AdminGrpcOptions {
  /** host:port to serve gRPC on; port 0 picks a free one. */
  listen: string;
}

export const ADMIN_GRPC_DEFAULTS = { listen: "127.0.0.1:7443" } as const;

export const adminGrpcSettings: ListenerSettings<{ listen: string }, AdminGrpcOptions, typeof ADMIN_GRPC_DEFAULTS> = {
  defaults: ADMIN_GRPC_DEFAULTS,
  specs: [{
    section: "server", after: null,
    specs: [{ key: "listen", kind: "address", default: ADMIN_GRPC_DEFAULTS.listen, description: "gRPC address host:port of the admin API" }],
  }],
  check(c) {
    const host = c.hostOf("listen")!;
    if (c.insecureDev && !c.isLoopback(host) && !c.anyAddress) {
      c.fail("listen", `--insecure-dev serves plaintext and makes every caller an admin: it listens only on a loopback address (127.0.0.1, ::1, localhost), not ${host}. Use mTLS (--tls-ca, --tls-cert, --tls-key); to expose an insecure server anyway, add --insecure-dev-allow-non-loopback`);
    }
  },
  typed: (r) => ({ listen: r.values.get("listen") as string }),
  options: async (s) => ({ listen: s.listen }),
};
