import type { Role } from "../../../pipeline/auth.js";
import type { AdminService, Rpc } from "../../../pipeline/rpc.js";
import { auditService } from "./audit-log.js";
import { clusterService } from "./cluster.js";
import { cmdService } from "./cmd.js";
import { connectionService } from "./connections.js";
import { conversationListService } from "./conversation-list.js";
import { dispatchService } from "./dispatch.js";
import { drillService } from "./drill.js";
import { groupService } from "./groups.js";
import { messageService } from "./messages.js";
import { observeService } from "./observe.js";
import { projectionService } from "./projection.js";
import { registryService } from "./registry.js";
import { retentionService } from "./retention.js";
import { roomService } from "./rooms.js";
import { tokenService } from "./tokens.js";

/**
 * The handler module of every service in the catalogue (admin-api/catalog.ts), one line each. The
 * server registers these, answers health for them and derives the role table from them; a test
 * holds this list against the catalogue and the protos.
 */
export const SERVICES: readonly AdminService[] = [
  groupService,
  messageService,
  auditService,
  projectionService,
  dispatchService,
  drillService,
  observeService,
  clusterService,
  conversationListService,
  cmdService,
  tokenService,
  connectionService,
  retentionService,
  registryService,
  roomService,
] as unknown as readonly AdminService[];

/** Which roles may call which RPC, by full method path, from each RPC's declaration (for tests and tools; the server reads each declaration). */
export const RPC_ROLES: Readonly<Record<string, readonly Role[]>> = Object.fromEntries(
  SERVICES.flatMap((svc) => Object.entries(svc.rpcs).map(([method, rpc]) => [svc.definition[method]!.path, rpc.roles])),
);

/** RPCs that change state: audited whatever their outcome. */
export const MUTATING: ReadonlySet<string> = new Set(
  SERVICES.flatMap((svc) => Object.entries(svc.rpcs).filter(([, rpc]) => rpc.mutates).map(([method]) => svc.definition[method]!.path)),
);

/**
 * Paths of the server streams declared `openEnded` (a watch, a follow: they end only when the client
 * cancels), for tools that call every RPC and must not wait for such a stream's end.
 */
export const OPEN_ENDED_STREAMS: ReadonlySet<string> = new Set(
  SERVICES.flatMap((svc) => Object.entries(svc.rpcs)
    .filter(([, rpc]) => { const r = rpc as Rpc; return r.kind === "serverStream" && r.openEnded; })
    .map(([method]) => svc.definition[method]!.path)),
);
