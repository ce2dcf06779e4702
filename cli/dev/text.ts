/**
 * Table-mode text of `dev up|status|down` and `demo`: short summaries for people. Paths inside the
 * working directory are shown relative to it (as typed), others absolute.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { keyValues } from "../format.js";
import { authorityLine, type DevDownResult, type DevRedisAccess, type DevRestartResult, type DevStatusResult, type DevUpResult } from "./stack.js";

/** A path as a person would type it from here. */
export function shown(file: string, cwd = process.cwd()): string {
  const rel = path.relative(cwd, file);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : file;
}

/** The `--data-dir` argument that reaches this data dir (nothing when it is the default). */
export function dataDirArg(dataDir: string, defaultDir: string): string {
  return path.resolve(defaultDir) === dataDir ? "" : ` --data-dir ${quote(shown(dataDir))}`;
}

const quote = (s: string) => (/^[\w./:@=+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * What dev up started or reused. `nextSteps: false` leaves out the closing "Try:" commands and
 * how to stop the stack (the demo runs its own scenario and says how to stop it at the end).
 */
export function upLines(r: DevUpResult, defaultDir: string, opts: { nextSteps?: boolean } = {}): string {
  const dd = dataDirArg(r.dataDir, defaultDir);
  const ctxFlag = contextFlag(r);
  const lines = [
    r.status === "reused" ? `Dev stack already running in ${shown(r.dataDir)}: reused` : `Dev stack started in ${shown(r.dataDir)}`,
    keyValues([
      ["endpoint", `${r.endpoint} (mTLS; client certificate ${shown(r.pki.cert)}, CN=dev-admin, role admin)`],
      ["tenant", r.tenant],
      ["redis", `${r.redis.addr}, pid ${r.redis.pid} (Redis ${r.redis.version}, AOF appendfsync always, data ${shown(r.redis.dataDir)}, log ${shown(r.redis.log)})`],
      // a plaintext Redis adds no line: the text stays as it was before --secure-redis
      ...(r.redisAccess.secure ? [["redis access", secureLine(r.redisAccess)] as const] : []),
      ["server", `pid ${r.server.pid}, log ${shown(r.server.log)}, audit log ${shown(r.server.auditLog)}, metrics ${r.server.metricsUrl}`],
      // one node adds no line: the text stays as it was before --nodes
      ...(r.nodes.length > 1 ? r.nodes.map((n) => [`node ${n.nodeId}`, `pid ${n.pid}, admin localhost:${n.port}, log ${shown(n.log)}, metrics ${n.metricsUrl}${n.syncUrl ? `, cmd sync ${n.syncUrl}` : ""}${n.gatewayUrl ? `, gateway ${n.gatewayUrl}` : ""}${n.units && n.units.length < 3 ? `, units ${n.units.join(",")}` : ""}`] as const) : []),
      ...(r.syncUrl && r.service ? [["cmd sync http", `${r.syncUrl}/message/sync (service certificate ${shown(r.service.cert)}, CN=dev-app, role service)`] as const] : []),
      ...(r.gatewayUrl ? [["client gateway", `${r.gatewayUrl} (devices: a token from qimctl token issue; keys ${shown(path.join(r.dataDir, "token-keys.json"))})`] as const] : []),
      ["context", contextLine(r)],
    ]).replace(/^/gm, "  "),
    `  ${authorityLine(r)}`,
  ];
  for (const n of r.notes) lines.push(`  note: ${n}`);
  if (r.namedContext.note) lines.push(`  note: ${r.namedContext.note}`);
  if (!r.namedContext.written) {
    lines.push(`  Use this stack with --context ${quote(shown(r.context))}, or: export QIMCTL_CONTEXT=${quote(r.context)}`);
  } else if (r.namedContext.current !== r.namedContext.name) {
    lines.push(`  Use this stack with --context ${r.namedContext.name}, or make it the current context: qimctl context use ${r.namedContext.name}`);
  }
  if (opts.nextSteps === false) return lines.join("\n");
  const owner = randomUUID();
  lines.push(
    "Try:",
    `  qimctl group create --owner ${owner} --member ${randomUUID()}${ctxFlag}`,
    `  qimctl membership list --group <group from above>${ctxFlag}`,
    `  qimctl sessions --user ${owner}${ctxFlag}`,
    `  qimctl projection status${ctxFlag}`,
    ...(r.gatewayUrl ? [`  qimctl client --as ${owner} --device phone${ctxFlag}   (a device, live: every frame as it arrives)`] : []),
    `  qimctl dev status${dd}`,
    `Stop it with: qimctl dev down${dd}   (keeps data and PKI; --purge removes them)`,
  );
  return lines.join("\n");
}

/** What a command needs to reach this stack: nothing when its context is current, else --context. */
function contextFlag(r: DevUpResult): string {
  const c = r.namedContext;
  if (!c.written) return ` --context ${quote(shown(r.context))}`;
  return c.current === c.name ? "" : ` --context ${c.name}`;
}

function contextLine(r: DevUpResult): string {
  const c = r.namedContext;
  if (!c.written) return `${shown(r.context)}; the context "${c.name}" of ${c.config} was not changed`;
  const current = c.current === c.name ? "the current context" : `not current (the current context is ${c.current})`;
  return `"${c.name}" in ${c.config}, ${current}; also ${shown(r.context)}`;
}

const yesNo = (b: boolean) => (b ? "yes" : "no");

/** A secure Redis in one phrase: how to reach it, where its password is (never the password). */
function secureLine(a: DevRedisAccess): string {
  return `secure: TLS only on port ${a.tlsPort} (CA ${shown(a.ca ?? "")}), ACL user ${a.user}, password in ${shown(a.passwordFile ?? "")}, default user off`;
}

export function statusLines(r: DevStatusResult, defaultDir: string): string {
  const dd = dataDirArg(r.dataDir, defaultDir);
  if (!r.redis || !r.server) {
    const head = `Dev stack in ${shown(r.dataDir)}: down (no state file)`;
    return r.strays.length > 0
      ? `${head}, but processes of it are running: ${r.strays.join(", ")}; stop them with: qimctl dev down${dd}`
      : `${head}. Start it with: qimctl dev up${dd}`;
  }
  const lines = [
    `Dev stack in ${shown(r.dataDir)}: ${r.state}`,
    keyValues([
      ["endpoint", r.endpoint],
      ["tenant", r.tenant],
      ["authority", r.authority],
      ["started at", r.startedAt],
      ["context", r.context ? shown(r.context) : null],
      ...(r.syncUrl ? [["cmd sync http", r.syncUrl] as const] : []),
      ...(r.gatewayUrl ? [["client gateway", r.gatewayUrl] as const] : []),
      // a plaintext Redis adds no line: the text stays as it was before --secure-redis
      ...(r.redisAccess?.secure ? [["redis access", secureLine(r.redisAccess)] as const] : []),
    ]).replace(/^/gm, "  "),
    "",
    // with several nodes, a column names each node's CMD sync HTTP API (one node: the line above)
    `  PROCESS  PID      PORT   ALIVE  ANSWERING${r.nodes.length > 1 ? "  CMD SYNC" : ""}`,
    ...[...(r.nodes.length > 1 ? r.nodes.map((n) => [n.nodeId, n] as const) : [["server", r.server] as const]), ["redis", r.redis] as const].map(([name, x]) => {
      const pr = x as NonNullable<DevStatusResult["redis"]> & { syncUrl?: string | null };
      const row = `  ${String(name).padEnd(7)}  ${String(pr.pid).padEnd(7)}  ${String(pr.port).padEnd(5)}  ${yesNo(pr.alive).padEnd(5)}  ${yesNo(pr.answering)}`;
      return r.nodes.length > 1 && pr.syncUrl !== undefined ? `${row.padEnd(46)}  ${pr.syncUrl ?? "-"}` : row;
    }),
  ];
  if (r.strays.length > 0) lines.push(`  other processes of this data dir: ${r.strays.join(", ")}`);
  if (r.state !== "up") lines.push(`Restart it with: qimctl dev up${dd}   (cleans up what is left)`);
  return lines.join("\n");
}

export function downLines(r: DevDownResult): string {
  if (r.dryRun) return downPlanLines(r);
  if (r.stopped.length === 0 || !r.wasRunning) {
    const lines = [`Nothing running for the dev stack in ${shown(r.dataDir)}${r.stateRemoved ? " (stale state removed)" : ""}.`];
    for (const s of r.stopped.filter((x) => x.how === "not ours")) lines.push(`  ${s.process} pid ${s.pid} now belongs to another program: not touched`);
    if (r.contextsRemoved.length > 0) lines.push(`  removed the contexts that pointed at it: ${r.contextsRemoved.join(", ")}`);
    if (r.purged) lines.push(`  purged: removed ${r.removed.length} file(s) and dir(s) the stack wrote${r.removed.length > 0 ? `: ${r.removed.map((f) => shown(f)).join(", ")}` : ""}`);
    return lines.join("\n");
  }
  const lines = [`Dev stack in ${shown(r.dataDir)} stopped.`];
  for (const s of r.stopped) {
    const how = s.how === "SIGTERM" ? "stopped (SIGTERM)" : s.how === "SIGKILL" ? "killed (SIGKILL after the grace period)" : s.how === "not ours" ? "now belongs to another program: not touched" : "was not running";
    lines.push(`  ${s.process.padEnd(6)} pid ${s.pid}: ${how}`);
  }
  if (r.contextsRemoved.length > 0) lines.push(`  removed the contexts that pointed at it: ${r.contextsRemoved.join(", ")}`);
  lines.push(r.purged ? `  purged: removed ${r.removed.length} file(s) and dir(s) the stack wrote: ${r.removed.map((f) => shown(f)).join(", ")}` : `  kept: Redis data, PKI, logs and ${shown(path.join(r.dataDir, "context.json"))} (--purge removes them)`);
  return lines.join("\n");
}

/** dev down --dry-run: what it would stop and remove; nothing was changed. */
function downPlanLines(r: DevDownResult): string {
  const stops = r.stopped.filter((x) => x.how === "would stop");
  const lines = [`Dry run for the dev stack in ${shown(r.dataDir)}: nothing stopped or removed.`];
  lines.push(stops.length > 0 ? `  would stop: ${stops.map((x) => `${x.process} pid ${x.pid}`).join(", ")}` : "  would stop: nothing (nothing running)");
  for (const x of r.stopped.filter((y) => y.how === "not ours")) lines.push(`  ${x.process} pid ${x.pid} now belongs to another program: would not be touched`);
  if (r.contextsRemoved.length > 0) lines.push(`  would remove the contexts: ${r.contextsRemoved.join(", ")}`);
  if (r.removed.length > 0) lines.push("  would remove:", ...r.removed.map((f) => `    ${shown(f)}`), `  then ${shown(r.dataDir)} itself if nothing else is left in it`);
  return lines.join("\n");
}

/** dev restart: each node restarted, its old and new pid. */
export function restartLines(r: DevRestartResult): string {
  const how = (x: DevRestartResult["restarted"][number]) =>
    x.stopped === "SIGTERM" ? "stopped (SIGTERM)" : x.stopped === "SIGKILL" ? "killed (SIGKILL after the grace period)" : x.stopped === "not ours" ? "its pid belongs to another program now (not touched)" : "was not running";
  return [
    `Dev stack in ${shown(r.dataDir)}: restarted ${r.restarted.map((x) => x.nodeId).join(", ")}`,
    ...r.restarted.map((x) => `  ${x.nodeId}: pid ${x.previousPid} ${how(x)}; now pid ${x.pid}, answering on localhost:${x.port}`),
  ].join("\n");
}
