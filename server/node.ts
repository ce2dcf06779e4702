/**
 * The node process (issue 25): the one composition root. startNode builds the store, the deny
 * list, the engine runtime and the audit log, and opens the listeners of server/listeners.ts in
 * list order; its close() stops them in the order docs/architecture.md states ("The node
 * process"): open-ended streams end, the listeners opened after the runtime close (each drains
 * the calls in flight, audited), the runtime stops (units handed over while peers still reach
 * this node), the listeners bound before the runtime close (node RPC), then the audit log and the
 * store. startAdminServer is its name for the tests and tools that start a server in process.
 */
import {
  EngineRuntime,
  InvalidArgumentError,
  ProjectionRefusedError,
  refusedVerdict,
  RedisStore,
  TokenKeyFile,
  type CassandraOptions,
  type CmdSyncOptions,
  type ClusterOptions,
  type ConversationOptions,
  type ConversationService,
  type ConversationStateAuthority,
  type DispatchIdentity,
  type TopologyConfig,
} from "../core/index.js";
import { failpointsArmed } from "../core/support/index.js";
import { SERVER_NODE_FLAGS, semiSpaceMiB } from "./node-flags.js";
import { AuditLog, type AuditRecord, type AuditRotation } from "./audit.js";
import { DenyList } from "./deny-list.js";
import { DIAGNOSTICS_ENV, startDiagnostics } from "./diagnostics.js";
import type { Bound, BindContext, Listener, OpenContext, Opened } from "./listener.js";
import type { NodeService } from "./listeners/node-rpc/service.js";
import type { CmdHttpServer } from "./listeners/app-http/cmd-http.js";
import { LISTENERS, type ListenerOptions } from "./listeners.js";
import { serverLog } from "./log.js";
import { Observer } from "./observe.js";
import { Pipeline } from "./pipeline/pipeline.js";
import { cmdBadFiles, publishCmdBadFile } from "./routing/cmd-bad.js";
import { cmdOf } from "./routing/cmd-local.js";
import { localCmdAccess, type CmdAccess } from "./routing/cmd-router.js";

export interface TlsFiles {
  caPem: string | Buffer;
  certPem: string | Buffer;
  keyPem: string | Buffer;
}

/** The node's options: its own, and each listener's (server/listeners/<name>/settings.ts: listen, metricsListen, node, sync). */
export type AdminServerOptions = NodeOptions & ListenerOptions;

