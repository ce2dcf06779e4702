/**
 * Every RPC of every service in the protos has, in its service file, a role declaration and an
 * audit rule (mutates or not), and here an invalid-input case that the real server refuses with
 * INVALID_ARGUMENT naming the field, auditing a mutation's refusal and changing nothing. A new RPC
 * without them fails this test by name. The list of RPCs comes from the .proto files, not from
 * the code under test.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path, { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { ROLES } from "../../server/pipeline/auth.js";
import { SERVICE_CATALOG } from "../../admin-api/catalog.js";
import { SERVICES } from "../../server/listeners/admin-grpc/services/index.js";
import { newUuid } from "../../core/index.js";
import { startE2eServer, type E2eServer } from "../e2e/qimctl.js";

function protoRpcs(): Map<string, { requestType: string; responseStream: boolean; encode: (req: object) => Buffer }> {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "proto", "qim", "admin", "v1"))) dir = dirname(dir);
  const root = join(dir, "proto");
  const files = readdirSync(join(root, "qim", "admin", "v1")).filter((f) => f.endsWith(".proto")).map((f) => `qim/admin/v1/${f}`);
  const def = loadSync(files, { includeDirs: [root], keepCase: false, longs: String, defaults: false });
  const out = new Map<string, { requestType: string; responseStream: boolean; encode: (req: object) => Buffer }>();
  for (const entry of Object.values(def)) {
    if ("format" in entry) continue;
    for (const m of Object.values(entry) as grpc.MethodDefinition<object, unknown>[] & { requestType?: { type: { name: string } } }[]) {
      const md = m as grpc.MethodDefinition<object, unknown> & { requestType: { type: { name: string } } };
      out.set(md.path, { requestType: md.requestType.type.name, responseStream: md.responseStream, encode: md.requestSerialize });
    }
  }
  return out;
}

const tenant = newUuid();
/**
 * One request per RPC that the server must refuse with INVALID_ARGUMENT naming `field` (by the
 * proto's field names, camelCase as proto-loader takes them). RPCs whose request has no fields get
 * the undecodable case below only.
 */
