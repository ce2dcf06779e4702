/**
 * ObserveService.Watch against a real redis-server and the real admin server over mTLS: the first
 * snapshot at once, then one per interval; counters that move with a membership change; roles;
 * no audit entry per snapshot; a cancelled stream stops the server's timer; a Redis outage and a
 * server shutdown end the stream with UNAVAILABLE; and the dashboard's feed (cli/dashboard/feed.ts)
 * reconnecting to a server that went away and came back on the same port.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { connectAdmin, errorCode, errorField, type AdminClient, type Snapshot, type WatchStream } from "../../admin-api/client.js";
import { startAdminServer, type AdminServer, type AdminServerOptions } from "../../server/node.js";
import { DashboardFeed, type SnapshotView } from "../../cli/dashboard/feed.js";
import { rates, type ConnectionState } from "../../cli/dashboard/model.js";
import { classifyError } from "../../cli/exit-codes.js";
import { CLIENT_NAMES, testPki, type TestPki } from "../certs/fixture.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";

/** Polls `check` (25 ms apart, at most `attempts` times): a state to reach, never a duration to assert. */
async function eventually<T>(what: string, check: () => T | undefined | false, attempts = 400): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`${what}: not reached after ${attempts} polls`);
}

/** One Watch stream and what it received. */
class Watch {
  readonly got: Snapshot[] = [];
  readonly stream: WatchStream;
  ended = false;
  error: grpc.ServiceError | undefined;

  constructor(client: AdminClient, intervalMs: number) {
    this.stream = client.watch({ intervalMs }, (s) => this.got.push(s));
    this.stream.ended.then(() => { this.ended = true; }, (err: grpc.ServiceError) => { this.error = err; this.ended = true; });
  }

  /** The first snapshot from index `from` on that satisfies `ok`. */
  until(what: string, ok: (s: Snapshot) => boolean = () => true, from = 0): Promise<Snapshot> {
    return eventually(what, () => {
      if (this.error) assert.fail(`${what}: the stream failed: ${this.error.code} ${this.error.details}`);
      return this.got.slice(from).find(ok);
    });
  }

  /** The error the stream ended with. */
  async failed(what: string): Promise<grpc.ServiceError> {
    await eventually(what, () => this.ended);
    assert.ok(this.error, `${what}: the stream ended without an error`);
    return this.error;
  }
}

const joins = (s: Snapshot) => s.counters!.membershipEvents.join ?? 0;

