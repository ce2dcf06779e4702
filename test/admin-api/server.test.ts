import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { service as healthService } from "grpc-health-check";
import { Redis } from "ioredis";
import { connectAdmin, errorCode, errorField, type AdminClient } from "../../admin-api/client.js";
import { startAdminServer, type AdminServer } from "../../server/node.js";
import { rejected, storeDigest } from "./helpers.js";
import { projectionSettled } from "../harness/projection.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { CLIENT_NAMES, testPki, type TestPki } from "../certs/fixture.js";
import { ROOT } from "../e2e/qimctl.js";



describe("admin API over mTLS", () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let server: AdminServer;
  let pki: TestPki;
  let dir: string;
  const clients: AdminClient[] = [];
  const tenant = randomUUID();
  const connect = (who: keyof TestPki | null) => {
    const c = connectAdmin({
      endpoint: `localhost:${server.port}`,
      caPem: pki.ca.certPem,
      ...(who ? { certPem: pki[who].certPem, keyPem: pki[who].keyPem } : {}),
      deadlineMs: 5000,
    });
    clients.push(c);
    return c;
  };

  before(async () => {
    pki = await testPki();
    redisServer = await startRedis();
    redis = new Redis({ host: redisServer.host, port: redisServer.port });
    redis.on("error", () => {}); // the outage test stops this Redis on purpose
    dir = await mkdtemp(join(tmpdir(), "qim-admin-"));
    server = await startAdminServer({
      topology: { kind: "instances", addrs: [redisServer.addr] },
      listen: "127.0.0.1:0",
      metricsListen: "127.0.0.1:0",
      auditPath: join(dir, "audit.log"),
      tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
      log: () => {},
    });
  });

  after(async () => {
    for (const c of clients) c.close();
    await server?.close();
    redis?.disconnect();
    await redisServer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("an operator creates a group, adds and removes members; history shows the intervals", async () => {
    const op = connect("operator");
    const drill = connect("drill");
    const owner = randomUUID();
    const a = randomUUID();
    const b = randomUUID();
    const g = await op.createGroup({ tenant, group: "", owner, members: [a] });
    assert.equal(g.version, 1n);
    assert.equal(g.memberCount, 2);
    const m1 = await drill.sendMessage({ tenant, group: g.group, sender: a, text: "hello", clientMessageId: "", mentions: [] });
    assert.equal(m1.conversationSeq, 1n);
    const add = await op.addMembers({ tenant, group: g.group, users: [b], dryRun: false });
    assert.equal(add.outcome, "committed");
    assert.equal(add.eventConversationSeq, 2n);
    assert.equal(add.version, 2n);
    assert.deepEqual(add.changed, [b]);
    assert.equal(add.idempotencyId.length, 32);
    const again = await op.addMembers({ tenant, group: g.group, users: [b], dryRun: false });
    assert.equal(again.outcome, "duplicate");
    assert.equal(again.eventConversationSeq, 2n);
    const h = await drill.readHistory({ tenant, group: g.group, user: b, after: 0n, limit: 0 });
    assert.equal(h.earliestAvailableConversationSeq, 2n);
    assert.deepEqual(h.records.map((r) => r.conversationSeq), [2n]);
    assert.equal(h.records[0]!.membership?.op, "join");
    const rm = await op.removeMembers({ tenant, group: g.group, users: [a], dryRun: false });
    assert.equal(rm.eventConversationSeq, 3n);
    const ha = await drill.readHistory({ tenant, group: g.group, user: a, after: 0n, limit: 0 });
    assert.equal(ha.leftAt, 3n);
    assert.equal(ha.state, "REMOVED");
    assert.deepEqual(ha.records.map((r) => r.text), ["hello", ""]);
    const members = await op.listMembers({ tenant, group: g.group, limit: 0, cursor: "" });
    assert.equal(members.version, 3n);
    assert.deepEqual(members.members.map((m) => [m.userId, m.state]).sort(), [[owner, "ACTIVE"], [a, "REMOVED"], [b, "ACTIVE"]].sort());
    const s = await drill.listConversationSummaries({ tenant, user: b, groups: [g.group] });
    assert.equal(s.summaries[0]!.unread, 0);
    const audit = await op.tailAudit({ limit: 20 });
    const mine = audit.entries.filter((e) => e.rpc.endsWith("/AddMembers") && e.principal === CLIENT_NAMES.operator);
    assert.ok(mine.length >= 2);
    assert.equal(mine.at(-1)!.result, "OK");
    assert.equal(mine.at(-1)!.role, "operator");
    assert.match(mine.at(-1)!.fingerprint, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });

  it("a stale expect_version is ABORTED/VERSION_CONFLICT and a dry run changes nothing", async () => {
    const op = connect("operator");
    const g = await op.createGroup({ tenant, group: "", owner: randomUUID(), members: [] });
    await projectionSettled(server, redis);
    const before = await storeDigest(redis);
    const plan = await op.addMembers({ tenant, group: g.group, users: [randomUUID()], dryRun: true });
    assert.equal(plan.outcome, "planned");
    assert.equal(plan.eventConversationSeq, undefined);
    const stale = await rejected(op.addMembers({ tenant, group: g.group, users: [randomUUID()], dryRun: false, expectVersion: 7n }));
    assert.equal(stale.code, grpc.status.ABORTED);
    assert.equal(errorCode(stale), "VERSION_CONFLICT");
    assert.equal(await storeDigest(redis), before);
  });

  it("refuses a viewer's mutation and a drill's membership change, audits both, changes nothing", async () => {
    const op = connect("operator");
    const g = await op.createGroup({ tenant, group: "", owner: randomUUID(), members: [] });
    await projectionSettled(server, redis);
    const before = await storeDigest(redis);
    for (const who of ["viewer", "drill", "unknownRole", "noRole"] as const) {
      const err = await rejected(connect(who).addMembers({ tenant, group: g.group, users: [randomUUID()], dryRun: false }));
      assert.equal(err.code, grpc.status.PERMISSION_DENIED, who);
    }
    const viewerSend = await rejected(connect("viewer").sendMessage({ tenant, group: g.group, sender: randomUUID(), text: "x", clientMessageId: "", mentions: [] }));
    assert.equal(viewerSend.code, grpc.status.PERMISSION_DENIED);
    assert.equal(await storeDigest(redis), before);
    // reads are fine for a viewer
    assert.equal((await connect("viewer").getGroup({ tenant, group: g.group })).group, g.group);
    const refusals = (await server.audit.tail(50)).filter((e) => e.result === "PERMISSION_DENIED");
    assert.ok(refusals.some((e) => e.principal === CLIENT_NAMES.viewer && e.rpc.endsWith("/AddMembers")));
    assert.ok(refusals.some((e) => e.principal === CLIENT_NAMES.drill && e.rpc.endsWith("/AddMembers")));
    assert.ok(refusals.some((e) => e.principal === CLIENT_NAMES.viewer && e.rpc.endsWith("/SendMessage")));
  });

  it("refuses at the TLS handshake: no certificate, another CA, expired, not yet valid — and audits each", async () => {
    await projectionSettled(server, redis);
    const before = await storeDigest(redis);
    const auditBefore = (await server.audit.tail(1000)).length;
    for (const who of [null, "otherCaAdmin", "expired", "notYetValid"] as const) {
      const err = await rejected(connect(who).createGroup({ tenant, group: "", owner: randomUUID(), members: [] }));
      assert.equal(err.code, grpc.status.UNAVAILABLE, `${String(who)}: ${err.details}`);
    }
    assert.equal(await storeDigest(redis), before);
    // the server writes the audit entry as it refuses; give it a moment to land
    let entries: Awaited<ReturnType<AdminServer["audit"]["tail"]>> = [];
    for (let i = 0; i < 50; i++) {
      entries = (await server.audit.tail(1000)).slice(auditBefore).filter((e) => e.rpc === "tls-handshake");
      if (entries.length >= 4) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(entries.length >= 4, `TLS refusals audited: ${JSON.stringify(entries.map((e) => e.detail))}`);
    assert.ok(entries.every((e) => e.result === "UNAUTHENTICATED"));
    // who was refused: not the certificate (Node has dropped it by then), but the address it came from
    assert.deepEqual(entries.map((e) => e.arguments), entries.map(() => ({ remote: "127.0.0.1" })));
    console.log(`# ${entries.length} TLS refusals audited as: ${entries.map((e) => `${e.principal || "(no certificate)"} → ${e.detail}`).join(" ;; ").replace(/\n/g, " ")}`);
  });

  it("malformed input to every RPC is INVALID_ARGUMENT naming the field, or NOT_FOUND, and changes nothing", async () => {
    const op = connect("admin");
    const g = await op.createGroup({ tenant, group: "", owner: randomUUID(), members: [] });
    await projectionSettled(server, redis);
    const before = await storeDigest(redis);
    const bad = "not-a-uuid";
    const cases: [string, () => Promise<unknown>, grpc.status, string | undefined][] = [
      ["CreateGroup tenant", () => op.createGroup({ tenant: bad, group: "", owner: randomUUID(), members: [] }), grpc.status.INVALID_ARGUMENT, "tenant"],
      ["CreateGroup owner", () => op.createGroup({ tenant, group: "", owner: "", members: [] }), grpc.status.INVALID_ARGUMENT, "owner"],
      ["CreateGroup members", () => op.createGroup({ tenant, group: "", owner: randomUUID(), members: [randomUUID(), bad] }), grpc.status.INVALID_ARGUMENT, "members[1]"],
      ["CreateGroup too many", () => op.createGroup({ tenant, group: "", owner: randomUUID(), members: Array.from({ length: 10001 }, () => randomUUID()) }), grpc.status.INVALID_ARGUMENT, "members"],
      ["GetGroup group", () => op.getGroup({ tenant, group: bad }), grpc.status.INVALID_ARGUMENT, "group"],
      ["GetGroup unknown", () => op.getGroup({ tenant, group: randomUUID() }), grpc.status.NOT_FOUND, undefined],
      ["AddMembers users", () => op.addMembers({ tenant, group: g.group, users: [bad], dryRun: false }), grpc.status.INVALID_ARGUMENT, "users[0]"],
      ["AddMembers empty", () => op.addMembers({ tenant, group: g.group, users: [], dryRun: false }), grpc.status.INVALID_ARGUMENT, "users"],
      ["AddMembers oversized", () => op.addMembers({ tenant, group: g.group, users: Array.from({ length: 1001 }, () => randomUUID()), dryRun: false }), grpc.status.INVALID_ARGUMENT, "users"],
      ["AddMembers unknown group", () => op.addMembers({ tenant, group: randomUUID(), users: [randomUUID()], dryRun: false }), grpc.status.NOT_FOUND, undefined],
      ["RemoveMembers group", () => op.removeMembers({ tenant, group: "", users: [randomUUID()], dryRun: false }), grpc.status.INVALID_ARGUMENT, "group"],
      ["RemoveMembers unknown group", () => op.removeMembers({ tenant, group: randomUUID(), users: [randomUUID()], dryRun: false }), grpc.status.NOT_FOUND, undefined],
      ["ListMembers tenant", () => op.listMembers({ tenant: "", group: g.group, limit: 0, cursor: "" }), grpc.status.INVALID_ARGUMENT, "tenant"],
      ["ListMembers unknown", () => op.listMembers({ tenant, group: randomUUID(), limit: 0, cursor: "" }), grpc.status.NOT_FOUND, undefined],
      ["SendMessage sender", () => op.sendMessage({ tenant, group: g.group, sender: bad, text: "x", clientMessageId: "", mentions: [] }), grpc.status.INVALID_ARGUMENT, "sender"],
      ["SendMessage empty", () => op.sendMessage({ tenant, group: g.group, sender: randomUUID(), text: "", clientMessageId: "", mentions: [] }), grpc.status.INVALID_ARGUMENT, "text"],
      ["SendMessage client id", () => op.sendMessage({ tenant, group: g.group, sender: randomUUID(), text: "x", clientMessageId: "abc", mentions: [] }), grpc.status.INVALID_ARGUMENT, "clientMessageId"],
      ["SendMessage mention", () => op.sendMessage({ tenant, group: g.group, sender: randomUUID(), text: "x", clientMessageId: "", mentions: ["not-a-uuid"] }), grpc.status.INVALID_ARGUMENT, "mentions[0]"],
      ["ReadHistory user", () => op.readHistory({ tenant, group: g.group, user: bad, after: 0n, limit: 0 }), grpc.status.INVALID_ARGUMENT, "user"],
      ["ReadHistory limit", () => op.readHistory({ tenant, group: g.group, user: randomUUID(), after: 0n, limit: 5000 }), grpc.status.INVALID_ARGUMENT, "limit"],
      ["Summaries user", () => op.listConversationSummaries({ tenant, user: bad, groups: [g.group] }), grpc.status.INVALID_ARGUMENT, "user"],
      ["Summaries group", () => op.listConversationSummaries({ tenant, user: randomUUID(), groups: [bad] }), grpc.status.INVALID_ARGUMENT, "group"],
      ["Summaries limit", () => op.listConversationSummaries({ tenant, user: randomUUID(), groups: [], limit: 201 }), grpc.status.INVALID_ARGUMENT, "limit"],
      ["Summaries projection user", () => op.listConversationSummaries({ tenant, user: bad, groups: [] }), grpc.status.INVALID_ARGUMENT, "user"],
      ["TailAudit limit", () => op.tailAudit({ limit: 100000 }), grpc.status.INVALID_ARGUMENT, "limit"],
    ];
    for (const [name, call, code, field] of cases) {
      const err = await rejected(call());
      assert.equal(err.code, code, `${name}: ${err.code} ${err.details}`);
      if (field !== undefined) {
        assert.equal(errorField(err), field, name);
        assert.ok(err.details.includes(field), `${name}: the message names ${field}: ${err.details}`);
      }
      assert.ok(!/\n\s+at /.test(err.details), `${name}: no stack trace`);
    }
    assert.equal(await storeDigest(redis), before);
  });

  it("lists its services through server reflection (grpc.reflection.v1)", async () => {
    const protoPath = join(ROOT, "proto", "grpc", "reflection", "v1", "reflection.proto");
    const def = grpc.loadPackageDefinition(loadSync(protoPath, { keepCase: true })) as unknown as {
      grpc: { reflection: { v1: { ServerReflection: new (addr: string, creds: grpc.ChannelCredentials) => grpc.Client & { ServerReflectionInfo: () => grpc.ClientDuplexStream<unknown, { list_services_response?: { service: { name: string }[] } }> } } } };
    };
    const client = new def.grpc.reflection.v1.ServerReflection(`localhost:${server.port}`,
      grpc.credentials.createSsl(Buffer.from(pki.ca.certPem), Buffer.from(pki.viewer.keyPem), Buffer.from(pki.viewer.certPem)));
    const names = await new Promise<string[]>((resolve, reject) => {
      const stream = client.ServerReflectionInfo();
      stream.on("data", (r: { list_services_response?: { service: { name: string }[] } }) => { resolve((r.list_services_response?.service ?? []).map((x: { name: string }) => x.name)); stream.end(); });
      stream.on("error", reject);
      stream.write({ list_services: "" });
    });
    client.close();
    for (const svc of ["qim.admin.v1.GroupService", "qim.admin.v1.MessageService", "qim.admin.v1.AuditService", "qim.admin.v1.ProjectionService", "qim.admin.v1.DispatchService", "qim.admin.v1.DrillService"]) assert.ok(names.includes(svc), `${svc} in ${names.join(", ")}`);
  });

  it("answers UNAVAILABLE (not INTERNAL, no stack) while Redis is down, and recovers by itself", async () => {
    const op = connect("operator");
    const g = await op.createGroup({ tenant, group: "", owner: randomUUID(), members: [] });
    await redisServer.kill9();
    try {
      for (const call of [
        () => op.getGroup({ tenant, group: g.group }),
        () => op.addMembers({ tenant, group: g.group, users: [randomUUID()], dryRun: false }),
      ]) {
        const err = await rejected(call());
        assert.equal(err.code, grpc.status.UNAVAILABLE, err.details);
        assert.equal(errorCode(err), "UNAVAILABLE");
        assert.ok(!/\n\s+at /.test(err.details));
      }
      const refusals = (await server.audit.tail(10)).filter((e) => e.rpc.endsWith("/AddMembers") && e.result === "UNAVAILABLE");
      assert.ok(refusals.length >= 1, "the failed mutation is audited");
    } finally {
      await redisServer.restart();
    }
    // (this Redis runs without persistence, so the group itself is gone; a new one proves the server works again)
    let got: Awaited<ReturnType<AdminClient["createGroup"]>> | undefined;
    for (let i = 0; i < 100 && !got; i++) {
      got = await op.createGroup({ tenant, group: "", owner: randomUUID(), members: [] }).catch(() => undefined);
      if (!got) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(got?.version, 1n, "the server reconnects without a restart");
  });

  it("answers grpc.health.v1 and serves /metrics", async () => {
    const Health = grpc.makeGenericClientConstructor(healthService, "Health");
    const health = new Health(`localhost:${server.port}`, grpc.credentials.createSsl(Buffer.from(pki.ca.certPem), Buffer.from(pki.viewer.keyPem), Buffer.from(pki.viewer.certPem))) as unknown as grpc.Client & {
      check: (req: { service: string }, cb: (err: grpc.ServiceError | null, res: { status: string }) => void) => void;
    };
    const check = () => new Promise<{ status: string }>((resolve, reject) => health.check({ service: "" }, (err, r) => (err ? reject(err) : resolve(r))));
    // the status follows a Redis PING every 2 s; an earlier test took Redis down and up again
    let res = await check();
    for (let i = 0; i < 50 && res.status !== "SERVING"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await check();
    }
    health.close();
    assert.equal(res.status, "SERVING");
    const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    assert.match(text, /qim_writer_membership_events_total\{op="join"\} \d+/);
  });
});