const INVALID_INPUT: Record<string, { request: object; field: string } | "no fields"> = {
  "/qim.admin.v1.GroupService/CreateGroup": { request: { tenant: "not-a-uuid", owner: newUuid() }, field: "tenant" },
  "/qim.admin.v1.GroupService/GetGroup": { request: { tenant, group: "g" }, field: "group" },
  "/qim.admin.v1.GroupService/AddMembers": { request: { tenant, group: newUuid(), users: [] }, field: "users" },
  "/qim.admin.v1.GroupService/RemoveMembers": { request: { tenant, group: newUuid(), users: ["x"] }, field: "users[0]" },
  "/qim.admin.v1.GroupService/ListMembers": { request: { tenant: "", group: newUuid() }, field: "tenant" },
  "/qim.admin.v1.GroupService/ListUserGroups": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.GroupService/ListGroups": { request: { tenant, owner: "o" }, field: "owner" },
  "/qim.admin.v1.GroupService/TransferOwner": { request: { tenant, group: newUuid(), to: "not-a-uuid" }, field: "to" },
  "/qim.admin.v1.GroupService/DissolveGroup": { request: { tenant, group: "not-a-uuid" }, field: "group" },
  "/qim.admin.v1.MessageService/SendMessage": { request: { tenant, group: newUuid(), sender: "s", text: "hi" }, field: "sender" },
  "/qim.admin.v1.MessageService/ReadHistory": { request: { tenant, group: newUuid(), user: newUuid(), limit: 5000 }, field: "limit" },
  "/qim.admin.v1.MessageService/ListConversationSummaries": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.AuditService/TailAudit": { request: { limit: 5000 }, field: "limit" },
  "/qim.admin.v1.AuditService/FollowAudit": { request: { limit: 1001 }, field: "limit" },
  "/qim.admin.v1.ProjectionService/GetEpoch": { request: { limit: 500 }, field: "limit" },
  "/qim.admin.v1.ProjectionService/BumpEpoch": { request: { reason: "" }, field: "reason" },
  "/qim.admin.v1.ProjectionService/RebuildUser": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.ProjectionService/GetStatus": "no fields",
  "/qim.admin.v1.DispatchService/Audit": "no fields",
  "/qim.admin.v1.DrillService/RunRebuildDrill": { request: { wipe: "everything" }, field: "wipe" },
  "/qim.admin.v1.ObserveService/Watch": { request: { intervalMs: 5 }, field: "interval_ms" },
  "/qim.admin.v1.ObserveService/GetServerInfo": "no fields",
  "/qim.admin.v1.ClusterService/ListNodes": "no fields",
  "/qim.admin.v1.ClusterService/GetOwner": { request: { user: { tenant, user: "u" } }, field: "user.user" },
  "/qim.admin.v1.ClusterService/Drain": { request: { nodeId: " " }, field: "node_id" },
  "/qim.admin.v1.ClusterService/Undrain": { request: { nodeId: " " }, field: "node_id" },
  "/qim.admin.v1.ConversationListService/ListConversations": { request: { tenant, user: newUuid(), cursor: "%%" }, field: "cursor" },
  "/qim.admin.v1.ConversationListService/WatchUser": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.ConversationListService/GetBadge": { request: { tenant: "t", user: newUuid() }, field: "tenant" },
  "/qim.admin.v1.ConversationListService/ReconcileBadge": { request: { tenant, user: "" }, field: "user" },
  "/qim.admin.v1.ConversationListService/AuditUnread": { request: { sampleRate: 2 }, field: "sample_rate" },
  "/qim.admin.v1.ConversationListService/ChangeConversation": { request: { tenant, user: newUuid(), group: newUuid(), action: 0 }, field: "action" },
  "/qim.admin.v1.CmdService/Send": { request: { tenant, channelId: "g1", channelType: 256, payload: Buffer.from("x") }, field: "channel_type" },
  "/qim.admin.v1.CmdService/Sync": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.CmdService/Ack": { request: { tenant, user: newUuid(), lastMessageSeq: 0 }, field: "last_message_seq" },
  "/qim.admin.v1.CmdService/GetPending": { request: { tenant: "t", user: newUuid() }, field: "tenant" },
  "/qim.admin.v1.CmdService/GetState": { request: { tenant, user: "" }, field: "user" },
  "/qim.admin.v1.CmdService/GetOwner": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.CmdService/Flush": { request: { nodeId: "not a node id" }, field: "node_id" },
  "/qim.admin.v1.CmdService/GetStatus": "no fields",
  "/qim.admin.v1.TokenService/IssueToken": { request: { tenant, user: newUuid(), device: "bad device id" }, field: "device" },
  "/qim.admin.v1.TokenService/RevokeTokens": { request: { tenant, tokenId: "nope" }, field: "token_id" },
  "/qim.admin.v1.TokenService/ListTokens": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.ConnectionService/ListConnections": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.ConnectionService/KickConnections": { request: { tenant, user: "u" }, field: "user" },
  "/qim.admin.v1.RoomService/ListRooms": { request: { tenant, after: "lobby" }, field: "after" },
  "/qim.admin.v1.RoomService/GetRoom": { request: { tenant, room: "lobby" }, field: "room" },
  "/qim.admin.v1.RoomService/ReplayRoom": { request: { tenant, room: "lobby" }, field: "room" },
  "/qim.admin.v1.RoomService/PromoteRoom": { request: { tenant, room: "lobby", owner: "x" }, field: "room" },
  "/qim.admin.v1.RetentionService/GetRetention": { request: { tenant, group: "g" }, field: "group" },
  "/qim.admin.v1.RetentionService/SetRetentionClass": { request: { tenant, name: "Not A Name" }, field: "name" },
  "/qim.admin.v1.RetentionService/SetGroupRetention": { request: { tenant, group: "g" }, field: "group" },
  "/qim.admin.v1.RetentionService/RunRetention": { request: { tenant: "t" }, field: "tenant" },
  "/qim.admin.v1.MessageService/RecallMessage": { request: { tenant, group: newUuid(), conversationSeq: 1n, reason: "" }, field: "reason" },
  "/qim.admin.v1.MessageService/EditMessage": { request: { tenant, group: newUuid(), conversationSeq: 0n, text: "x", reason: "typo" }, field: "conversation_seq" },
  "/qim.admin.v1.MessageService/React": { request: { tenant, group: newUuid(), conversationSeq: 1n, user: newUuid(), reactionKey: "two words", reason: "support ticket 7" }, field: "reaction_key" },
  "/qim.admin.v1.MessageService/GetReactions": { request: { tenant, group: newUuid(), conversationSeq: 1n, withUsers: true, cursor: "not-a-cursor" }, field: "cursor" },
  "/qim.admin.v1.RegistryService/ApplyTypes": { request: { tenant, put: [{ customType: "acme.poll.v1", countsUnred: true, maxPayloadBytes: 40000 }] }, field: "put[0].max_payload_bytes" },
  "/qim.admin.v1.RegistryService/GetType": { request: { tenant, customType: "Not/A/Type" }, field: "custom_type" },
  "/qim.admin.v1.RegistryService/ListTypes": { request: { tenant: "t" }, field: "tenant" },
};

