/**
 * What a listener is (issue 25): one door of the node process — admin gRPC, node RPC, the
 * application servers' HTTP API, metrics, next the client gateway — in a folder of its own under
 * server/listeners/<name>/, named once in server/listeners.ts. A listener owns
 *   - its settings (settings.ts, free of engine and gRPC imports: the CLI reads them for
 *     `server start --help`): its entries of the schema, their checks, their typed values, and the
 *     node options they give (reading its credentials);
 *   - its door (index.ts): bind it, open it, close it, with the calls going through the one
 *     pipeline (server/pipeline/).
 * server/node.ts opens the listeners in list order and stops them in the order docs/architecture.md
 * states ("The node process").
 */
import { InvalidArgumentError, parseHostPort, type EngineRuntime, type RedisStore } from "../core/index.js";
import type { AuditLog } from "./audit.js";
import type { BaseDaemonSettings } from "./daemon-settings.js";
import type { AdminServerOptions, TlsFiles } from "./node.js";
import type { Observer } from "./observe.js";
import type { Pipeline } from "./pipeline/pipeline.js";
import type { CmdAccess } from "./routing/cmd-router.js";
import type { ResolvedSettings } from "./settings/resolve.js";
import type { SettingDecl, SettingSection } from "./settings/schema.js";

/** Where a listener's settings sit in --help, --print-config and docs/config-reference.md. */
export interface ListenerSpecs {
  section: SettingSection;
  /** The key they follow in their section; null: first in it. */
  after: string | null;
  specs: readonly SettingDecl[];
}

/** What a listener's settings check may use (settings/resolve.ts checkCombinations gives it). */
export interface ListenerCheck {
  has(key: string): boolean;
  get<T>(key: string): T;
  /** Refuses the settings naming the key (exit 2, nothing started). */
  fail(key: string, message: string): never;
  insecureDev: boolean;
  /** insecure_dev_allow_non_loopback. */
  anyAddress: boolean;
  /** The host of an address setting (host:port), or null when it is off. */
  hostOf(key: string): string | null;
  isLoopback(host: string): boolean;
}

/** A listener's part of the settings: engine-free, read by the schema, the resolver and the daemon. */
export interface ListenerSettings<Typed extends object, Options extends object, Defaults extends Readonly<Record<string, string>> = Readonly<Record<string, string>>> {
  /** Its defaults that other modules show (DAEMON_DEFAULTS: the CLI's help, the dev stack). */
  defaults: Defaults;
  specs: readonly ListenerSpecs[];
  /** Combinations refused at start-up (after each value parsed). */
  check?(c: ListenerCheck): void;
  /** Its typed fields of DaemonSettings. */
  typed(r: ResolvedSettings): Typed;
  /** Its fields of the node options (reads its certificate files). */
  options(s: BaseDaemonSettings & Typed): Promise<Options>;
}

/** What every listener gets from the node before the engine runs. */
export interface BindContext {
  options: AdminServerOptions;
  insecureDev: boolean;
  log(line: string): void;
}

/** What every listener gets once the engine runs and the audit log is open. */
export interface OpenContext extends BindContext {
  runtime: EngineRuntime;
  store: RedisStore;
  audit: AuditLog;
  observer: Observer;
  pipeline: Pipeline;
  /** Whether a certificate (SHA-256 fingerprint) is on the deny list; absent without one. */
  revoked?: (fingerprint: string) => boolean;
  /** CMD sync at the owner of each user's slot (the node-rpc listener's router in a cluster, else this node). */
  cmd(): CmdAccess;
}

/** A listener bound before the runtime is built (its address is what the node registers). */
export interface Bound {
  /** The address peers reach it at: the node registry records it. */
  advertise?: string;
  /** Hands it the runtime before the runtime starts (the node takes no unit before). */
  attach(runtime: EngineRuntime): void;
  /** The CMD access it routes through, once attached (null: this node serves every user itself). */
  cmd?(): CmdAccess | null;
}

/** An open listener. */
export interface Opened<Handle = unknown> {
  /** A line of its own in the node's start-up log. */
  line?: string;
  /** Its part of the node's last start-up line ("qim admin server listening on A, B"). */
  summary?: string;
  /** What the listener gives the node (startAdminServer's result reads it). */
  handle: Handle;
  /** Stops taking calls and drains the ones in flight. */
  close(): Promise<void>;
}

/**
 * One listener. `bind` (optional) runs before the engine runtime is built: a listener bound there
 * stays open until the runtime has stopped (peers reach this node through it while its units are
 * handed over). Every other listener opens in `open`, after the runtime started, and closes before
 * the runtime stops.
 */
export interface Listener<Handle = unknown> {
  name: string;
  /** Whether the node options turn it on. */
  enabled(o: AdminServerOptions): boolean;
  bind?(ctx: BindContext): Promise<Bound & { opened: Opened<Handle> }>;
  open?(ctx: OpenContext): Promise<Opened<Handle>>;
}

export type { TlsFiles };

/** host:port of a listening socket; port 0 asks the OS for a free one. */
export function listenAddr(addr: string, field: string): { host: string; port: number } {
  const hp = parseHostPort(addr, { allowPortZero: true });
  if (!hp) throw new InvalidArgumentError(field, `${field} must be host:port, got "${addr}"`);
  return hp;
}
