import type { ServerUnaryCall } from "@grpc/grpc-js";
import type { PeerCertificate } from "node:tls";

/** What the principal is read from: any server call (grpc-js does not export the type by name). */
export type CallWithAuth = { getAuthContext: ServerUnaryCall<unknown, unknown>["getAuthContext"] };

/**
 * The roles a certificate's OU may name. `node` is an engine server calling another node's
 * NodeService (server/listeners/node-rpc/): no admin RPC declares it, and the node service admits nothing else.
 * `service` is an application server calling the CMD sync HTTP API (/message/sync, /message/syncack,
 * server/listeners/app-http/): no admin RPC declares it either, and that API admits nothing else.
 */
export const ROLES = ["admin", "operator", "viewer", "drill", "node", "service"] as const;
/**
 * The role of a device's principal on the client gateway (a signed device token, not a
 * certificate: principalOf never gives it, whatever a certificate's OU says).
 */
export const DEVICE_ROLE = "device";
export type Role = (typeof ROLES)[number] | typeof DEVICE_ROLE;

/** The roles of people and tools that call the admin API: every role but `node` and `service`. */
export const OPERATOR_ROLES = ["admin", "operator", "viewer", "drill"] as const satisfies readonly Role[];

/** The one role the node service admits (node-to-node RPC). */
export const NODE_ROLE = "node" as const satisfies Role;

/** The one role the CMD sync HTTP API admits (application servers, spec 001 /message/sync). */
export const SERVICE_ROLE = "service" as const satisfies Role;

export interface Principal {
  name: string;
  role: Role | null;
  /** SHA-256 fingerprint of the client certificate ("" in --insecure-dev). */
  fingerprint: string;
}

const INSECURE: Principal = { name: "insecure-dev", role: "admin", fingerprint: "" };

function firstValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The principal of a call: the verified client certificate's subject CN (the name) and OU (the
 * role). TLS already refused certificates that do not chain to our CA or are out of validity.
 * `known` is the connection's certificate when the server already read it at the handshake.
 */
export function principalOf(call: CallWithAuth, insecureDev: boolean, known?: PeerCertificate): Principal | null {
  if (insecureDev) return INSECURE;
  const cert = known ?? call.getAuthContext()?.sslPeerCertificate;
  if (!cert || !cert.subject) return null;
  const name = firstValue(cert.subject.CN) ?? "";
  const ou = firstValue(cert.subject.OU);
  const role = (ROLES as readonly string[]).includes(ou ?? "") ? (ou as Role) : null;
  return { name, role, fingerprint: cert.fingerprint256 ?? "" };
}

/** Whether the principal's role is among the roles an RPC declares (server/listeners/admin-grpc/services/). */
export function allowed(roles: readonly Role[], p: Principal): boolean {
  return p.role !== null && roles.includes(p.role);
}