/** Bytes that are no protobuf message: field 1 as a length-delimited value longer than the buffer. */
const UNDECODABLE = Buffer.from([0x0a, 0x7f, 0x01]);

describe("every admin RPC is declared: roles, audit rule, invalid input", () => {
  const rpcs = protoRpcs();
  const declared = new Map(SERVICES.flatMap((svc) => Object.entries(svc.rpcs).map(([method, rpc]) => [svc.definition[method]!.path, rpc] as const)));

  it("the catalogue, the service modules and the protos name the same services and RPCs", () => {
    const protoServices = [...new Set([...rpcs.keys()].map((p) => p.split("/")[1]!))].sort();
    assert.deepEqual(SERVICE_CATALOG.map((e) => e.name).sort(), protoServices);
    assert.deepEqual(SERVICES.map((s) => s.name).sort(), protoServices);
    assert.deepEqual([...declared.keys()].sort(), [...rpcs.keys()].sort());
  });

  it("each RPC declares at least one known role and whether it mutates; mutations need operator or admin, or the drill role's own two", () => {
    for (const [p, rpc] of declared) {
      assert.ok(rpc.roles.length > 0, `${p}: no role may call it`);
      for (const r of rpc.roles) assert.ok((ROLES as readonly string[]).includes(r), `${p}: unknown role ${r}`);
      assert.equal(typeof rpc.mutates, "boolean", `${p}: audit rule`);
      if (rpc.mutates) assert.ok(!rpc.roles.includes("viewer"), `${p}: a viewer may not mutate`);
    }
  });

  it("each RPC has an invalid-input case here", () => {
    const missing = [...rpcs.keys()].filter((p) => !(p in INVALID_INPUT));
    assert.deepEqual(missing, [], "add an INVALID_INPUT case for each");
  });

  describe("against a real server over mTLS, as admin", () => {
    let dir: string;
    let e2e: E2eServer;
    let client: grpc.Client;
    before(async () => {
      dir = mkdtempSync(path.join(os.tmpdir(), "qim-rpc-decl-"));
      e2e = await startE2eServer(dir);
      const pem = (what: "ca" | "admin", f: "certPath" | "keyPath") => readFileSync(e2e.pki[what][f]);
      client = new grpc.Client(e2e.endpoint, grpc.credentials.createSsl(pem("ca", "certPath"), pem("admin", "keyPath"), pem("admin", "certPath")));
    });
    after(async () => {
      client?.close();
      await e2e?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const call = (p: string, body: Buffer, stream: boolean) => new Promise<{ code: number; field: string | undefined }>((resolve) => {
      const identity = (b: Buffer) => b;
      const options = { deadline: Date.now() + 10_000 };
      const done = (err: grpc.ServiceError | null) => resolve({ code: err?.code ?? grpc.status.OK, field: err?.metadata.get("qim-error-field")[0] as string | undefined });
      if (!stream) {
        client.makeUnaryRequest(p, identity, identity, body, new grpc.Metadata(), options, (err) => done(err));
        return;
      }
      const s = client.makeServerStreamRequest(p, identity, identity, body, new grpc.Metadata(), options);
      s.on("data", () => { s.cancel(); });
      s.on("error", (err: grpc.ServiceError) => done(err));
      s.on("status", (st: grpc.StatusObject) => { if (st.code === grpc.status.OK) done(null); });
    });

    it("each RPC's invalid request and undecodable bytes are refused INVALID_ARGUMENT with the field; refused mutations are audited", async () => {
      for (const [p, m] of rpcs) {
        const c = INVALID_INPUT[p]!;
        const before = (await e2e.server.audit.tail(1000)).length;
        const cases: [string, Buffer, string][] = [["undecodable", UNDECODABLE, "request"]];
        if (c !== "no fields") cases.push(["invalid", m.encode(c.request), c.field]);
        for (const [what, body, field] of cases) {
          const r = await call(p, body, m.responseStream);
          assert.equal(r.code, grpc.status.INVALID_ARGUMENT, `${p} ${what}: code ${r.code}`);
          assert.equal(r.field, field, `${p} ${what}: field`);
        }
        const entries = (await e2e.server.audit.tail(1000)).slice(before);
        if (declared.get(p)!.mutates) {
          assert.equal(entries.filter((e) => e.rpc === p && e.result === "INVALID_ARGUMENT").length, cases.length, `${p}: each refusal audited`);
        } else {
          assert.equal(entries.length, 0, `${p}: a refused read is not audited`);
        }
      }
    });
  });
});
