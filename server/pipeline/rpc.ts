import type * as grpc from "@grpc/grpc-js";
import type { EngineRuntime } from "../../core/index.js";
import type { AuditLog } from "../audit.js";
import { OPERATOR_ROLES, type Principal, type Role } from "./auth.js";
import type { MappedError } from "./errors.js";
import type { CmdAccess } from "../routing/cmd-router.js";
import type { Observer } from "../observe.js";

/**
 * How a service file declares its RPCs (after nice-grpc's middleware and etcd's one file per
 * service): each RPC names the roles that may call it and whether it mutates (mutations are
 * audited whatever their outcome, with fdatasync before the answer), next to its handler. The
 * server runs every RPC through one pipeline (server/pipeline/pipeline.ts: authenticate → authorise → validate →
 * handler → audit → error mapping); a handler only parses, calls core and maps the result.
 */

/** What handlers work with: the engine and the server's own parts. */
export interface ServerDeps {
  runtime: EngineRuntime;
  audit: AuditLog;
  observer: Observer;
  /** CMD sync at the owner of each user's slot (the node service's router in a cluster, else this node); throws without the CMD module. */
  cmd(): CmdAccess;
}

export interface CallContext {
  principal: Principal;
  deps: ServerDeps;
  /**
   * Asks again whether the caller may go on (a call that does not end by itself asks before each
   * answer it streams); throws when its certificate was revoked meanwhile.
   */
  admit(): void;
  /**
   * Fires when the caller went away or its deadline passed (pipeline.ts): a read that takes many
   * steps passes it down and stops at the next one; a mutation ignores it (it runs to its end).
   */
  signal: AbortSignal;
}

/** Every operator role (auth.ts OPERATOR_ROLES): reads open to all; never `node`, which only calls the node service. */
export const ALL_ROLES: readonly Role[] = OPERATOR_ROLES;
/** Mutations need operator or admin (DESIGN §3). */
export const MUTATE: readonly Role[] = ["admin", "operator"];

interface RpcBase {
  roles: readonly Role[];
  mutates: boolean;
}

export interface UnaryRpc<Req = never, Res = unknown> extends RpcBase {
  kind: "unary";
  handle(req: Req, ctx: CallContext): Promise<{ response: Res; detail?: string }>;
}

/** How a server stream ends: its last event (sent after the audit entry is written), or an error status. */
export type StreamEnd<Ev> = { last?: Ev; error?: MappedError; detail?: string };

export interface ServerStreamRpc<Req = never, Ev = unknown> extends RpcBase {
  kind: "serverStream";
  /**
   * true: an open-ended stream (server/pipeline/stream.ts): it does not end by itself (a watch, a
   * follow) — it runs until the client cancels or the server stops. Tools that call every RPC
   * (the fuzz and audit tests) read this instead of guessing from the name; false: it ends with
   * its last event (a drill's report).
   */
  openEnded: boolean;
  handle(req: Req, ctx: CallContext & { send(ev: Ev): void; call: grpc.ServerWritableStream<Req, Ev> }): Promise<StreamEnd<Ev>>;
}

export type Rpc = UnaryRpc<never, unknown> | ServerStreamRpc<never, unknown>;

export function unary<Req, Res>(decl: Omit<UnaryRpc<Req, Res>, "kind">): UnaryRpc<Req, Res> {
  return { kind: "unary", ...decl };
}

export function serverStream<Req, Ev>(decl: Omit<ServerStreamRpc<Req, Ev>, "kind">): ServerStreamRpc<Req, Ev> {
  return { kind: "serverStream", ...decl };
}

/** The request type of a generated method definition. */
type RequestOf<M> = M extends { requestDeserialize: (bytes: Buffer) => infer Req } ? Req : never;
type ResponseOf<M> = M extends { responseDeserialize: (bytes: Buffer) => infer Res } ? Res : never;

/** One RPC declaration per method of the service's generated definition, typed by it. */
export type RpcsOf<D extends grpc.ServiceDefinition> = {
  [K in keyof D]: D[K]["responseStream"] extends true ? ServerStreamRpc<RequestOf<D[K]>, ResponseOf<D[K]>> : UnaryRpc<RequestOf<D[K]>, ResponseOf<D[K]>>;
};

export interface AdminService<D extends grpc.ServiceDefinition = grpc.ServiceDefinition> {
  /** Full name, e.g. qim.admin.v1.GroupService (the catalogue's). */
  name: string;
  definition: D;
  rpcs: RpcsOf<D>;
}

export function defineService<D extends grpc.ServiceDefinition>(entry: { name: string; definition: D }, rpcs: RpcsOf<D>): AdminService<D> {
  return { name: entry.name, definition: entry.definition, rpcs };
}
