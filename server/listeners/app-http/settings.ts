// The application servers' HTTP API listener's settings (engine-free: the CLI reads them for `server start --help`).
import type { ListenerSettings } from "../../listener.js";

/** The CMD sync HTTP API: off unless asked for (an application server's endpoint, not an operator's). */
export const APP_HTTP_DEFAULTS = { syncListen: "off" } as const;

export interface AppHttpSettings {
  /** The CMD sync HTTP API's listener (null: off) and the tenant of a request that names none. */
  syncListen: string | null;
  syncTenant?: string;
}

export interface AppHttpOptions {
  /**
   * The CMD sync HTTP API (server/listeners/app-http/, the sync.listen setting): /message/sync and
   * /message/syncack over TLS with the server's certificate (`tls`), service certificates only;
   * `tenant` answers for requests that name none (sync.tenant).
   */
  sync?: { listen: string; tenant: string | null };
}

export const appHttpSettings: ListenerSettings<AppHttpSettings, AppHttpOptions, typeof APP_HTTP_DEFAULTS> = {
  defaults: APP_HTTP_DEFAULTS,
  specs: [{
    section: "sync", after: null,
    specs: [
      { key: "sync.listen", kind: "address-or-off", default: APP_HTTP_DEFAULTS.syncListen, description: "the CMD sync HTTP API (POST /message/sync and /message/syncack, WuKongIM's JSON, docs/cmd-sync.md) address host:port, over TLS with the admin certificate; only client certificates of role service (qimctl certs issue --role service) may call it; port 0: one the OS chooses; off: no HTTP API" },
      { key: "sync.tenant", kind: "uuid", description: "the tenant of a /message/sync or /message/syncack request that names none (its \"tenant\" field); unset: every request must name its tenant" },
    ],
  }],
  check(c) {
    const host = c.hostOf("sync.listen");
    if (c.insecureDev && host !== null && !c.isLoopback(host) && !c.anyAddress) {
      c.fail("sync.listen", `--insecure-dev makes the CMD sync HTTP API plain HTTP without client certificates, so it listens only on a loopback address, not ${host}; use mTLS, or add --insecure-dev-allow-non-loopback`);
    }
    if (host === null && c.has("sync.tenant")) c.fail("sync.tenant", "has no use with sync.listen off");
  },
  typed: (r) => ({
    syncListen: (r.values.get("sync.listen") as string | null | undefined) ?? null,
    ...(r.values.has("sync.tenant") ? { syncTenant: r.values.get("sync.tenant") as string } : {}),
  }),
  options: async (s) => (s.syncListen !== null ? { sync: { listen: s.syncListen, tenant: s.syncTenant ?? null } } : {}),
};
