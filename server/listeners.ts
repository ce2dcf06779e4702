/**
 * THE list of the node's listeners (issue 25), in the order the node opens them (server/node.ts;
 * docs/architecture.md "The node process" states the stop order). Adding a listener is its folder
 * under server/listeners/ and one line here: its settings (engine-free, read by the schema, the
 * resolver and the daemon) and its door (loaded when the node starts, so that the CLI reading the
 * settings loads no server code).
 */
import type { Listener, ListenerSettings } from "./listener.js";
import { adminGrpcSettings } from "./listeners/admin-grpc/settings.js";
import { appHttpSettings } from "./listeners/app-http/settings.js";
import { gatewaySettings } from "./listeners/gateway/settings.js";
import { metricsSettings } from "./listeners/metrics/settings.js";
import { nodeRpcSettings } from "./listeners/node-rpc/settings.js";

export interface ListenerEntry<Typed extends object = object, Options extends object = object, Defaults extends Readonly<Record<string, string>> = Readonly<Record<string, string>>> {
  /** Its folder under server/listeners/. */
  name: string;
  settings: ListenerSettings<Typed, Options, Defaults>;
  load(): Promise<Listener>;
}

const entry = <T extends object, O extends object, D extends Readonly<Record<string, string>>>(e: ListenerEntry<T, O, D>) => e;

export const LISTENERS = [
  // bound before the runtime: the node registers the address it got
  entry({ name: "node-rpc", settings: nodeRpcSettings, load: async () => (await import("./listeners/node-rpc/index.js")).nodeRpcListener }),
  entry({ name: "admin-grpc", settings: adminGrpcSettings, load: async () => (await import("./listeners/admin-grpc/index.js")).adminGrpcListener }),
  entry({ name: "app-http", settings: appHttpSettings, load: async () => (await import("./listeners/app-http/index.js")).appHttpListener }),
  entry({ name: "gateway", settings: gatewaySettings, load: async () => (await import("./listeners/gateway/index.js")).gatewayListener }),
  entry({ name: "metrics", settings: metricsSettings, load: async () => (await import("./listeners/metrics/index.js")).metricsListener }),
] as const;

type Each = (typeof LISTENERS)[number]["settings"];
type Intersect<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** Every listener's typed settings fields, together (part of DaemonSettings). */
export type ListenerDaemonSettings = Intersect<Each extends ListenerSettings<infer T, object, Readonly<Record<string, string>>> ? T : never>;
/** Every listener's node options, together (part of AdminServerOptions). */
export type ListenerOptions = Intersect<Each extends ListenerSettings<object, infer O, Readonly<Record<string, string>>> ? O : never>;
/** Every listener's defaults, together (part of DAEMON_DEFAULTS). */
export const LISTENER_DEFAULTS = Object.assign({}, ...LISTENERS.map((l) => l.settings.defaults)) as Intersect<Each["defaults"]>;
