import * as grpc from "@grpc/grpc-js";
import { SERVICE_CATALOG } from "./catalog.js";
import type { AuditServiceClient, FollowAuditRequest } from "./gen/qim/admin/v1/audit.js";
import type { ConversationListServiceClient, WatchUserEvent, WatchUserRequest } from "./gen/qim/admin/v1/conversation_list.js";
import type {
  AuditUnreadRequest, AuditUnreadResponse, Badge, ChangeConversationRequest, ChangeConversationResponse, GetBadgeRequest, ListConversationsRequest, ListConversationsResponse,
  ListEntry, ListRow, ReconcileBadgeRequest, ReconcileBadgeResponse, UnreadDrift,
} from "./gen/qim/admin/v1/conversation_list.js";
export { ConversationAction } from "./gen/qim/admin/v1/conversation_list.js";
import type { DrillServiceClient } from "./gen/qim/admin/v1/drill.js";
import type { ObserveServiceClient, ServerInfo } from "./gen/qim/admin/v1/observe.js";
export type { ServerInfo };

import type { AuditEntry, TailAuditRequest, TailAuditResponse } from "./gen/qim/admin/v1/audit.js";
import type { HistoryRecord, Member, MembershipEvent } from "./gen/qim/admin/v1/common.js";
import type {
  ChangeMembersRequest, CreateGroupRequest, GetGroupRequest, Group, ListMembersRequest, ListMembersResponse, ListUserGroupsRequest, ListUserGroupsResponse, MembershipChange, OwnerTransfer, TransferOwnerRequest, UserGroup, ListGroupsRequest, ListGroupsResponse,
  DissolveGroupRequest, GroupDissolution,
} from "./gen/qim/admin/v1/groups.js";
import type {
  AnchorEventResponse, ConversationSummary, GetReactionsResponse, HistoryPage, ListConversationSummariesRequest, ListConversationSummariesResponse, ReactResponse, ReadHistoryRequest,
  ReactionSummary as AdminReactionSummary, SendMessageRequest, SendMessageResponse,
} from "./gen/qim/admin/v1/messages.js";
import type { DispatchAuditRequest, DispatchAuditResponse } from "./gen/qim/admin/v1/dispatch.js";
import type { DrillDifference, DrillEvent, DrillProgress, DrillReport, DrillUser, RunRebuildDrillRequest } from "./gen/qim/admin/v1/drill.js";
import type { AuditLine, Counters, Snapshot, WatchRequest } from "./gen/qim/admin/v1/observe.js";
import type { ClusterNode, DrainResponse, GetOwnerResponse, ListNodesResponse, UndrainResponse } from "./gen/qim/admin/v1/cluster.js";
import type {
  BumpEpochRequest, EpochBump, EpochInfo, GetEpochRequest, GetProjectionStatusRequest, OffsetRange, PartitionState, PendingQueue, ProjectionStatus,
  RebuildUserRequest, RebuildUserResponse,
} from "./gen/qim/admin/v1/projection.js";

