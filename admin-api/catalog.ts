import type * as grpc from "@grpc/grpc-js";
import { AuditServiceClient, AuditServiceService } from "./gen/qim/admin/v1/audit.js";
import { ClusterServiceClient, ClusterServiceService } from "./gen/qim/admin/v1/cluster.js";
import { CmdServiceClient, CmdServiceService } from "./gen/qim/admin/v1/cmd.js";
import { ConnectionServiceClient, ConnectionServiceService } from "./gen/qim/admin/v1/connections.js";
import { RetentionServiceClient, RetentionServiceService } from "./gen/qim/admin/v1/retention.js";
import { RoomServiceClient, RoomServiceService } from "./gen/qim/admin/v1/rooms.js";
import { RegistryServiceClient, RegistryServiceService } from "./gen/qim/admin/v1/registry.js";
import { ConversationListServiceClient, ConversationListServiceService } from "./gen/qim/admin/v1/conversation_list.js";
import { DispatchServiceClient, DispatchServiceService } from "./gen/qim/admin/v1/dispatch.js";
import { DrillServiceClient, DrillServiceService } from "./gen/qim/admin/v1/drill.js";
import { GroupServiceClient, GroupServiceService } from "./gen/qim/admin/v1/groups.js";
import { MessageServiceClient, MessageServiceService } from "./gen/qim/admin/v1/messages.js";
import { ObserveServiceClient, ObserveServiceService } from "./gen/qim/admin/v1/observe.js";
import { ProjectionServiceClient, ProjectionServiceService } from "./gen/qim/admin/v1/projection.js";
import { TokenServiceClient, TokenServiceService } from "./gen/qim/admin/v1/tokens.js";

/**
 * Every service of the admin API, one line each: its full name, its generated definition and
 * client class, and the names its unary methods take in the flat typed client when two services
 * would otherwise share one. The server's registration, health names, reflection list and role
 * table, and the typed client, are all derived from this list and from the handler modules in
 * server/listeners/admin-grpc/services/. Nothing here imports the engine: the CLI loads it to build its client.
 */
export const SERVICE_CATALOG = [
  { name: "qim.admin.v1.GroupService", definition: GroupServiceService, client: GroupServiceClient, rename: {} },
  { name: "qim.admin.v1.MessageService", definition: MessageServiceService, client: MessageServiceClient, rename: {} },
  { name: "qim.admin.v1.AuditService", definition: AuditServiceService, client: AuditServiceClient, rename: {} },
  { name: "qim.admin.v1.ProjectionService", definition: ProjectionServiceService, client: ProjectionServiceClient, rename: { getStatus: "getProjectionStatus" } },
  { name: "qim.admin.v1.DispatchService", definition: DispatchServiceService, client: DispatchServiceClient, rename: { audit: "auditDispatch" } },
  { name: "qim.admin.v1.DrillService", definition: DrillServiceService, client: DrillServiceClient, rename: {} },
  { name: "qim.admin.v1.ObserveService", definition: ObserveServiceService, client: ObserveServiceClient, rename: {} },
  { name: "qim.admin.v1.ClusterService", definition: ClusterServiceService, client: ClusterServiceClient, rename: { drain: "drainNode", undrain: "undrainNode", getOwner: "getUnitOwner" } },
  { name: "qim.admin.v1.ConversationListService", definition: ConversationListServiceService, client: ConversationListServiceClient, rename: {} },
  { name: "qim.admin.v1.CmdService", definition: CmdServiceService, client: CmdServiceClient, rename: { send: "cmdSend", sync: "cmdSync", ack: "cmdAck", getPending: "getCmdPending", getState: "getCmdState", getOwner: "getCmdOwner", flush: "cmdFlush", getStatus: "getCmdStatus" } },
  { name: "qim.admin.v1.TokenService", definition: TokenServiceService, client: TokenServiceClient, rename: {} },
  { name: "qim.admin.v1.ConnectionService", definition: ConnectionServiceService, client: ConnectionServiceClient, rename: {} },
  { name: "qim.admin.v1.RetentionService", definition: RetentionServiceService, client: RetentionServiceClient, rename: {} },
  { name: "qim.admin.v1.RegistryService", definition: RegistryServiceService, client: RegistryServiceClient, rename: {} },
  { name: "qim.admin.v1.RoomService", definition: RoomServiceService, client: RoomServiceClient, rename: {} },
] as const satisfies readonly CatalogEntry[];

export interface CatalogEntry {
  name: string;
  definition: grpc.ServiceDefinition;
  client: new (address: string, credentials: grpc.ChannelCredentials, options?: Partial<grpc.ClientOptions>) => grpc.Client;
  rename: Readonly<Record<string, string>>;
}

export type ServiceName = (typeof SERVICE_CATALOG)[number]["name"];

/** A catalogue entry by its service name. */
export function catalogEntry<N extends ServiceName>(name: N): Extract<(typeof SERVICE_CATALOG)[number], { name: N }> {
  const entry = SERVICE_CATALOG.find((e) => e.name === name);
  if (!entry) throw new Error(`no service ${name} in the catalogue`);
  return entry as Extract<(typeof SERVICE_CATALOG)[number], { name: N }>;
}
