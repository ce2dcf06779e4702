// The client gateway listener's settings (engine-free: the CLI reads them for `server start --help`).
import { PER_USER_MSG_RATE, PER_USER_REACTION_RATE } from "../../../core/base/index.js";
import type { ListenerSettings } from "../../listener.js";

/** The client gateway: off unless asked for (devices' WebSocket door, docs/gateway.md). */
export const GATEWAY_DEFAULTS = { gatewayListen: "off" } as const;

export interface GatewaySettings {
  /** The WebSocket listener (null: off). */
  gatewayListen: string | null;
  /** per_user_msg_rate: SENDs per second of one user through this node's gateway. */
  userMsgRate: number;
  /** per_user_reaction_rate: REACTs per second of one user through this node's gateway. */
  userReactionRate: number;
}

export interface GatewayOptions {
  /**
   * The client gateway (server/listeners/gateway/, the gateway.listen setting): WebSocket over TLS
   * with the node's server certificate (devices carry no client certificate; they present a signed
   * device token at the upgrade), plain only on loopback with --insecure-dev.
   */
  gateway?: {
    listen: string;
    /** per_user_msg_rate (spec 003), SENDs/s of one user on this node; default PER_USER_MSG_RATE. */
    userMsgRate?: number;
    /** per_user_reaction_rate (spec 003 §4.1), REACTs/s of one user on this node; default PER_USER_REACTION_RATE. */
    userReactionRate?: number;
  };
}

export const gatewaySettings: ListenerSettings<GatewaySettings, GatewayOptions, typeof GATEWAY_DEFAULTS> = {
  defaults: GATEWAY_DEFAULTS,
  specs: [{
    section: "gateway", after: null,
    specs: [
      { key: "gateway.listen", kind: "address-or-off", default: GATEWAY_DEFAULTS.gatewayListen, description: "the client gateway (devices over WebSocket, binary protobuf frames of proto/qim/client/v1, docs/gateway.md) address host:port, over TLS with the server certificate; a device presents a signed device token at the upgrade (qimctl token issue); port 0: one the OS chooses; off: no gateway" },
      { key: "gateway.user_msg_rate", kind: "integer", min: 1, max: 1_000_000, default: PER_USER_MSG_RATE, description: "per_user_msg_rate (spec 003): SENDs per second one user may make through this node's gateway, all of the user's devices here together, with a burst of 2 seconds' worth; a SEND past it is answered RATE_LIMITED with retry_after_ms and nothing is written (docs/gateway.md, \"Flood limits\")" },
      { key: "gateway.user_reaction_rate", kind: "integer", min: 1, max: 1_000_000, default: PER_USER_REACTION_RATE, description: "per_user_reaction_rate (spec 003 §4.1): REACTs per second one user may make through this node's gateway, all of the user's devices here together, counted apart from gateway.user_msg_rate, with a burst of 2 seconds' worth; past it RATE_LIMITED with retry_after_ms, nothing written" },
    ],
  }],
  check(c) {
    const host = c.hostOf("gateway.listen");
    if (host !== null && !c.has("tokens.keys")) {
      c.fail("gateway.listen", "the client gateway needs device tokens: set tokens.keys to a key file (qimctl token keygen --keys FILE makes one)");
    }
    if (c.insecureDev && host !== null && !c.isLoopback(host) && !c.anyAddress) {
      c.fail("gateway.listen", `--insecure-dev makes the client gateway plain WebSocket, so it listens only on a loopback address, not ${host}; use TLS, or add --insecure-dev-allow-non-loopback`);
    }
  },
  typed: (r) => ({
    gatewayListen: (r.values.get("gateway.listen") as string | null | undefined) ?? null,
    userMsgRate: (r.values.get("gateway.user_msg_rate") as number | undefined) ?? PER_USER_MSG_RATE,
    userReactionRate: (r.values.get("gateway.user_reaction_rate") as number | undefined) ?? PER_USER_REACTION_RATE,
  }),
  options: async (s) => (s.gatewayListen !== null ? { gateway: { listen: s.gatewayListen, userMsgRate: s.userMsgRate, userReactionRate: s.userReactionRate } } : {}),
};
