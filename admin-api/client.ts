import * as grpc from "@grpc/grpc-js";
import { AuditServiceClient } from "./gen/qim/admin/v1/audit.js";
import { GroupServiceClient } from "./gen/qim/admin/v1/groups.js";
import { MessageServiceClient } from "./gen/qim/admin/v1/messages.js";

import type { AuditEntry, TailAuditRequest, TailAuditResponse } from "./gen/qim/admin/v1/audit.js";
import type { HistoryRecord, Member, MembershipEvent } from "./gen/qim/admin/v1/common.js";
import type { ChangeMembersRequest, CreateGroupRequest, GetGroupRequest, Group, ListMembersRequest, ListMembersResponse, MembershipChange } from "./gen/qim/admin/v1/groups.js";
import type { ConversationSummary, HistoryPage, ListConversationSummariesRequest, ListConversationSummariesResponse, ReadHistoryRequest, SendMessageRequest, SendMessageResponse } from "./gen/qim/admin/v1/messages.js";

export type {
  AuditEntry, ChangeMembersRequest, ConversationSummary, CreateGroupRequest, GetGroupRequest, Group, HistoryPage, HistoryRecord,
  ListConversationSummariesRequest, ListConversationSummariesResponse, ListMembersRequest, ListMembersResponse, Member,
  MembershipChange, MembershipEvent, ReadHistoryRequest, SendMessageRequest, SendMessageResponse, TailAuditRequest, TailAuditResponse,
};

export interface ConnectionOptions {
  /** host:port */
  endpoint: string;
  caPem?: string | Buffer;
  certPem?: string | Buffer;
  keyPem?: string | Buffer;
  /** Plaintext, for a server started with --insecure-dev. */
  insecure?: boolean;
  /** Per-call deadline (default 15 s). */
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

/**
 * A typed client of the admin API: one channel shared by the three services, every call a promise
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
  const channelOptions = { "grpc.max_receive_message_length": 16 * 1024 * 1024 };
  const groups = new GroupServiceClient(opts.endpoint, credentials, channelOptions);
  const channel = groups.getChannel();
  const messages = new MessageServiceClient(opts.endpoint, credentials, { ...channelOptions, channelOverride: channel });
  const audit = new AuditServiceClient(opts.endpoint, credentials, { ...channelOptions, channelOverride: channel });
  return {
    createGroup: promised(groups, groups.createGroup as never, deadline) as (r: CreateGroupRequest) => Promise<Group>,
    getGroup: promised(groups, groups.getGroup as never, deadline) as (r: GetGroupRequest) => Promise<Group>,
    addMembers: promised(groups, groups.addMembers as never, deadline) as (r: ChangeMembersRequest) => Promise<MembershipChange>,
    removeMembers: promised(groups, groups.removeMembers as never, deadline) as (r: ChangeMembersRequest) => Promise<MembershipChange>,
    listMembers: promised(groups, groups.listMembers as never, deadline) as (r: ListMembersRequest) => Promise<ListMembersResponse>,
    sendMessage: promised(messages, messages.sendMessage as never, deadline) as (r: SendMessageRequest) => Promise<SendMessageResponse>,
    readHistory: promised(messages, messages.readHistory as never, deadline) as (r: ReadHistoryRequest) => Promise<HistoryPage>,
    listConversationSummaries: promised(messages, messages.listConversationSummaries as never, deadline) as (r: ListConversationSummariesRequest) => Promise<ListConversationSummariesResponse>,
    tailAudit: promised(audit, audit.tailAudit as never, deadline) as (r: TailAuditRequest) => Promise<TailAuditResponse>,
    close(): void {
      groups.close();
      messages.close();
      audit.close();
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