export type { ClusterNode, DrainResponse, GetOwnerResponse, ListNodesResponse, UndrainResponse };
export type { DeviceToken, IssueTokenResponse, ListTokensResponse, RevokeTokensResponse } from "./gen/qim/admin/v1/tokens.js";
export type { DeviceConnection as AdminDeviceConnection, KickConnectionsResponse, ListConnectionsResponse } from "./gen/qim/admin/v1/connections.js";
export type { GetRetentionResponse, RetentionRule as AdminRetentionRule, RunRetentionResponse } from "./gen/qim/admin/v1/retention.js";
export type { ApplyTypesResponse, GetTypeResponse, ListTypesResponse, MessageType as AdminMessageType, MessageTypeSpec, TypeChange as AdminTypeChange } from "./gen/qim/admin/v1/registry.js";
export type { ListRoomsResponse, PromoteRoomResponse, ReplayRoomResponse, Room as AdminRoom, RoomMessage as AdminRoomMessage } from "./gen/qim/admin/v1/rooms.js";
export type {
  CmdBadFile, CmdFlushResponse, CmdMessage, CmdOwnerResponse, CmdPendingResponse, CmdSendResponse, CmdStateResponse, CmdStatusResponse, CmdUserAckResponse, CmdUserSyncResponse,
} from "./gen/qim/admin/v1/cmd.js";
export type {
  AuditUnreadRequest, AuditUnreadResponse, Badge, ChangeConversationRequest, ChangeConversationResponse, GetBadgeRequest, ListConversationsRequest, ListConversationsResponse,
  ListEntry, ListRow, ReconcileBadgeRequest, ReconcileBadgeResponse, UnreadDrift, WatchUserEvent, WatchUserRequest,
};
export type {
  AuditEntry, AuditLine, BumpEpochRequest, ChangeMembersRequest, ConversationSummary, Counters, CreateGroupRequest, DispatchAuditRequest, DispatchAuditResponse,
  DrillDifference, DrillEvent, DrillProgress, DrillReport, DrillUser, EpochBump, EpochInfo, FollowAuditRequest, GetEpochRequest, GetGroupRequest,
  GetProjectionStatusRequest, Group, HistoryPage, HistoryRecord, ListConversationSummariesRequest, ListConversationSummariesResponse,
  ListMembersRequest, ListMembersResponse, ListUserGroupsRequest, ListUserGroupsResponse, Member, MembershipChange, MembershipEvent, OffsetRange, PartitionState, PendingQueue,
  ProjectionStatus, ReadHistoryRequest, RebuildUserRequest, RebuildUserResponse, RunRebuildDrillRequest, SendMessageRequest,
  SendMessageResponse, Snapshot, TailAuditRequest, TailAuditResponse, UserGroup, WatchRequest, OwnerTransfer, TransferOwnerRequest, ListGroupsRequest, ListGroupsResponse,
  DissolveGroupRequest, GroupDissolution, AnchorEventResponse, GetReactionsResponse, ReactResponse, AdminReactionSummary,
};

type Catalog = typeof SERVICE_CATALOG;
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** The unary methods of a generated client, as promises (ts-proto's last overload carries both types). */
type UnaryOf<C> = {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any: matches every request and response type
  [K in keyof C as C[K] extends (req: any, md: grpc.Metadata, o: Partial<grpc.CallOptions>, cb: (e: grpc.ServiceError | null, r: any) => void) => grpc.ClientUnaryCall ? K : never]:
    C[K] extends (req: infer Req, md: grpc.Metadata, o: Partial<grpc.CallOptions>, cb: (e: grpc.ServiceError | null, r: infer Res) => void) => grpc.ClientUnaryCall
      ? (req: Req) => Promise<Res> : never;
};
type Renamed<M, R> = { [K in keyof M as K extends keyof R ? (R[K] extends string ? R[K] : K) : K]: M[K] };
/** Every unary RPC of every catalogued service, one flat object (renames applied). */
type MethodsOf<E> = E extends { client: infer C extends abstract new (...args: never[]) => unknown; rename: infer R } ? Renamed<UnaryOf<InstanceType<C>>, R> : never;
export type UnaryMethods = UnionToIntersection<MethodsOf<Catalog[number]>>;

/** A running open-ended stream (ObserveService.Watch, AuditService.FollowAudit). */
export interface WatchStream {
  /** Ends the stream from our side (the server stops its timer); `ended` then resolves. */
  cancel(): void;
  /** Resolves when the server ends the stream with OK or we cancel; rejects with the ServiceError otherwise. */
  ended: Promise<void>;
}

export interface ConnectionOptions {
  /** host:port */
  endpoint: string;
  caPem?: string | Buffer;
  certPem?: string | Buffer;
  keyPem?: string | Buffer;
  /** Plaintext, for a server started with --insecure-dev. */
  insecure?: boolean;
  /**
   * Per-call deadline (default 15 s). For the streaming drill it bounds the silence between two
   * events instead (a drill over many users takes longer than any one deadline).
   */
  deadlineMs?: number;
}

type Unary<Req, Res> = (req: Req, metadata: grpc.Metadata, options: Partial<grpc.CallOptions>, callback: (err: grpc.ServiceError | null, res: Res) => void) => grpc.ClientUnaryCall;

/** Wraps a generated callback method as a promise with a deadline. */
function promised<Req, Res>(client: grpc.Client, method: Unary<Req, Res>, deadlineMs: number) {
  return (req: Req): Promise<Res> =>
    new Promise((resolve, reject) => {
      method.call(client, req, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) => (err ? reject(err) : resolve(res)));
    });
}

