#!/usr/bin/env node
import { basename } from "node:path";
import { Command, Option } from "commander";
import { runDaemon, toDaemonSettings } from "./daemon.js";
import { serverLog } from "./log.js";
import {
  CONFIG_ENV, CONFIG_FLAG, helpOf, PRINT_CONFIG_FLAG, renderEffective, resolveSettings, SETTINGS, SettingsError,
} from "./settings/index.js";

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/** The program's two names: qim-node (what it is: a node of the engine) and qim-admin-server (its former name); one code path. */
const NAMES = ["qim-node", "qim-admin-server"] as const;
const invoked = basename(process.argv[1] ?? "").replace(/\.js$/, "");
const name = NAMES.find((n) => n === invoked) ?? "qim-admin-server";

// every flag comes from the settings schema; commander only collects what was given (no defaults,
// no environment: resolveSettings applies flag > environment > config file > default itself)
const program = new Command(name)
  .description(`A node of the QIM engine: the embedded engine on Redis and its listeners — the admin API (gRPC over mTLS, client certificates required), the node RPC, the application servers' HTTP API (CMD sync), metrics. The same program runs as ${NAMES.join(" and as ")}.`)
  .addOption(new Option(`--${CONFIG_FLAG} <file>`, `YAML config file with any of the settings below (env ${CONFIG_ENV}); flags and environment override it`))
  .addOption(new Option(`--${PRINT_CONFIG_FLAG}`, "print the effective settings (passwords redacted) with the source of each, and exit"));
for (const spec of SETTINGS) {
  if (!spec.flag) continue;
  if (spec.kind === "boolean") {
    program.addOption(new Option(`--${spec.flag}`, helpOf(spec)));
    program.addOption(new Option(`--no-${spec.flag}`, `turn ${spec.key} off`).hideHelp(spec.default !== true));
  } else {
    program.addOption(new Option(`--${spec.flag} <value>`, helpOf(spec)));
  }
}
program.addHelpText("after", `
Passwords have no flag (a command line shows in ps): --redis-password-file / QIM_REDIS_PASSWORD,
--cassandra-password-file / QIM_CASSANDRA_PASSWORD, or the config file. Reference of every key:
docs/config-reference.md.

Examples:
  ${name} --tls-ca ca.pem --tls-cert server.pem --tls-key server-key.pem --redis 127.0.0.1:6379
  ${name} --config /etc/qim/server.yaml
  ${name} --config /etc/qim/server.yaml --print-config
  QIM_REDIS_PASSWORD=… ${name} --tls-ca … --redis rediss://10.0.0.5:6380 --redis-user qim --redis-tls-ca redis-ca.pem
  ${name} --tls-ca … --redis 10.0.0.5:6379 --cassandra-contact-points 10.0.1.1,10.0.1.2 --cassandra-local-dc dc1
  ${name} --config /etc/qim/server.yaml --cluster-units relay   # an API node: commits and relays, projects nothing
  ${name} --insecure-dev --redis 127.0.0.1:6379   # development only, loopback only

Exit codes: 2 bad settings (the flag, variable or config key is named; nothing started), or start-up
refused by the session projection (nothing changed); 5 Redis or Cassandra unreachable, or refusing
the credentials or the TLS handshake (one line says which).`);

program.parse();
const o = program.opts<Record<string, unknown>>();
const fail = (code: number, message: string): never => {
  serverLog(`${name}: ${message}`);
  process.exit(code);
};
let settings;
try {
  const flags = Object.fromEntries(SETTINGS.filter((s) => s.flag).map((s) => [s.flag!, o[camel(s.flag!)]]));
  const printConfig = o[camel(PRINT_CONFIG_FLAG)] === true;
  // --print-config shows the defaults even when a required setting is missing (then it exits 2 naming it)
  const resolved = resolveSettings({ flags, env: process.env, configPath: o[camel(CONFIG_FLAG)] as string | undefined }, { allowMissing: printConfig });
  if (printConfig) {
    process.stdout.write(renderEffective(resolved));
    if (resolved.missing.length > 0) fail(2, `required, not set: ${resolved.missing.map((m) => m.key).join(", ")} (${resolved.missing[0]!.message})`);
    process.exit(0);
  }
  settings = toDaemonSettings(resolved);
} catch (err) {
  if (err instanceof SettingsError) fail(2, err.message);
  throw err;
}
runDaemon(settings).catch((err: unknown) => {
  const unavailable = err instanceof Error && (err as { code?: unknown }).code === "UNAVAILABLE";
  fail(unavailable ? 5 : 2, err instanceof Error ? err.message : String(err));
});
