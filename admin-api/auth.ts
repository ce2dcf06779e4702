import type { ServerUnaryCall } from "@grpc/grpc-js";
import type { PeerCertificate } from "node:tls";

/** What the principal is read from: any server call (grpc-js does not export the type by name). */
export type CallWithAuth = { getAuthContext: ServerUnaryCall<unknown, unknown>["getAuthContext"] };

export const ROLES = ["admin", "operator", "viewer", "drill"] as const;
export type Role = (typeof ROLES)[number];

export interface Principal {
  name: string;
  role: Role | null;
  /** SHA-256 fingerprint of the client certificate ("" in --insecure-dev). */
  fingerprint: string;
}

const ALL: readonly Role[] = ROLES;
const MUTATE: readonly Role[] = ["admin", "operator"];
const DRILL: readonly Role[] = ["admin", "drill"];

/**
 * Which roles may call which RPC (DESIGN §3): mutations need operator or admin; viewer reads;
 * drill reads, may send messages as a user (drills, demos) and run the rebuild drill (CI; it
 * wipes and rebuilds projection state, so it is audited like a mutation, but it may not bump the
 * epoch or rebuild a user on demand). An RPC missing here is refused.
 */
export const RPC_ROLES: Readonly<Record<string, readonly Role[]>> = {
  "/qim.admin.v1.GroupService/CreateGroup": MUTATE,
  "/qim.admin.v1.GroupService/GetGroup": ALL,
  "/qim.admin.v1.GroupService/AddMembers": MUTATE,
  "/qim.admin.v1.GroupService/RemoveMembers": MUTATE,
  "/qim.admin.v1.GroupService/ListMembers": ALL,
  "/qim.admin.v1.MessageService/SendMessage": ["admin", "drill"],
  "/qim.admin.v1.MessageService/ReadHistory": ALL,
  "/qim.admin.v1.MessageService/ListConversationSummaries": ALL,
  "/qim.admin.v1.AuditService/TailAudit": ["admin", "operator", "viewer"],
  "/qim.admin.v1.ProjectionService/GetEpoch": ALL,
  "/qim.admin.v1.ProjectionService/GetStatus": ALL,
  "/qim.admin.v1.ProjectionService/BumpEpoch": MUTATE,
  "/qim.admin.v1.ProjectionService/RebuildUser": MUTATE,
  "/qim.admin.v1.DispatchService/Audit": ALL,
  "/qim.admin.v1.DrillService/RunRebuildDrill": DRILL,
  // the dashboard's stream: read-only, every role (the drill role sees audit lines without arguments)
  "/qim.admin.v1.ObserveService/Watch": ALL,
};

/** RPCs that change state: audited whatever their outcome. */
export const MUTATING = new Set([
  "/qim.admin.v1.GroupService/CreateGroup",
  "/qim.admin.v1.GroupService/AddMembers",
  "/qim.admin.v1.GroupService/RemoveMembers",
  "/qim.admin.v1.MessageService/SendMessage",
  "/qim.admin.v1.ProjectionService/BumpEpoch",
  "/qim.admin.v1.ProjectionService/RebuildUser",
  "/qim.admin.v1.DrillService/RunRebuildDrill",
]);

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

export function allowed(rpc: string, p: Principal): boolean {
  return p.role !== null && (RPC_ROLES[rpc] ?? []).includes(p.role);
}