describe("ObserveService.Watch and the dashboard's feed", { timeout: 180_000 }, () => {
  let redisServer: RedisServer;
  let server: AdminServer;
  let pki: TestPki;
  let dir: string;
  const clients: AdminClient[] = [];
  const tenant = randomUUID();
  const options = (over: Partial<AdminServerOptions> & { redis: RedisServer; audit: string }): AdminServerOptions => ({
    topology: { kind: "instances", addrs: [over.redis.addr] },
    listen: "127.0.0.1:0",
    metricsListen: null,
    auditPath: join(dir, over.audit),
    tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
    log: () => {},
    ...over,
  });
  const connect = (who: keyof TestPki, port = server.port) => {
    const c = connectAdmin({ endpoint: `localhost:${port}`, caPem: pki.ca.certPem, certPem: pki[who].certPem, keyPem: pki[who].keyPem, deadlineMs: 10_000 });
    clients.push(c);
    return c;
  };
  const watches: Watch[] = [];
  const watch = (who: keyof TestPki, intervalMs = 200, port?: number) => {
    const w = new Watch(connect(who, port), intervalMs);
    watches.push(w);
    return w;
  };

  before(async () => {
    pki = await testPki();
    redisServer = await startRedis();
    dir = await mkdtemp(join(tmpdir(), "qim-observe-"));
    server = await startAdminServer(options({ redis: redisServer, audit: "audit.log" }));
  });

  after(async () => {
    for (const w of watches) w.stream.cancel();
    for (const c of clients) c.close();
    await server?.close();
    await redisServer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("sends a snapshot at once and then one per interval: counters, projection status, audit lines", async () => {
    const w = watch("viewer", 200);
    await w.until("three snapshots", () => w.got.length >= 3);
    const [a, b, c] = w.got as [Snapshot, Snapshot, Snapshot];
    assert.ok(a.timeMs < b.timeMs && b.timeMs < c.timeMs, "server time moves forward");
    assert.equal(a.startedAtMs, c.startedAtMs);
    assert.deepEqual(Object.keys(a.counters!.membershipEvents).sort(), ["join", "leave", "remove"]);
    assert.deepEqual(Object.keys(a.counters!.membershipRetries).sort(), ["membership", "send"]);
    for (const k of ["conversationStatePending", "conversationStateWritten", "conversationStateFailures", "usersRebuilt", "messagesCommitted", "relayDispatched"] as const) {
      assert.equal(typeof a.counters![k], "number", k);
    }
    const p = a.projection!;
    assert.equal(typeof p.epoch, "bigint");
    assert.equal(p.partitions.length, 8);
    for (const part of p.partitions) assert.equal(part.verdict, "OK");
    assert.equal(p.pending.length, 1);
    assert.match(p.authority, /^redis-hash/);
    assert.equal(p.failure, undefined);
    assert.ok(Array.isArray(a.audit));
    w.stream.cancel();
  });

  it("counters and the audit lines move after a membership change", async () => {
    const w = watch("viewer", 200);
    const first = await w.until("first snapshot");
    const op = connect("operator");
    const g = await op.createGroup({ tenant, group: "", owner: randomUUID(), members: [] });
    await op.addMembers({ tenant, group: g.group, users: [randomUUID(), randomUUID()], dryRun: false });
    // the counter moves inside the call, the audit entry is written just before its answer
    const moved = await w.until("join counter and audit moved", (s) => joins(s) >= joins(first) + 1 && s.audit.at(-1)?.rpc.endsWith("/AddMembers") === true);
    const line = moved.audit.at(-1)!;
    assert.deepEqual([line.principal, line.rpc, line.result], [CLIENT_NAMES.operator, "/qim.admin.v1.GroupService/AddMembers", "OK"]);
    assert.deepEqual(Object.keys(line).sort(), ["principal", "result", "rpc", "time"], "an audit line carries no arguments");
    assert.ok(moved.audit.length <= 8);
    // totals: every counter of the process by metric name, summed over labels, so the join events
    // appear there as the labelled field shows them
    const t = moved.counters!.totals;
    const labelled = moved.counters!.membershipEvents;
    assert.equal(t.qim_writer_membership_events_total, (labelled.join ?? 0) + (labelled.leave ?? 0) + (labelled.remove ?? 0));
    assert.equal(t.qim_relay_dispatched_total, moved.counters!.relayDispatched);
    for (const name of ["qim_writer_messages_committed_total", "qim_session_conversation_state_pending_total"]) assert.equal(typeof t[name], "number", name);
    w.stream.cancel();
  });

  it("every role may watch and watching writes no audit entry; a certificate without a known role is refused and audited", async () => {
    const before = (await server.audit.tail(1000)).length;
    for (const who of ["viewer", "drill", "operator", "admin"] as const) {
      const w = watch(who, 200);
      await w.until(`${who}: a snapshot`, () => w.got.length >= 2);
      w.stream.cancel();
    }
    assert.equal((await server.audit.tail(1000)).length, before, "snapshots are not audited");
    for (const who of ["noRole", "unknownRole"] as const) {
      const err = await watch(who).failed(who);
      assert.equal(err.code, grpc.status.PERMISSION_DENIED, `${who}: ${err.details}`);
    }
    const refusals = (await server.audit.tail(10)).filter((e) => e.rpc === "/qim.admin.v1.ObserveService/Watch");
    assert.deepEqual(refusals.map((e) => [e.principal, e.result]), [[CLIENT_NAMES.noRole, "PERMISSION_DENIED"], [CLIENT_NAMES.unknownRole, "PERMISSION_DENIED"]]);
  });

  it("interval_ms: 200 to 60,000, 0 is the default; anything else is INVALID_ARGUMENT naming the field", async () => {
    for (const ms of [199, 60_001]) {
      const err = await watch("viewer", ms).failed(`interval ${ms}`);
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(errorField(err), "interval_ms");
    }
    const w = watch("viewer", 0);
    await w.until("a snapshot at the default interval");
    w.stream.cancel();
  });

  it("a cancelled stream stops the server's timer: the active watcher count returns to 0", async () => {
    for (const w of watches) w.stream.cancel();
    await eventually("no watcher left from earlier tests", () => server.observer.active === 0);
    const ws = [watch("viewer", 200), watch("drill", 200), watch("viewer", 60_000)];
    for (const w of ws) await w.until("a snapshot");
    assert.equal(server.observer.active, 3);
    for (const w of ws) w.stream.cancel();
    await eventually("every watcher gone on the server", () => server.observer.active === 0);
    for (const w of ws) {
      await eventually("stream ended", () => w.ended);
      assert.equal(w.error, undefined, "a cancel ends the stream cleanly on our side");
    }
  });

  it("three watchers cost about one status read per interval, not three; a new audit record is in the next snapshot read", async () => {
    for (const w of watches) w.stream.cancel();
    await eventually("no watcher left from earlier tests", () => server.observer.active === 0);
    // counts the reads of the real status (real Redis underneath): a spy, not a stand-in
    const projection = server.projection;
    const status = projection.status;
    let reads = 0;
    projection.status = function (this: typeof projection) {
      reads++;
      return status.call(this);
    };
    try {
      const ws = [watch("viewer", 200), watch("drill", 200), watch("operator", 200)];
      for (const w of ws) await w.until("a first snapshot");
      const from = ws.map((w) => w.got.length);
      const readsFrom = reads;
      await eventually("ten more snapshots each", () => ws.every((w, i) => w.got.length >= from[i]! + 10));
      const delivered = ws.map((w, i) => w.got.length - from[i]!);
      const read = reads - readsFrom;
      // one read per tick shared by the three, give or take the read in flight at either end
      assert.ok(read <= Math.max(...delivered) + 2, `${read} status reads for ${delivered.join(" + ")} snapshots`);
      for (const w of ws) {
        for (let i = 1; i < w.got.length; i++) assert.ok(w.got[i - 1]!.timeMs < w.got[i]!.timeMs, "no watcher gets a snapshot twice, nor an older one");
      }

      const op = connect("operator");
      const g = await op.createGroup({ tenant, group: "", owner: randomUUID(), members: [] });
      const answered = BigInt(Date.now());
      const newest = (await server.audit.tail(8)).map((e) => ({ time: e.time, principal: e.principal, rpc: e.rpc, result: e.result }));
      assert.match(server.audit.recent(1)[0]!.detail, new RegExp(g.group));
      for (const w of ws) {
        const next = await w.until("a snapshot read after the call's answer", (s) => s.timeMs > answered);
        assert.deepEqual([next.audit.at(-1)?.principal, next.audit.at(-1)?.rpc, next.audit.at(-1)?.result], [CLIENT_NAMES.operator, "/qim.admin.v1.GroupService/CreateGroup", "OK"]);
        assert.deepEqual(next.audit, newest, "the audit lines in memory are the file's newest");
      }
      for (const w of ws) w.stream.cancel();
    } finally {
      projection.status = status;
    }
  });

  it("a Redis outage ends the stream with UNAVAILABLE; once Redis is back a new stream works", async () => {
    const w = watch("viewer", 200);
    await w.until("a snapshot before the outage");
    await redisServer.kill9();
    try {
      const err = await w.failed("the stream during the outage");
      assert.equal(err.code, grpc.status.UNAVAILABLE, err.details);
      assert.equal(errorCode(err), "UNAVAILABLE");
      assert.ok(!/\n\s+at /.test(err.details), "no stack trace");
      await eventually("the failed watch is gone on the server", () => server.observer.active === 0);
    } finally {
      await redisServer.restart();
    }
    // the server's Redis client reconnects by itself; a stream opened meanwhile may still fail
    let recovered: Snapshot | undefined;
    for (let i = 0; i < 40 && !recovered; i++) {
      const again = watch("viewer", 200);
      await eventually("the new stream answers", () => again.got.length > 0 || again.ended);
      recovered = again.got[0];
      again.stream.cancel();
    }
    assert.ok(recovered, "a snapshot after Redis came back");
    assert.equal(recovered.projection!.partitions.length, 8);
  });

  it("the feed shows a server that went away as disconnected, retrying, and recovers when it is back on the same port", async () => {
    const redis2 = await startRedis();
    const port = await freePort();
    const start = () => startAdminServer(options({ redis: redis2, audit: "audit-2.log", listen: `127.0.0.1:${port}` }));
    let s2: AdminServer | undefined = await start();
    const client = connect("viewer", port);
    const states: ConnectionState[] = [];
    const views: SnapshotView[] = [];
    const fatal: unknown[] = [];
    const feed = new DashboardFeed({
      open: (ms, onSnapshot) => client.watch({ intervalMs: ms }, onSnapshot),
      intervalMs: 200,
      backoff: { initialMs: 50, maxMs: 400 },
      describe: (err) => classifyError(err, { endpoint: `localhost:${port}` }).message,
    }, { snapshot: (v) => views.push(v), state: (s) => states.push(s), fatal: (e) => fatal.push(e) });
    try {
      feed.start();
      assert.deepEqual(states[0], { kind: "connecting" });
      await eventually("two snapshots", () => views.length >= 2);
      assert.equal(views[0]!.rates, null, "no rate from a single snapshot");
      assert.deepEqual(views[1]!.rates, rates(views[0]!.snapshot, views[1]!.snapshot), "rates since the previous snapshot");
      assert.equal(typeof views[1]!.rates?.membershipEventsPerSec, "number");
      assert.deepEqual(states.at(-1), { kind: "connected" });

      // a plain watch alongside: a server shutting down ends it with UNAVAILABLE, and close() does not wait for it
      const plain = watch("viewer", 200, port);
      await plain.until("a snapshot from the second server");
      await s2.close();
      s2 = undefined;
      const err = await plain.failed("the stream of a server shutting down");
      assert.equal(err.code, grpc.status.UNAVAILABLE);

      const down = await eventually("the feed reports the loss", () => states.find((s) => s.kind === "disconnected"));
      assert.ok(down.kind === "disconnected" && down.attempt === 1 && down.retryInMs === 50, JSON.stringify(down));
      assert.match(down.error, /shutting down|cannot reach the server/);
      await eventually("a few failed attempts with growing delays", () => states.filter((s) => s.kind === "disconnected").length >= 3);
      const delays = states.flatMap((s) => (s.kind === "disconnected" ? [s.retryInMs] : []));
      for (let i = 1; i < delays.length; i++) assert.ok(delays[i]! >= delays[i - 1]! && delays[i]! <= 400, `bounded backoff: ${delays.join(", ")}`);

      const seen = views.length;
      s2 = await start();
      await eventually("snapshots again", () => views.length >= seen + 2 && states.at(-1)!.kind === "connected");
      assert.equal(fatal.length, 0);
      assert.notEqual(views[seen]!.rates, null, "the same server process: rates across the gap");
    } finally {
      feed.stop();
      await s2?.close();
      await redis2.stop();
    }
  });

  it("the feed gives up on a refused role instead of retrying", async () => {
    const fatal: unknown[] = [];
    const states: ConnectionState[] = [];
    const client = connect("noRole");
    const feed = new DashboardFeed({
      open: (ms, onSnapshot) => client.watch({ intervalMs: ms }, onSnapshot),
      intervalMs: 200,
      describe: (err) => String(err),
    }, { snapshot: () => assert.fail("no snapshot for a refused role"), state: (s) => states.push(s), fatal: (e) => fatal.push(e) });
    feed.start();
    const err = await eventually("fatal", () => fatal[0]) as grpc.ServiceError;
    assert.equal(err.code, grpc.status.PERMISSION_DENIED);
    assert.deepEqual(states, [{ kind: "connecting" }]);
    feed.stop();
  });
});
