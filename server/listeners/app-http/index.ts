/**
 * The application servers' HTTP API listener (CMD sync, spec 001: /message/sync, /message/syncack;
 * cmd-http.ts): TLS with the node's certificate, service certificates only, each request through
 * the node's pipeline and served at the owner of the user's slot.
 */
import { parseUuid } from "../../../core/index.js";
import type { Listener } from "../../listener.js";
import { startCmdHttpServer, type CmdHttpServer } from "./cmd-http.js";

export const appHttpListener: Listener<CmdHttpServer> = {
  name: "app-http",
  enabled: (o) => o.sync !== undefined,
  async open(ctx) {
    const { options: opts, insecureDev: insecure } = ctx;
    const tenant = opts.sync!.tenant === null ? null : parseUuid(opts.sync!.tenant, "sync.tenant");
    const server = await startCmdHttpServer({
      listen: opts.sync!.listen, insecureDev: insecure, tenant, access: ctx.cmd, log: ctx.log,
      ...(opts.tls ? { tls: opts.tls } : {}),
      audit: (rec) => ctx.audit.append({ time: new Date().toISOString(), ...rec }),
      ...(ctx.revoked ? { revoked: ctx.revoked } : {}),
    });
    return {
      handle: server,
      line: `CMD sync HTTP API on ${server.url} (${insecure ? "INSECURE plain HTTP" : "TLS, service certificates only"})`,
      close: () => server.close(),
    };
  },
};