/** What the drill stream rejects with when the server sends nothing for the idle deadline. */
function idleDeadlineError(ms: number): grpc.ServiceError {
  return Object.assign(new Error(`no event from the drill for ${ms / 1000} s`), {
    code: grpc.status.DEADLINE_EXCEEDED, details: `no event from the drill for ${ms / 1000} s`, metadata: new grpc.Metadata(),
  });
}

/**
 * A typed client of the admin API: one channel shared by every service, every call a promise
 * with a deadline. Failures are grpc ServiceErrors (code, details, metadata qim-error-code /
 * qim-error-field / qim-request-id).
 */
export function connectAdmin(opts: ConnectionOptions) {
  const credentials = opts.insecure
    ? grpc.credentials.createInsecure()
    : grpc.credentials.createSsl(
      opts.caPem ? Buffer.from(opts.caPem) : null,
      opts.keyPem ? Buffer.from(opts.keyPem) : null,
      opts.certPem ? Buffer.from(opts.certPem) : null,
    );
  const deadline = opts.deadlineMs ?? 15_000;
  // grpc-js backs off reconnecting up to 120 s by default, failing calls at once meanwhile; a
  // client that retries by itself (the dashboard) would see a server back for minutes as down.
  const channelOptions = {
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
    "grpc.initial_reconnect_backoff_ms": 500,
    "grpc.max_reconnect_backoff_ms": 5000,
  };
  const clients = new Map<string, grpc.Client>();
  let channel: grpc.ClientOptions["channelOverride"];
  const unary: Record<string, (req: unknown) => Promise<unknown>> = {};
  for (const entry of SERVICE_CATALOG) {
    const client = new entry.client(opts.endpoint, credentials, { ...channelOptions, ...(channel ? { channelOverride: channel } : {}) });
    channel ??= client.getChannel() as grpc.ClientOptions["channelOverride"];
    clients.set(entry.name, client);
    const rename: Readonly<Record<string, string>> = entry.rename;
    for (const [method, def] of Object.entries(entry.definition)) {
      if (def.requestStream || def.responseStream) continue;
      const name = rename[method] ?? method;
      if (unary[name]) throw new Error(`two admin services define a unary method ${name}: rename one in admin-api/catalog.ts`);
      unary[name] = promised(client, (client as unknown as Record<string, Unary<unknown, unknown>>)[method]!, deadline);
    }
  }
  const methods = unary as unknown as UnaryMethods;
  const drill = clients.get("qim.admin.v1.DrillService") as DrillServiceClient;
  const observe = clients.get("qim.admin.v1.ObserveService") as ObserveServiceClient;
  const auditClient = clients.get("qim.admin.v1.AuditService") as AuditServiceClient;
  const listClient = clients.get("qim.admin.v1.ConversationListService") as ConversationListServiceClient;
  /** An open-ended server stream: each message to `onData` until cancel(); no deadline. */
  const openEnded = <M>(stream: grpc.ClientReadableStream<M>, onData: (m: M) => void): WatchStream => {
    let cancelled = false;
    const ended = new Promise<void>((resolve, reject) => {
      stream.on("data", (m: M) => {
        if (!cancelled) onData(m);
      });
      stream.on("error", (err: grpc.ServiceError) => (cancelled && err.code === grpc.status.CANCELLED ? resolve() : reject(err)));
      stream.on("status", (s: grpc.StatusObject) => {
        if (s.code === grpc.status.OK) resolve();
      });
    });
    return {
      cancel() {
        cancelled = true;
        stream.cancel();
      },
      ended,
    };
  };
  return {
    ...methods,
    /** `limit` (projection listing only) defaults to 0: the server's page size. */
    listConversationSummaries: (r: Omit<ListConversationSummariesRequest, "limit"> & { limit?: number }) => methods.listConversationSummaries({ limit: 0, ...r }),
    /**
     * Runs a rebuild drill: progress events go to `onProgress`, the promise resolves with the final
     * report. Fails with DEADLINE_EXCEEDED when the server sends nothing for the deadline (the drill
     * itself runs on to its end and is audited).
     */
    runRebuildDrill(r: RunRebuildDrillRequest, onProgress?: (p: DrillProgress) => void): Promise<DrillReport> {
      return new Promise((resolve, reject) => {
        const stream = drill.runRebuildDrill(r, new grpc.Metadata(), {});
        let report: DrillReport | undefined;
        let timedOut = false;
        let timer: NodeJS.Timeout | undefined;
        const arm = () => {
          if (timer) clearTimeout(timer);
          timer = setTimeout(() => { timedOut = true; stream.cancel(); }, deadline);
        };
        arm();
        stream.on("data", (ev: DrillEvent) => {
          arm();
          if (ev.event?.$case === "progress") onProgress?.(ev.event.progress);
          else if (ev.event?.$case === "report") report = ev.event.report;
        });
        stream.on("error", (err: grpc.ServiceError) => {
          clearTimeout(timer);
          reject(timedOut ? idleDeadlineError(deadline) : err);
        });
        // an OK status can arrive before the last data event is delivered: settle once both are in
        let ok = false;
        let ended = false;
        const settle = () => {
          if (!ok || !ended) return;
          if (report) resolve(report);
          else reject(Object.assign(new Error("the drill stream ended without a report"), { code: grpc.status.INTERNAL, details: "the drill stream ended without a report", metadata: new grpc.Metadata() }));
        };
        stream.on("status", (s: grpc.StatusObject) => {
          clearTimeout(timer);
          ok = s.code === grpc.status.OK; // otherwise "error" has rejected
          settle();
        });
        stream.on("end", () => {
          ended = true;
          settle();
        });
      });
    },
    /**
     * Snapshots for the dashboard: one at once, then one every `intervalMs` (0: the server's
     * default), each to `onSnapshot`, until cancel(). No deadline: the stream runs until cancelled.
     */
    watch(r: WatchRequest, onSnapshot: (s: Snapshot) => void): WatchStream {
      return openEnded(observe.watch(r, new grpc.Metadata(), {}), onSnapshot);
    },
    /**
     * The audit log as it is written: the newest `limit` entries (0: none) at once, then every
     * entry as it becomes durable, each message's entries to `onEntries`, until cancel(). No deadline.
     */
    followAudit(r: FollowAuditRequest, onEntries: (entries: AuditEntry[]) => void): WatchStream {
      return openEnded(auditClient.followAudit(r, new grpc.Metadata(), {}), (m) => onEntries(m.entries));
    },
    /**
     * A user's SESSION_DELTA and badge frames as they happen (the current badge first), each to
     * `onEvent`, until cancel(). No deadline.
     */
    watchUser(r: WatchUserRequest, onEvent: (e: WatchUserEvent) => void): WatchStream {
      return openEnded(listClient.watchUser(r, new grpc.Metadata(), {}), onEvent);
    },
    close(): void {
      for (const c of clients.values()) c.close();
    },
  };
}