export interface NodeOptions {
  topology: TopologyConfig;
  /** Required unless insecureDev. */
  tls?: TlsFiles;
  /** Plaintext, every caller an admin. Development only; the server says so loudly. */
  insecureDev?: boolean;
  auditPath: string;
  /** fdatasync the audit log before answering (default true). */
  auditSync?: boolean;
  /** Size-based rotation of the audit log (default none: one file that grows; the server process's settings rotate at 64 MiB). */
  auditRotation?: AuditRotation | null;
  engine?: ConversationOptions;
  dispatch?: DispatchIdentity;
  /**
   * The in-process outbox relay: commits of this server are relayed at once (kicked); a sweep of
   * every bucket every N ms picks up the rest (other processes, recovery). 0 turns it off.
   */
  relayIntervalMs?: number;
  /**
   * The conversation-set authority the session projection is rebuilt from. Default: a
   * CassandraAuthority from `cassandra` when given, else authorityFromEnv (Cassandra when
   * QIM_CASSANDRA_CONTACT_POINTS is set, else the Redis-hash development fallback). An authority
   * passed in is stopped with the server but not closed: its owner closes it.
   */
  authority?: ConversationStateAuthority;
  /** How long start-up waits for every Redis to answer (default 10 s); a refusal fails at once. */
  storeVerifyTimeoutMs?: number;
  /**
   * Called once every listener is open, right before the "listening on" line: the daemon installs
   * its signal handlers here, so that a SIGTERM sent by whoever waited for that line finds them
   * (installed after start-up returned, a signal in between took the default action: no graceful
   * stop). Before it, a signal ends a start-up at once, as it always has.
   */
  onListening?: () => void;
  /** Cassandra settings (the daemon's --cassandra-* flags); the server creates and closes that authority. */
  cassandra?: CassandraOptions;
  /**
   * The deny list of revoked client certificates (server/deny-list.ts): a file of SHA-256
   * fingerprints, polled every `denyListPollMs` (default 1000; 0: only on reloadDenyList(), which
   * the daemon calls on SIGHUP). A call from a listed certificate is refused PERMISSION_DENIED
   * "certificate revoked" and audited. A file that cannot be read or parsed at start-up is an error.
   */
  denyList?: string;
  denyListPollMs?: number;
  /**
   * The device tokens' key file (setting tokens.keys; docs/operator-guide.md "Device tokens"): a
   * JSON Web Key Set, newest key first, read at start-up (a bad file fails the start) and again when
   * it changes. Without it TokenService refuses FAILED_PRECONDITION and no device token verifies.
   */
  tokenKeys?: string;
  /** Dispatch-log retention in ms (default 1 day); 0 never trims. */
  retentionMs?: number;
  /** The background unread audit's step interval in ms (default UNREAD_AUDIT_INTERVAL_MS); 0: off. */
  unreadAuditIntervalMs?: number;
  /** The retention task's round interval in ms (default DEFAULT_RETENTION_INTERVAL_MS); 0: off (issue 26). */
  retentionIntervalMs?: number;
  /** room_msg_rate of this node's room writers (default ROOM_MSG_RATE, 20/s; burst one second's worth). */
  roomMsgRate?: number;
  /** The share of the node's time room writes may take (default ROOM_FLUSH_SHARE_PERCENT, 25). */
  roomFlushSharePercent?: number;
  /** How often the projection consumer polls every partition when idle (default 250 ms; appends kick it sooner). */
  projectionPollMs?: number;
  /**
   * Makes this server a node of the engine cluster (issue 11): its id, version and lease timing;
   * the address it registers is its node-rpc listener's when `node` is given (the bound port), else
   * `address` as given ("" for none).
   */
  cluster?: ClusterOptions;
  /** CMD sync's options (core/cmd-sync CmdSyncOptions): the daemon gives its data_dir for the pending file. */
  cmd?: CmdSyncOptions;
  /**
   * One line per notable event. A start-up refused by the session projection logs one line per
   * partition ("session projection: partition N VERDICT: detail") and a last line saying so.
   * Default: stderr, each line stamped with its UTC time (server/log.ts).
   */
  log?: (line: string) => void;
}

