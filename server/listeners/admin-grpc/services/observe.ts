import { status } from "@grpc/grpc-js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { PROCESS_STARTED_AT_MS, watchIntervalMs } from "../../../observe.js";
import { ALL_ROLES, defineService, serverStream, unary } from "../../../pipeline/rpc.js";
import { packageVersion } from "../../../version.js";

/**
 * ObserveService: the dashboard's stream, read-only, every role (the drill role sees audit lines
 * without arguments). It streams until the client cancels, or until its certificate is on the
 * deny list (asked before each snapshot: refused PERMISSION_DENIED and audited like a revoked
 * call); a server shutting down ends it UNAVAILABLE (the client reconnects). GetServerInfo says
 * what the server runs (`qimctl version`), to every role.
 */
export const observeService = defineService(catalogEntry("qim.admin.v1.ObserveService"), {
  watch: serverStream({
    openEnded: true,
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps, admit, call }) {
      const end = await deps.observer.watch(call, watchIntervalMs(req), admit);
      return end === "shutdown" ? { error: { code: status.UNAVAILABLE, domainCode: "UNAVAILABLE", message: "the admin server is shutting down" } } : {};
    },
  }),
  getServerInfo: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(_req, { deps }) {
      return { response: { version: packageVersion(), nodeVersion: process.version, nodeId: deps.runtime.cluster?.nodeId ?? "", startedAtMs: PROCESS_STARTED_AT_MS } };
    },
  }),
});
