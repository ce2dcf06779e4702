/**
 * The admin API of the session projection (ProjectionService, DispatchService, DrillService and
 * ListConversationSummaries without groups) against a real redis-server over real mTLS: role
 * gating, audit entries, invalid input, and a start-up the projection refuses.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { connectAdmin, errorCode, errorField, type AdminClient, type DrillProgress } from "../../admin-api/client.js";
import { startAdminServer, type AdminServer, type AdminServerOptions } from "../../server/node.js";
import { ProjectionRefusedError, RedisHashAuthority, RedisStore } from "../../core/index.js";
import { CLIENT_NAMES, testPki, type TestPki } from "../certs/fixture.js";
import { rejected, storeDigest } from "./helpers.js";
import { projectionSettled } from "../harness/projection.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";
import { checkpointKey } from "../../core/index.js";
import { newUuid } from "../../core/index.js";
import { parseUuid } from "../../core/index.js";


describe("admin API: session projection, dispatch audit, rebuild drill", () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let server: AdminServer;
  let pki: TestPki;
  let dir: string;
  const clients: AdminClient[] = [];
  const tenant = newUuid();
  const connect = (who: keyof TestPki) => {
    const c = connectAdmin({ endpoint: `localhost:${server.port}`, caPem: pki.ca.certPem, certPem: pki[who].certPem, keyPem: pki[who].keyPem, deadlineMs: 10_000 });
    clients.push(c);
    return c;
  };
  const owner = newUuid();
  const a = newUuid();
  const b = newUuid();
  let g1 = "";
  let g2 = "";

  before(async () => {
    pki = await testPki();
    redisServer = await startRedis();
    redis = new Redis({ host: redisServer.host, port: redisServer.port });
    dir = await mkdtemp(join(tmpdir(), "qim-projection-"));
    server = await startAdminServer({
      topology: { kind: "instances", addrs: [redisServer.addr] },
      listen: "127.0.0.1:0",
      metricsListen: null,
      auditPath: join(dir, "audit.log"),
      tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
      log: () => {},
    });
    // two groups: a in both (removed from g2), b in g1 only after a join
    const op = connect("operator");
    const drill = connect("drill");
    g1 = (await op.createGroup({ tenant, group: "", owner, members: [a] })).group;
    g2 = (await op.createGroup({ tenant, group: "", owner, members: [a] })).group;
    await drill.sendMessage({ tenant, group: g1, sender: owner, text: "one", clientMessageId: "", mentions: [] });
    await drill.sendMessage({ tenant, group: g2, sender: a, text: "two", clientMessageId: "", mentions: [] });
    await op.addMembers({ tenant, group: g1, users: [b], dryRun: false });
    await drill.sendMessage({ tenant, group: g1, sender: b, text: "three", clientMessageId: "", mentions: [] });
    await op.removeMembers({ tenant, group: g2, users: [a], dryRun: false });
    await projectionSettled(server, redis);
  });

  after(async () => {
    for (const c of clients) c.close();
    await server?.close();
    redis?.disconnect();
    await redisServer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("lists a user's conversations from the projection when no group is named", async () => {
    const r = await connect("viewer").listConversationSummaries({ tenant, user: a, groups: [] });
    assert.deepEqual(r.summaries.map((s) => s.group).sort(), [g1, g2].sort());
    assert.equal(r.total, 2);
    assert.equal(r.hidden, 0);
    assert.equal(typeof r.epoch, "bigint");
    assert.equal(r.rebuilt, false);
    const removed = r.summaries.find((s) => s.group === g2)!;
    assert.equal(removed.state, "REMOVED");
    const page = await connect("drill").listConversationSummaries({ tenant, user: a, groups: [], limit: 1 });
    assert.equal(page.summaries.length, 1);
    assert.equal(page.total, 2);
    // with groups: as before, no projection fields
    const named = await connect("viewer").listConversationSummaries({ tenant, user: b, groups: [g1] });
    assert.equal(named.summaries.length, 1);
    assert.equal(named.epoch, undefined);
    assert.equal(named.total, undefined);
  });

  it("role gating: viewer and drill cannot bump or rebuild, viewer and operator cannot drill; refusals are audited and change nothing", async () => {
    await projectionSettled(server, redis);
    const before = await storeDigest(redis);
    const cases: [keyof TestPki, string, () => Promise<unknown>][] = [
      ["viewer", "BumpEpoch", () => connect("viewer").bumpEpoch({ reason: "viewer tries" })],
      ["drill", "BumpEpoch", () => connect("drill").bumpEpoch({ reason: "drill tries" })],
      ["viewer", "RebuildUser", () => connect("viewer").rebuildUser({ tenant, user: a, force: true })],
      ["drill", "RebuildUser", () => connect("drill").rebuildUser({ tenant, user: a, force: true })],
      ["viewer", "RunRebuildDrill", () => connect("viewer").runRebuildDrill({ users: [], sample: 5, wipe: "projection", reason: "" })],
      ["operator", "RunRebuildDrill", () => connect("operator").runRebuildDrill({ users: [], sample: 5, wipe: "projection", reason: "" })],
      ["unknownRole", "GetEpoch", () => connect("unknownRole").getEpoch({ limit: 0 })],
    ];
    for (const [who, rpc, call] of cases) {
      const err = await rejected(call());
      assert.equal(err.code, grpc.status.PERMISSION_DENIED, `${who} ${rpc}: ${err.details}`);
    }
    assert.equal(await storeDigest(redis), before);
    const refusals = (await server.audit.tail(50)).filter((e) => e.result === "PERMISSION_DENIED");
    for (const [who, rpc] of cases) {
      assert.ok(refusals.some((e) => e.principal === CLIENT_NAMES[who as keyof typeof CLIENT_NAMES] && e.rpc.endsWith(`/${rpc}`)), `${who} ${rpc} refusal audited`);
    }
    // reads are open to every role, the drill role included
    for (const who of ["viewer", "drill", "operator", "admin"] as const) {
      const c = connect(who);
      assert.equal(typeof (await c.getEpoch({ limit: 0 })).epoch, "bigint", who);
      assert.equal((await c.getProjectionStatus({})).partitions.length, 8, who);
      assert.equal((await c.auditDispatch({})).ok, true, who);
    }
  });

  it("an operator bumps the epoch and rebuilds a user; the next pull rebuilds; both are audited before the answer", async () => {
    const op = connect("operator");
    const e0 = (await op.getEpoch({ limit: 0 })).epoch;
    const bumped = await op.bumpEpoch({ reason: "  restored redis from a snapshot  " });
    assert.equal(bumped.epoch, e0 + 1n);
    assert.equal(bumped.by, CLIENT_NAMES.operator);
    assert.equal(bumped.reason, "restored redis from a snapshot");
    const info = await connect("viewer").getEpoch({ limit: 5 });
    assert.equal(info.epoch, e0 + 1n);
    assert.deepEqual([info.bumps[0]!.epoch, info.bumps[0]!.reason, info.bumps[0]!.by], [e0 + 1n, "restored redis from a snapshot", CLIENT_NAMES.operator]);
    // the bump is in the audit log by the time the answer arrived
    const bumpEntry = (await server.audit.tail(5)).filter((e) => e.rpc.endsWith("/BumpEpoch")).at(-1)!;
    assert.equal(bumpEntry.result, "OK");
    assert.equal(bumpEntry.principal, CLIENT_NAMES.operator);
    assert.match(bumpEntry.detail, new RegExp(`epoch bumped to ${e0 + 1n}`));

    // b's mark is behind: the next list pull merges b's set back from the authority
    const list = await connect("viewer").listConversationSummaries({ tenant, user: b, groups: [] });
    assert.equal(list.rebuilt, true);
    assert.deepEqual(list.summaries.map((s) => s.group), [g1]);
    const again = await connect("viewer").listConversationSummaries({ tenant, user: b, groups: [] });
    assert.equal(again.rebuilt, false);

    const rb = await op.rebuildUser({ tenant, user: a, force: false });
    assert.equal(rb.rebuilt, true);
    assert.equal(rb.merged, 2);
    assert.equal(rb.mark, e0 + 1n);
    const noop = await op.rebuildUser({ tenant, user: a, force: false });
    assert.equal(noop.rebuilt, false);
    const forced = await op.rebuildUser({ tenant, user: a, force: true });
    assert.equal(forced.rebuilt, true);
    const rebuilds = (await server.audit.tail(10)).filter((e) => e.rpc.endsWith("/RebuildUser") && e.principal === CLIENT_NAMES.operator);
    assert.equal(rebuilds.length, 3);
    assert.match(rebuilds[0]!.detail, /merged 2 conversation/);
    assert.match(rebuilds[1]!.detail, /nothing to do/);
    assert.deepEqual(rebuilds.map((e) => e.result), ["OK", "OK", "OK"]);
  });

  it("the drill role runs a drill: progress, then one report; audited with the drill id before the report arrives", async () => {
    await projectionSettled(server, redis);
    const drill = connect("drill");
    const events: DrillProgress[] = [];
    const report = await drill.runRebuildDrill({ users: [], sample: 50, wipe: "projection", reason: "ci" }, (p) => events.push(p));
    assert.equal(report.ok, true, JSON.stringify(report.differences));
    assert.equal(report.users, 3, "owner, a and b");
    assert.equal(report.conversationsBefore, 5, "owner 2, a 2, b 1");
    assert.equal(report.conversationsAfter, report.conversationsBefore);
    assert.equal(report.epochAfter, report.epochBefore + 1n);
    assert.equal(report.usersRebuilt, 3);
    assert.equal(report.wipe, "projection");
    assert.match(report.authority, /^redis-hash/);
    assert.ok(events.some((e) => e.phase === "record") && events.some((e) => e.phase === "rebuild"), JSON.stringify(events.map((e) => e.phase)));
    assert.equal(events.at(-1)!.phase, "done");
    // written before the final event was sent: already there, without waiting
    const entry = (await server.audit.tail(5)).filter((e) => e.rpc === "/qim.admin.v1.DrillService/RunRebuildDrill").at(-1)!;
    assert.equal(entry.result, "OK");
    assert.equal(entry.principal, CLIENT_NAMES.drill);
    assert.ok(entry.detail.includes(report.drillId), entry.detail);
    assert.match(entry.detail, /: ok; 3 users/);
    const bump = (await connect("viewer").getEpoch({ limit: 1 })).bumps[0]!;
    assert.equal(bump.by, CLIENT_NAMES.drill);
    assert.match(bump.reason, new RegExp(`drill rebuild ${report.drillId}: ci`));

    // named users, checkpoints wiped too: the consumer re-reads the retained log
    const both = await connect("admin").runRebuildDrill({ users: [{ tenant, user: a }], wipe: "both", reason: "" });
    assert.equal(both.ok, true, JSON.stringify(both.differences));
    assert.equal(both.users, 1);
    assert.equal(both.conversationsAfter, 2);
    assert.equal((await connect("viewer").auditDispatch({})).ok, true);
  });

  it("a drill finds a conversation missing from the authority and names user, conversation and field", async () => {
    await projectionSettled(server, redis);
    const store = new RedisStore({ kind: "instances", addrs: [redisServer.addr] });
    try {
      await new RedisHashAuthority(store, server.runtime.keys).remove(tenant, b, [parseUuid(g1, "g1")]);
    } finally {
      await store.close();
    }
    const report = await connect("drill").runRebuildDrill({ users: [{ tenant, user: b }], wipe: "projection", reason: "" });
    assert.equal(report.ok, false);
    assert.deepEqual(report.differences.map((d) => [d.user, d.conversation, d.field, d.beforeJson, d.afterJson]), [[b, g1, "presence", "true", "false"]]);
    const entry = (await server.audit.tail(3)).filter((e) => e.rpc.endsWith("/RunRebuildDrill")).at(-1)!;
    assert.equal(entry.result, "OK");
    assert.match(entry.detail, new RegExp(`1 difference\\(s\\).*${b}/${g1} presence`));
  });

  it("invalid input is INVALID_ARGUMENT naming the field, audited, and changes nothing", async () => {
    const op = connect("admin");
    await projectionSettled(server, redis);
    const before = await storeDigest(redis);
    const bad = "not-a-uuid";
    const cases: [string, () => Promise<unknown>, string][] = [
      ["BumpEpoch empty reason", () => op.bumpEpoch({ reason: "" }), "reason"],
      ["BumpEpoch blank reason", () => op.bumpEpoch({ reason: "   " }), "reason"],
      ["BumpEpoch long reason", () => op.bumpEpoch({ reason: "x".repeat(501) }), "reason"],
      ["BumpEpoch control characters", () => op.bumpEpoch({ reason: "two\nlines" }), "reason"],
      ["BumpEpoch C1 control", () => op.bumpEpoch({ reason: "a\u0085b" }), "reason"],
      ["BumpEpoch bidi override", () => op.bumpEpoch({ reason: "restored \u202Egnp.kcatta" }), "reason"],
      ["BumpEpoch line separator", () => op.bumpEpoch({ reason: "a\u2028b" }), "reason"],
      ["RebuildUser user with a BOM", () => op.rebuildUser({ tenant, user: `\uFEFF${a}`, force: true }), "user"],
      ["RebuildUser user with a no-break space", () => op.rebuildUser({ tenant, user: `${a}\u00A0`, force: true }), "user"],
      ["GetEpoch limit", () => op.getEpoch({ limit: 101 }), "limit"],
      ["RebuildUser tenant", () => op.rebuildUser({ tenant: bad, user: a, force: true }), "tenant"],
      ["RebuildUser user", () => op.rebuildUser({ tenant, user: "", force: true }), "user"],
      ["Drill sample 0", () => op.runRebuildDrill({ users: [], sample: 0, wipe: "projection", reason: "" }), "sample"],
      ["Drill sample too large", () => op.runRebuildDrill({ users: [], sample: 10_001, wipe: "projection", reason: "" }), "sample"],
      ["Drill unknown wipe", () => op.runRebuildDrill({ users: [], sample: 5, wipe: "everything", reason: "" }), "wipe"],
      ["Drill bad user", () => op.runRebuildDrill({ users: [{ tenant, user: a }, { tenant, user: bad }], wipe: "projection", reason: "" }), "users[1].user"],
      ["Drill users and sample", () => op.runRebuildDrill({ users: [{ tenant, user: a }], sample: 5, wipe: "projection", reason: "" }), "sample"],
      ["Drill long reason", () => op.runRebuildDrill({ users: [], sample: 5, wipe: "projection", reason: "é".repeat(501) }), "reason"],
    ];
    for (const [name, call, field] of cases) {
      const err = await rejected(call());
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT, `${name}: ${err.code} ${err.details}`);
      assert.equal(errorCode(err), "INVALID_ARGUMENT", name);
      assert.equal(errorField(err), field, name);
      assert.ok(err.details.includes(field.replace(/\[.*$/, "")), `${name}: the message names ${field}: ${err.details}`);
      assert.ok(!/\n\s+at /.test(err.details), `${name}: no stack trace`);
    }
    assert.equal(await storeDigest(redis), before);
    const audited = (await server.audit.tail(50)).filter((e) => e.result === "INVALID_ARGUMENT" && e.principal === CLIENT_NAMES.admin);
    for (const rpc of ["BumpEpoch", "RebuildUser", "RunRebuildDrill"]) assert.ok(audited.some((e) => e.rpc.endsWith(`/${rpc}`)), `${rpc} refusal audited`);
  });
});

describe("admin server start-up refused by the session projection", () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let pki: TestPki;
  let dir: string;

  before(async () => {
    pki = await testPki();
    redisServer = await startRedis();
    redis = new Redis({ host: redisServer.host, port: redisServer.port });
    dir = await mkdtemp(join(tmpdir(), "qim-refused-"));
  });

  after(async () => {
    redis?.disconnect();
    await redisServer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const options = (listen: string, lines: string[], partitionCount = 8): AdminServerOptions => ({
    topology: { kind: "instances", addrs: [redisServer.addr] },
    listen,
    metricsListen: null,
    auditPath: join(dir, "audit.log"),
    tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
    dispatch: { clusterId: "qim", topicId: "dispatch", partitionCount },
    log: (line) => lines.push(line),
  });

  const refusesConnections = (port: number) => new Promise<boolean>((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => { s.destroy(); resolve(false); });
    s.once("error", () => resolve(true));
  });

  /** Our own test connection only: the refused server closed every connection it opened. */
  const onlyOurConnection = async () => {
    let n = 0;
    for (let i = 0; i < 100; i++) {
      n = String(await redis.client("LIST")).trim().split("\n").length;
      if (n === 1) return true;
      await new Promise((r) => setTimeout(r, 20));
    }
    return n === 1;
  };

  it("a checkpoint beyond the high watermark (BEYOND_HIGH) or another partition count (IDENTITY_MISMATCH) refuses to start, names the partition, changes nothing", async () => {
    // a server that ran: the log has records, the checkpoints are in place
    const first = await startAdminServer(options("127.0.0.1:0", []));
    const ckptKey = checkpointKey(first.runtime.keys, "dispatch", 0);
    try {
      const c = connectAdmin({ endpoint: `localhost:${first.port}`, caPem: pki.ca.certPem, certPem: pki.admin.certPem, keyPem: pki.admin.keyPem });
      const tenant = newUuid();
      for (let i = 0; i < 4; i++) {
        const g = await c.createGroup({ tenant, group: "", owner: newUuid(), members: [newUuid()] });
        await c.addMembers({ tenant, group: g.group, users: [newUuid()], dryRun: false });
      }
      c.close();
      await projectionSettled(first, redis);
    } finally {
      await first.close();
    }
    const goodPos = await redis.hget(ckptKey, "pos");
    assert.ok(goodPos, "partition 0 has a checkpoint");
    await redis.hset(ckptKey, "pos", "1000000|99999999999999-0");

    const port = await freePort();
    const before = await storeDigest(redis);
    const lines: string[] = [];
    const err = await startAdminServer(options(`127.0.0.1:${port}`, lines)).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ProjectionRefusedError, `refused: ${String(err)}`);
    assert.equal((err as ProjectionRefusedError).code, "FAILED_PRECONDITION");
    assert.deepEqual((err as ProjectionRefusedError).details.partitions, [0]);
    assert.ok(lines.some((l) => /^session projection: partition 0 BEYOND_HIGH: checkpoint 1000000 is beyond the high watermark \d+/.test(l)), lines.join("\n"));
    assert.ok(lines.some((l) => /NOT started.*partition 0 \(BEYOND_HIGH\)/.test(l)), lines.join("\n"));
    assert.ok(lines.some((l) => l.startsWith("conversation-set authority: redis-hash (development fallback")), lines.join("\n"));
    assert.ok(!lines.some((l) => l.includes("listening on")));
    assert.equal(await refusesConnections(port), true, "nothing listens");
    assert.equal(await storeDigest(redis), before, "nothing changed");
    assert.equal(await onlyOurConnection(), true, "every Redis connection of the refused server is closed");

    // the checkpoint repaired, another partition count: IDENTITY_MISMATCH, one line per partition
    await redis.hset(ckptKey, "pos", goodPos!);
    const before2 = await storeDigest(redis);
    const lines2: string[] = [];
    const err2 = await startAdminServer(options(`127.0.0.1:${port}`, lines2, 4)).then(() => undefined, (e: unknown) => e);
    assert.ok(err2 instanceof ProjectionRefusedError, `refused: ${String(err2)}`);
    for (let p = 0; p < 4; p++) {
      assert.ok(lines2.some((l) => l.startsWith(`session projection: partition ${p} IDENTITY_MISMATCH: the log records cluster_id=qim topic_id=dispatch partition_count=8`)), lines2.join("\n"));
    }
    assert.equal(await refusesConnections(port), true);
    assert.equal(await storeDigest(redis), before2);
    assert.equal(await onlyOurConnection(), true);

    // and with the right settings it starts again
    const lines3: string[] = [];
    const again = await startAdminServer(options(`127.0.0.1:${port}`, lines3));
    try {
      assert.ok(lines3.some((l) => l.includes("listening on")), lines3.join("\n"));
      assert.ok((await again.projection.status()).partitions.every((p) => p.verdict === "OK"));
    } finally {
      await again.close();
    }
  });
});