export interface AdminServer {
  /** The gRPC port actually bound. */
  port: number;
  metricsPort: number | null;
  /** The engine this server runs (conversations, dispatch log and relay, session projection). */
  runtime: EngineRuntime;
  conversations: ConversationService;
  audit: AuditLog;
  /** The session projection this server runs (consumer, registration task, drills). */
  projection: EngineRuntime["projection"];
  /** The dashboard's watchers (ObserveService.Watch); `active` counts the streams being served. */
  observer: Observer;
  /** This node's NodeService (null without one): its port, the address it registered, its router. */
  node: NodeService | null;
  /** The application servers' HTTP API (CMD sync; null without sync.listen): its port and https://host:port. */
  sync: CmdHttpServer | null;
  /** Reads the deny list file again (SIGHUP); the previous list stays when it is malformed. No-op without one. */
  reloadDenyList(reason?: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * How long a stop waits on Redis for its graceful steps (answers in flight, the units handed over,
 * the CMD buffer's last flush, leaving the node registry) before it asks whether Redis still
 * answers: a lease TTL's worth. When it does not (a PING within STOP_REDIS_PROBE_MS), every Redis
 * connection is dropped (RedisStore.disconnect), so each wait still open fails at once and the
 * stop goes on: the units expire by their TTL instead, and the CMD buffer is kept in its file.
 * With a Redis that answers nothing (stopped, or busy with a long script) each step would
 * otherwise wait out its command timeout in turn: more than 15 s in issue 22, 22 s measured. A
 * Redis that answers is waited for (a stop that is slow, not stuck), checked again each grace.
 */
export const STOP_REDIS_GRACE_MS = 5000;
/** How long the stop's PING may take to count as Redis answering (a loaded loopback Redis answers in milliseconds). */
export const STOP_REDIS_PROBE_MS = 1000;

export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer> {
  return startNode(opts);
}

/** An open listener of the list, by its folder name. */
interface Running { name: string; opened: Opened; bound: boolean }

export async function startNode(opts: AdminServerOptions): Promise<AdminServer> {
  const log = opts.log ?? serverLog;
  if (!opts.insecureDev && !opts.tls) throw new InvalidArgumentError("tls", "TLS material is required (CA, server certificate and key) unless --insecure-dev");
  const insecure = opts.insecureDev === true;
  if (insecure) {
    log("WARNING: --insecure-dev: plaintext gRPC, no client certificates, every caller is an admin. Never use this outside a development machine.");
  }
  if (insecure && opts.denyList) throw new InvalidArgumentError("denyList", "a deny list needs mTLS: --insecure-dev has no client certificates to refuse");
  if (semiSpaceMiB() === null) {
    log(`note: node runs with V8's default young generation; start the server with node ${SERVER_NODE_FLAGS.join(" ")} (bin/qim-node.js does) for less CPU per request (docs/operator-guide.md, "The server's node flags")`);
  }
  const armed = failpointsArmed();
  if (armed.length > 0) log(`WARNING: QIM_FAILPOINTS arms fail point(s) ${armed.join(", ")}: this process kills itself there (fault-injection tests only)`);

  // one line per distinct error every 10 s: a Redis (or Cassandra) outage is visible, not a flood
  const lastError = new Map<string, number>();
  const throttled = (line: string) => {
    const now = Date.now();
    if ((lastError.get(line) ?? 0) + 10_000 > now) return;
    lastError.set(line, now);
    log(line);
  };
  const store = new RedisStore(opts.topology, {
    commandTimeoutMs: 5000,
    connectTimeoutMs: 3000,
    // until start-up has verified the store, its one error line is verify()'s, not a log of each attempt
    onError: (err) => { if (storeVerified) throttled(/^Redis /.test(err.message) ? err.message : `redis: ${err.message}`); },
  });
  let storeVerified = false;

  // What start-up opened, closed in reverse order should a later step fail: a server that does not
  // start leaves no connection, timer or listener behind.
  const opened: { what: string; close: () => Promise<void> }[] = [{ what: "store", close: () => store.close() }];
  const undo = async () => {
    for (const o of opened.reverse()) await o.close().catch((err: unknown) => log(`start-up cleanup of the ${o.what} failed: ${String(err)}`));
  };

  const listeners: { name: string; listener: Listener }[] = [];
  for (const entry of LISTENERS) listeners.push({ name: entry.name, listener: await entry.load() });
  const on = listeners.filter((l) => l.listener.enabled(opts));
  const running: Running[] = [];
  const bindContext: BindContext = { options: opts, insecureDev: insecure, log };

  let runtime: EngineRuntime;
  let audit: AuditLog;
  let denyList: DenyList | undefined;
  const bound: Bound[] = [];
  try {
    if (opts.denyList) {
      denyList = await DenyList.open(opts.denyList, { log, ...(opts.denyListPollMs !== undefined ? { pollMs: opts.denyListPollMs } : {}) });
      const list = denyList;
      opened.push({ what: "deny list", close: () => list.close() });
    }
    // one clear line, before anything else touches the store, when Redis is away or refuses the
    // credentials or the TLS handshake (then without waiting out the timeout)
    await store.verify(opts.storeVerifyTimeoutMs ?? 10_000);
    storeVerified = true;
    // the listeners that bind before the runtime (node RPC): the node registers the address it got
    for (const { name, listener } of on) {
      if (!listener.bind) continue;
      const b = await listener.bind(bindContext);
      bound.push(b);
      running.push({ name, opened: b.opened, bound: true });
      opened.push({ what: name, close: () => b.opened.close() });
    }
    const advertise = bound.find((b) => b.advertise !== undefined)?.advertise;
    const tokenKeys = opts.tokenKeys ? await TokenKeyFile.open(opts.tokenKeys, { log }) : undefined;
    if (tokenKeys) log(`device tokens: keys ${(await tokenKeys.current()).kids.join(", ")} from ${opts.tokenKeys}`);
    runtime = new EngineRuntime({
      store,
      ...(opts.engine?.keyPrefix !== undefined ? { keyPrefix: opts.engine.keyPrefix } : {}),
      ...(opts.engine ? { conversation: opts.engine } : {}),
      ...(opts.dispatch ? { dispatch: opts.dispatch } : {}),
      ...(opts.authority ? { authority: opts.authority } : {}),
      ...(opts.cassandra ? { cassandra: opts.cassandra } : {}),
      // the runtime's defaults (retention, relay interval) stand unless the options name them
      projection: {
        ...(opts.retentionMs !== undefined ? { retentionMs: opts.retentionMs } : {}),
        ...(opts.projectionPollMs !== undefined ? { projector: { pollIntervalMs: opts.projectionPollMs } } : {}),
        onError: (err) => throttled(`session projection: ${err instanceof Error ? err.message : String(err)}`),
      },
      relay: { onError: (err) => log(`relay: ${(err as Error).message}`) },
      unreadAudit: {
        ...(opts.unreadAuditIntervalMs !== undefined ? { intervalMs: opts.unreadAuditIntervalMs } : {}),
        onError: (err) => throttled(`unread audit: ${err instanceof Error ? err.message : String(err)}`),
      },
      retention: {
        ...(opts.retentionIntervalMs !== undefined ? { intervalMs: opts.retentionIntervalMs } : {}),
        onError: (err) => throttled(`retention: ${err instanceof Error ? err.message : String(err)}`),
      },
      ...(opts.relayIntervalMs !== undefined ? { relayIntervalMs: opts.relayIntervalMs } : {}),
      rooms: {
        ...(opts.roomMsgRate !== undefined ? { rate: opts.roomMsgRate, burst: opts.roomMsgRate } : {}),
        ...(opts.roomFlushSharePercent !== undefined ? { flushSharePercent: opts.roomFlushSharePercent } : {}),
      },
      ...(opts.cluster ? { cluster: { ...opts.cluster, address: advertise ?? opts.cluster.address } } : {}),
      ...(opts.cmd ? { cmd: opts.cmd } : {}),
      ...(tokenKeys ? { tokens: { source: tokenKeys } } : {}),
      log,
    });
    // the bound listeners' handlers (node RPC: and the relay's kick forwarder), before the node takes its first units
    for (const b of bound) b.attach(runtime);
    log(`conversation-set authority: ${runtime.projection.authority.describe()}`);
    const engineRuntime = runtime;
    opened.push({ what: "engine", close: () => engineRuntime.stop() });

    // Fail closed: the projection's start-up audit records the log's identity on first use and
    // refuses a log that is not ours (naming every partition) or that lost acknowledged records
    // (BEYOND_HIGH); either way the runtime does not start, so the relay never appends to it.
    const report = await runtime.start();
    if (report.epochBumped) log(`session projection: started at epoch ${report.epoch} after a loss (see above)`);
    const bad = await publishCmdBadFile(runtime);
    if (bad) log(`WARNING: the CMD pending file did not decode and was renamed ${bad}: its updates were not restored (the owners' catch-up scan re-derives them); qimctl cluster nodes shows it`);
    audit = await AuditLog.open(opts.auditPath, { sync: opts.auditSync ?? true, rotation: opts.auditRotation ?? null, log });
    const auditLog = audit;
    opened.push({ what: "audit log", close: () => auditLog.close() });
  } catch (err) {
    if (err instanceof ProjectionRefusedError) {
      const refused = err.audits.filter(refusedVerdict);
      log(`qim admin server NOT started: the session projection refuses ${refused.map((a) => `partition ${a.partition} (${a.verdict})`).join(", ")}; nothing was changed. See docs/operator-guide.md "Start-up refused".`);
    }
    await undo();
    throw err;
  }
  const projection = runtime.projection;

  const cluster = runtime.cluster;
  const observer = new Observer(projection, audit, cluster ? () => cluster.nodes() : undefined, () => cmdBadFiles(runtime), () => runtime.delivery.registry.counts());
  const routed = bound.find((b) => b.cmd);
  const cmdAccess = (): CmdAccess => routed?.cmd?.() ?? localCmdAccess(cmdOf(runtime), runtime.cluster?.nodeId ?? "");
  const writeAudit = async (rec: Omit<AuditRecord, "time">) => audit.append({ time: new Date().toISOString(), ...rec });
  const revoked = denyList ? (fingerprint: string) => denyList!.has(fingerprint) : undefined;
  const openContext: OpenContext = {
    ...bindContext, runtime, store, audit, observer, cmd: cmdAccess,
    pipeline: new Pipeline({ audit: writeAudit, ...(revoked ? { revoked } : {}), log }),
    ...(revoked ? { revoked } : {}),
  };
  try {
    for (const { name, listener } of on) {
      if (!listener.open) continue;
      const o = await listener.open(openContext);
      running.push({ name, opened: o, bound: false });
      opened.push({ what: name, close: () => o.close() });
    }
  } catch (err) {
    await undo();
    throw err;
  }

  const diagnostics = process.env[DIAGNOSTICS_ENV] === "1" ? await startDiagnostics(audit, log) : undefined;

  for (const r of running) if (r.opened.line) log(r.opened.line);
  if (!running.some((r) => r.name === "node-rpc") && runtime.cluster) log(`node ${runtime.cluster.nodeId}: no node service (no node certificate): commits on buckets other nodes own wait for their owner's sweep`);
  opts.onListening?.();
  log(`qim admin server listening on ${running.filter((r) => r.opened.summary).map((r) => r.opened.summary).join(", ")}`);

  const handle = <H>(name: string) => running.find((r) => r.name === name)?.opened.handle as H | undefined;
  return {
    port: handle<{ port: number }>("admin-grpc")!.port,
    metricsPort: handle<{ port: number }>("metrics")?.port ?? null,
    runtime,
    conversations: runtime.conversations,
    audit,
    projection,
    observer,
    node: handle<NodeService>("node-rpc") ?? null,
    sync: handle<CmdHttpServer>("app-http") ?? null,
    reloadDenyList: (reason = "reload requested") => denyList ? denyList.reload(reason) : Promise.resolve(),
    async close() {
      let cut: NodeJS.Timeout | undefined;
      let waited = 0;
      const watch = () => {
        cut = setTimeout(() => {
          waited += STOP_REDIS_GRACE_MS;
          void store.answers(STOP_REDIS_PROBE_MS).then((answers) => {
            if (cut === undefined) return; // the stop finished meanwhile
            if (answers) { watch(); return; }
            log(`stop: Redis did not let the stop finish within ${waited} ms and does not answer: dropping its connections (units expire by their lease TTL)`);
            store.disconnect();
          });
        }, STOP_REDIS_GRACE_MS);
        cut.unref();
      };
      watch();
      diagnostics?.stop();
      // 1. the calls that never end by themselves end now (UNAVAILABLE "shutting down"): Watch, FollowAudit, WatchUser
      observer.close();
      audit.stopFollowers();
      runtime.sessionView.closeWatchers();
      await denyList?.close();
      // 2. the listeners opened after the runtime, last opened first: each stops taking calls and
      //    drains those in flight (their audit records written)
      for (const r of [...running].reverse()) if (!r.bound) await r.opened.close();
      // 3. the units are handed over (runtime.stop) while peers can still reach us
      await runtime.stop();
      // 4. the listeners bound before the runtime (node RPC)
      for (const r of [...running].reverse()) if (r.bound) await r.opened.close();
      // 5. the audit log, then the store
      await audit.close();
      clearTimeout(cut);
      cut = undefined;
      await store.close();
    },
  };
}