export type AdminClient = ReturnType<typeof connectAdmin>;

/** The domain code the server attached (qim-error-code), if any. */
export function errorCode(err: unknown): string | undefined {
  const md = (err as grpc.ServiceError | undefined)?.metadata;
  const v = md?.get("qim-error-code")[0];
  return typeof v === "string" ? v : undefined;
}

export function errorField(err: unknown): string | undefined {
  const v = (err as grpc.ServiceError | undefined)?.metadata?.get("qim-error-field")[0];
  return typeof v === "string" ? v : undefined;
}

/**
 * Every page of a group's member table, one ListMembers call per page, until the last: the
 * caller handles a page before the next is read, so no side holds the whole group (a member may
 * show on two pages if Redis rehashed meanwhile: ListMembersResponse).
 */
export async function* memberPages(client: AdminClient, r: { tenant: string; group: string; limit?: number; cursor?: string }): AsyncGenerator<ListMembersResponse> {
  let cursor = r.cursor ?? "";
  do {
    const page = await client.listMembers({ tenant: r.tenant, group: r.group, limit: r.limit ?? 0, cursor });
    yield page;
    cursor = page.nextCursor;
  } while (cursor !== "");
}

/** Every page of a tenant's group listing (ListGroups), one call per page, until the last (as memberPages). */
export async function* groupPages(client: AdminClient, r: { tenant: string; owner?: string; limit?: number }): AsyncGenerator<ListGroupsResponse> {
  let cursor = "";
  do {
    const page = await client.listGroups({ tenant: r.tenant, owner: r.owner ?? "", limit: r.limit ?? 0, cursor });
    yield page;
    cursor = page.nextCursor;
  } while (cursor !== "");
}
