/**
 * The CMD sync surfaces (issue 13) with clients nobody here wrote: curl against the HTTP API
 * (/message/sync, /message/syncack with WuKongIM's JSON, service certificates only) and grpcurl
 * against qim.admin.v1.CmdService by server reflection. One real admin server over mTLS on its own
 * redis-server. Every expected value comes from what the test itself sent.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { AdminServer } from "../../server/node.js";
import type { TestPkiFiles } from "../certs/fixture.js";
import { CLIENT_TIMEOUT_MS, prerequisites, runClient, startCmdHttpStack, type CmdHttpStack, type Ran } from "./fixture.js";

const CURL_MAX_TIME_S = String(CLIENT_TIMEOUT_MS / 2 / 1000);
const SUFFIX = "____cmd";

describe("CMD sync: curl against /message/sync and /message/syncack, grpcurl against CmdService", () => {
  let server: AdminServer;
  let files: TestPkiFiles;
  let service: { cert: string; key: string };
  let grpcurl: string;
  let stack: CmdHttpStack;
  const tenant = randomUUID();

  before(async () => {
    const found = (await prerequisites()).findGrpcurl();
    assert.ok(found, "grpcurl is not installed: run `node scripts/prerequisites.mjs test`");
    grpcurl = found;
    stack = await startCmdHttpStack(tenant, "qim-cmd-interop-");
    ({ server, files, service } = stack);
    assert.ok(server.sync, "the server started its CMD sync HTTP API");
  });

  after(async () => {
    await stack?.close();
  });

  /** curl -X POST https://localhost:PORT/PATH with a body; the HTTP status and the body (curl's exit code when the request failed). */
  async function post(p: string, body: string, who: { cert: string; key: string } | null): Promise<{ code: number; status: number; body: string; ran: Ran }> {
    const url = `https://localhost:${server.sync!.port}${p}`;
    const ran = await runClient("curl", [
      "-sS", "--max-time", CURL_MAX_TIME_S, "--cacert", files.ca.certPath,
      ...(who ? ["--cert", who.cert, "--key", who.key] : []),
      "-H", "content-type: application/json", "-X", "POST", "--data-binary", body, "-w", "\n%{http_code}", url,
    ]);
    const nl = ran.stdout.lastIndexOf("\n");
    return { code: ran.code, status: Number(ran.stdout.slice(nl + 1)), body: ran.stdout.slice(0, Math.max(0, nl)), ran };
  }
  const operator = () => ({ cert: files.operator.certPath, key: files.operator.keyPath });

  /** grpcurl as a role, by reflection; the parsed JSON answer (must succeed). */
  async function grpc(role: "drill" | "viewer" | "operator", method: string, body: object): Promise<Record<string, unknown>> {
    const r = await grpcRaw(role, method, body);
    assert.equal(r.code, 0, `grpcurl ${method}: exit ${r.code}\n${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  }
  function grpcRaw(role: "drill" | "viewer" | "operator", method: string, body: object): Promise<Ran> {
    return runClient(grpcurl, [
      "-max-time", CURL_MAX_TIME_S, "-cacert", files.ca.certPath, "-cert", files[role].certPath, "-key", files[role].keyPath,
      "-d", JSON.stringify(body), `localhost:${server.port}`, `qim.admin.v1.CmdService/${method}`,
    ]);
  }

  it("refuses an operator's certificate 403 (audited) and a caller without one at the TLS handshake", async () => {
    const user = randomUUID();
    const refused = await post("/message/sync", JSON.stringify({ uid: user, limit: 10 }), operator());
    assert.equal(refused.code, 0, refused.ran.stderr);
    assert.equal(refused.status, 403);
    const body = JSON.parse(refused.body) as { msg: string; status: number };
    assert.equal(body.status, 403);
    assert.match(body.msg, /role operator may not call \/message\/sync/);
    const audit = await server.audit.tail(1000);
    assert.ok(audit.some((e) => e.rpc === "POST /message/sync" && e.result === "PERMISSION_DENIED" && e.role === "operator"), "the refusal is audited");

    const anonymous = await post("/message/sync", JSON.stringify({ uid: user }), null);
    assert.notEqual(anonymous.code, 0, "curl without a client certificate fails the handshake");
  });

  it("answers WuKongIM's validation errors: HTTP 400 {msg, status: 400}", async () => {
    const cases: [string, string, string][] = [
      ["/message/sync", "{not json", "数据格式有误！"],
      ["/message/sync", JSON.stringify({ uid: "" }), "uid不能为空！"],
      ["/message/sync", JSON.stringify({ uid: randomUUID(), limit: -1 }), "limit不能为负数！"],
      ["/message/syncack", JSON.stringify({ uid: randomUUID(), last_message_seq: 0 }), "last_message_seq不能为空！"],
      ["/message/syncack", JSON.stringify({ uid: "" , last_message_seq: 3 }), "uid不能为空！"],
    ];
    for (const [p, body, msg] of cases) {
      const r = await post(p, body, service);
      assert.equal(r.code, 0, r.ran.stderr);
      assert.equal(r.status, 400, `${p} ${body}: ${r.body}`);
      assert.deepEqual(JSON.parse(r.body), { msg, status: 400 }, `${p} ${body}`);
    }
  });

  it("a CMD message sent over gRPC (grpcurl) is synced once over HTTP (curl), then acked: legacy JSON from the test's own send", async () => {
    const [alice, bob] = [randomUUID(), randomUUID()];
    const source = `g-${randomUUID().slice(0, 8)}`;
    const payload = Buffer.from(JSON.stringify({ cmd: "refresh", n: 1 }));
    const sent = await grpc("drill", "Send", {
      tenant, channelId: source, channelType: 2, from: alice, to: [alice, bob], payload: payload.toString("base64"), clientMsgNo: "interop-1", redDot: true,
    });
    const message = sent.message as Record<string, unknown>;
    assert.equal(message.channelId, `${source}${SUFFIX}`);
    assert.equal(message.messageSeq, "1");

    const synced = await post("/message/sync", JSON.stringify({ uid: bob, message_seq: 0, limit: 100 }), service);
    assert.equal(synced.status, 200, synced.body);
    const list = JSON.parse(synced.body) as Record<string, unknown>[];
    assert.equal(list.length, 1, synced.body);
    const m = list[0]!;
    assert.deepEqual(m.header, { no_persist: 0, red_dot: 1, sync_once: 0 });
    assert.equal(m.channel_id, source, "the suffix is stripped once");
    assert.equal(m.channel_type, 2);
    assert.equal(m.message_seq, 1);
    assert.equal(m.from_uid, alice);
    assert.equal(m.client_msg_no, "interop-1");
    assert.equal(Buffer.from(m.payload as string, "base64").toString(), payload.toString());
    assert.equal(m.timestamp, Math.floor(Number(message.timestampMs) / 1000), "timestamp in seconds");
    // message_id is an int64 beyond a double: read it from the text, equal to message_idstr
    const rawId = /"message_id":(\d+)/.exec(synced.body)?.[1];
    assert.equal(rawId, m.message_idstr);

    const acked = await post("/message/syncack", JSON.stringify({ uid: bob, last_message_seq: 1 }), service);
    assert.equal(acked.status, 200, acked.body);
    assert.deepEqual(JSON.parse(acked.body), { status: 200 });
    const again = await post("/message/sync", JSON.stringify({ uid: bob, limit: 100 }), service);
    assert.equal(again.status, 200);
    assert.equal(again.body, "[]");

    // the sender's own read seq starts at its message: nothing to sync for alice
    const own = await post("/message/sync", JSON.stringify({ uid: alice, limit: 100 }), service);
    assert.equal(own.body, "[]");

    const audit = await server.audit.tail(1000);
    assert.ok(audit.some((e) => e.rpc === "POST /message/syncack" && e.result === "OK" && e.principal === "app-1"), "the ack is audited with the service's name");
  });

  it("grpcurl: Sync and Ack as a user, GetState after the ack, GetOwner outside a cluster; a viewer may not send", async () => {
    const carol = randomUUID();
    const source = `g-${randomUUID().slice(0, 8)}`;
    for (const n of [1, 2]) {
      await grpc("drill", "Send", { tenant, channelId: source, to: [carol], payload: Buffer.from(`m${n}`).toString("base64") });
    }
    const synced = await grpc("operator", "Sync", { tenant, user: carol, limit: 10 });
    const messages = synced.messages as Record<string, unknown>[];
    assert.deepEqual(messages.map((m) => [m.messageSeq, Buffer.from(m.payload as string, "base64").toString()]), [["1", "m1"], ["2", "m2"]]);
    const acked = await grpc("operator", "Ack", { tenant, user: carol, lastMessageSeq: "2" });
    assert.equal(acked.advanced ?? 0, 1, JSON.stringify(acked));
    const state = await grpc("viewer", "GetState", { tenant, user: carol });
    const rows = state.rows as Record<string, unknown>[];
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.channelId, `${source}${SUFFIX}`);
    assert.equal(rows[0]!.readSeq, "2");
    const after = await grpc("operator", "Sync", { tenant, user: carol, limit: 10 });
    assert.deepEqual(after.messages ?? [], []);

    const owner = await grpc("viewer", "GetOwner", { tenant, user: carol });
    assert.equal(owner.clustered ?? false, false);

    const denied = await grpcRaw("viewer", "Send", { tenant, channelId: source, to: [carol], payload: "eA==" });
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /PermissionDenied|permission denied/i);
  });
});
