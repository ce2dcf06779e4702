import { Counter, Gauge } from "prom-client";
import { registry } from "../../../core/index.js";

/** The client gateway's metrics (docs/operator-guide.md "Devices"). */
export const gatewayMetrics = {
  connections: new Gauge({ name: "qim_gateway_connections", help: "Device connections open on this node (authenticated or waiting for their AUTH frame)", registers: [registry] }),
  frames: new Counter({ name: "qim_gateway_frames_total", help: "Frames by direction (in: from devices, out: to devices) and type (the Frame oneof's name; unknown: a type this node does not know)", labelNames: ["direction", "type"] as const, registers: [registry] }),
  upgradesRefused: new Counter({ name: "qim_gateway_upgrades_refused_total", help: "WebSocket upgrades refused before a connection existed, by reason (no_token; auth_flood: the address failed too often; token_invalid, token_expired, token_revoked; error: the verifier failed, see the log)", labelNames: ["reason"] as const, registers: [registry] }),
  refused: new Counter({ name: "qim_gateway_requests_refused_total", help: "Requests refused before their handler for the connection's sake, by reason (in_flight: past GATEWAY_MAX_IN_FLIGHT; send_rate: past per_user_msg_rate; mark_read_rate, request_rate: past the connection's buckets)", labelNames: ["reason"] as const, registers: [registry] }),
  backPressure: new Counter({ name: "qim_gateway_back_pressure_total", help: "Connections past a push mark (soft: pushes stopped and a RESYNC sent; hard: closed with 4429)", labelNames: ["mark"] as const, registers: [registry] }),
  pushesHeld: new Counter({ name: "qim_gateway_pushes_held_total", help: "Pushes not written to a connection, by reason (lagging: past its soft mark until it pulls its list)", labelNames: ["reason"] as const, registers: [registry] }),
  closes: new Counter({ name: "qim_gateway_closes_total", help: "Connections the node closed, by close code (docs/gateway.md)", labelNames: ["code"] as const, registers: [registry] }),
};
