/**
 * Issue 6, hostile input: every field of every RPC of every admin service, as the admin role over
 * mTLS. The RPCs and their request fields are enumerated from the loaded .proto service definitions
 * (every file under proto/qim/admin/v1), so a new RPC or field is fuzzed without touching this file.
 *
 * Requests are written on the wire by hand, so they can be anything the wire allows: random bytes
 * and near-UUIDs in UUID fields, huge repeated fields (100,000 users), u64 max / -1 / 2^53 + 1 in
 * versions and limits, unicode (RTL, emoji, NUL, lone surrogates, invalid UTF-8), empty messages,
 * a field sent with the wrong wire type, a field sent twice, unknown fields, truncated and garbage
 * bytes, messages above the server's 4 MiB receive limit. Two phases: a table (every extreme value
 * of its type in every field, over an otherwise valid request) and seeded random requests
 * (QIM_SEED=<n> replays one; the seed is printed).
 *
 * Every answer must be a valid result or a clean error: INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS,
 * PERMISSION_DENIED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE or RESOURCE_EXHAUSTED — never
 * INTERNAL, UNKNOWN, UNAVAILABLE or a deadline, never a stack trace in the message. Every error
 * leaves the store as it was: it writes no key but the dispatch log's (Redis keyspace notifications,
 * checked after every refused call once the server has settled; no write means an unchanged
 * storeDigest, which a full digest would take a second to show on the store this run builds — the
 * test first shows both agree on a refused and on a committed call). The server logs no failed
 * request, and its health check says SERVING at the end.
 */
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { service as healthService } from "grpc-health-check";
import type { AdminClient } from "../../admin-api/client.js";
import { OPEN_ENDED_STREAMS } from "../../server/listeners/admin-grpc/services/index.js";
import { SOAK } from "./common.js";
import { lenField, protoDir, Requests, Rng, UNDECODABLE, type MessageDesc, type Pool } from "./fuzz-wire.js";
import { startReliabilityServer, type ReliabilityServer } from "./server.js";

/** Random requests per RPC after the table. */
const RANDOM_PER_RPC = SOAK ? 1500 : 40;
const DEADLINE_MS = 120_000;
/** How long an endless stream (Watch, FollowAudit) may stay silent before it counts as accepted. */
const OPEN_ENDED_QUIET_MS = 1500;
/** QIM_FUZZ_TRACE=1: one line per call on stderr (what, how long, the answer). */
const TRACE = process.env.QIM_FUZZ_TRACE === "1";
const SERVER_MAX_RECEIVE = 4 * 1024 * 1024;
/** admin-api/client.ts: what qimctl accepts. The raw client here takes anything, and checks this. */
const CLIENT_MAX_RECEIVE = 16 * 1024 * 1024;

const CLEAN = new Set<grpc.status>([
  grpc.status.INVALID_ARGUMENT, grpc.status.NOT_FOUND, grpc.status.ALREADY_EXISTS, grpc.status.PERMISSION_DENIED,
  grpc.status.FAILED_PRECONDITION, grpc.status.ABORTED, grpc.status.OUT_OF_RANGE, grpc.status.RESOURCE_EXHAUSTED,
]);
const STATUS_NAME = Object.fromEntries(Object.entries(grpc.status).filter(([, v]) => typeof v === "number").map(([k, v]) => [v, k])) as Record<number, string>;

// ---------------------------------------------------------------------------------------------
// The services, from the .proto files
// ---------------------------------------------------------------------------------------------

interface Rpc {
  path: string;
  responseStream: boolean;
  request: MessageDesc;
  decodeResponse: (b: Buffer) => unknown;
}

function loadRpcs(): { rpcs: Rpc[]; types: Map<string, MessageDesc> } {
  const root = protoDir();
  const files = readdirSync(join(root, "qim", "admin", "v1")).filter((f) => f.endsWith(".proto")).map((f) => `qim/admin/v1/${f}`);
  const def = loadSync(files, { includeDirs: [root] }) as unknown as Record<string, Record<string, unknown>>;
  const types = new Map<string, MessageDesc>();
  const rpcs: Rpc[] = [];
  for (const [name, entry] of Object.entries(def)) {
    if (typeof entry.format === "string") {
      // a message declared inside another (GetOwnerRequest.UserRef) is only in its parent's descriptor
      const add = (full: string, t: MessageDesc) => { types.set(full, t); for (const n of t.nestedType ?? []) add(`${full}.${n.name}`, n); };
      add(name, entry.type as MessageDesc);
      continue;
    }
    for (const m of Object.values(entry) as { path: string; requestStream: boolean; responseStream: boolean; requestType: { type: MessageDesc }; responseDeserialize: (b: Buffer) => unknown }[]) {
      if (m.requestStream) throw new Error(`${m.path}: client-streaming RPCs are not fuzzed yet; extend fuzz.test.ts`);
      rpcs.push({ path: m.path, responseStream: m.responseStream, request: m.requestType.type, decodeResponse: m.responseDeserialize });
    }
  }
  return { rpcs: rpcs.sort((a, b) => a.path.localeCompare(b.path)), types };
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

interface Answer { code: grpc.status; details: string; messages: Buffer[] }

/** Paths of the server streams that do not end by themselves, from each RPC's declaration. */
const ENDLESS = OPEN_ENDED_STREAMS;

function callRaw(client: grpc.Client, rpc: Rpc, body: Buffer): Promise<Answer> {
  const identity = (b: Buffer) => b;
  const options = { deadline: Date.now() + DEADLINE_MS };
  return new Promise((resolve) => {
    if (!rpc.responseStream) {
      client.makeUnaryRequest(rpc.path, identity, identity, body, new grpc.Metadata(), options, (err, res) =>
        resolve(err ? { code: err.code, details: err.details, messages: [] } : { code: grpc.status.OK, details: "", messages: [res!] }));
      return;
    }
    const stream = client.makeServerStreamRequest(rpc.path, identity, identity, body, new grpc.Metadata(), options);
    const messages: Buffer[] = [];
    let status: grpc.StatusObject | undefined;
    let ended = false;
    const settle = () => { if (status && ended) resolve({ code: status.code, details: status.details, messages }); };
    // a stream declared endless (ObserveService.Watch, AuditService.FollowAudit, ConversationListService.WatchUser: it runs until
    // cancelled): the first message is the answer, and a stream still open and silent after
    // OPEN_ENDED_QUIET_MS (a follow with nothing to send yet) was accepted without an error —
    // waiting for the deadline instead made every FollowAudit case take DEADLINE_MS
    const openEnded = ENDLESS.has(rpc.path);
    if (openEnded) {
      const quiet = setTimeout(() => {
        if (ended || status) return;
        ended = true;
        resolve({ code: grpc.status.OK, details: "", messages });
        stream.cancel();
      }, OPEN_ENDED_QUIET_MS);
      stream.on("close", () => clearTimeout(quiet));
    }
    stream.on("data", (m: Buffer) => {
      messages.push(m);
      if (openEnded && messages.length === 1) {
        ended = true;
        resolve({ code: grpc.status.OK, details: "", messages });
        stream.cancel();
      }
    });
    stream.on("error", () => { ended = true; settle(); });
    stream.on("end", () => { ended = true; settle(); });
    stream.on("status", (s: grpc.StatusObject) => { status = s; settle(); });
  });
}

const STACK = /\n\s+at |\bat .+:\d+:\d+\)|node_modules|\/dist\/|\.js:\d+/;

describe(`issue 6 fuzz: every field of every admin RPC, as the admin role${SOAK ? " (soak)" : ""}`, () => {
  const seed = process.env.QIM_SEED !== undefined ? Number(process.env.QIM_SEED) : randomInt(2 ** 31);
  let rs: ReliabilityServer;
  let admin: AdminClient;
  let raw: grpc.Client;
  before(async () => {
    console.log(`# fuzz seed ${seed} (QIM_SEED=${seed} replays it)`);
    // the retention task's rounds write by themselves (its CMD channel directory fills from commits of
    // earlier calls) at any time: a refused call would be blamed for them. Its own tests are in test/core/retention.
    rs = await startReliabilityServer("single", { retentionIntervalMs: 0 });
    admin = rs.connect("admin");
    raw = new grpc.Client(`localhost:${rs.server.port}`,
      grpc.credentials.createSsl(Buffer.from(rs.pki.ca.certPem), Buffer.from(rs.pki.admin.keyPem), Buffer.from(rs.pki.admin.certPem)),
      { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 });
  });
  after(async () => {
    raw?.close();
    await rs?.close();
  });

  it("every answer is a valid result or a clean error; errors change nothing; the server stays up", async () => {
    assert.ok(Number.isSafeInteger(seed), `QIM_SEED must be an integer, got ${process.env.QIM_SEED}`);
    const rng = new Rng(seed);
    const { rpcs, types } = loadRpcs();
    assert.ok(rpcs.length >= 15, `RPCs found in the protos: ${rpcs.map((r) => r.path).join(", ")}`);

    // a tenant with groups, members and history, so that valid ids reach deep into the handlers
    const pool: Pool = { tenant: rng.uuid(), groups: [], users: Array.from({ length: 6 }, () => rng.uuid()) };
    for (let g = 0; g < 3; g++) {
      const group = rng.uuid();
      await admin.createGroup({ tenant: pool.tenant, group, owner: pool.users[g]!, members: pool.users.filter((_, i) => i !== g).slice(0, 4) });
      pool.groups.push(group);
      for (let i = 0; i < 3; i++) await admin.sendMessage({ tenant: pool.tenant, group, sender: pool.users[g]!, text: `seed ${i}`, clientMessageId: "", mentions: [] });
    }
    const requests = new Requests(types, pool, rng);

    // "nothing written" stands for "digest unchanged": first prove both see a write, and that a
    // refused call leaves both as they were
    await rs.settled();
    const digest0 = await rs.digest();
    await rs.writes.since(0);
    const mark0 = rs.writes.mark();
    const refused = await admin.addMembers({ tenant: pool.tenant, group: pool.groups[0]!, users: ["not-a-uuid"], dryRun: false }).catch((e: grpc.ServiceError) => e);
    assert.equal((refused as grpc.ServiceError).code, grpc.status.INVALID_ARGUMENT);
    assert.deepEqual(await rs.writes.since(mark0), []);
    assert.equal(await rs.digest(), digest0);
    await admin.addMembers({ tenant: pool.tenant, group: pool.groups[0]!, users: [rng.uuid()], dryRun: false });
    assert.ok((await rs.writes.since(mark0)).some((w) => w.startsWith("hset ") && w.includes(":grpmembers:")), "a change shows as writes");
    await rs.settled();
    assert.notEqual(await rs.digest(), digest0, "and as another digest");

    const stats = new Map<string, { calls: number; ok: number; codes: Map<string, number> }>();
    const findings: string[] = [];
    let changedDespiteError = 0;
    let mark = 0;
    let dirty = true;
    const run = async (rpc: Rpc, label: string, body: Buffer, expect?: grpc.status) => {
      const t0 = Date.now();
      if (dirty) { await rs.settled(); await rs.writes.since(0); mark = rs.writes.mark(); dirty = false; }
      const t1 = Date.now();
      const ans = await callRaw(raw, rpc, body);
      if (TRACE) process.stderr.write(`fuzz ${rpc.path} [${label.slice(0, 80)}] settle ${t1 - t0} ms, call ${Date.now() - t1} ms: ${STATUS_NAME[ans.code]} ${ans.details.slice(0, 100)}\n`);
      const st = stats.get(rpc.path) ?? { calls: 0, ok: 0, codes: new Map<string, number>() };
      stats.set(rpc.path, st);
      st.calls++;
      const name = STATUS_NAME[ans.code] ?? String(ans.code);
      st.codes.set(name, (st.codes.get(name) ?? 0) + 1);
      const where = `${rpc.path} [${label}] (${body.length} bytes)`;
      if (expect !== undefined && ans.code !== expect) findings.push(`${where}: ${name} "${ans.details}", expected ${STATUS_NAME[expect]}`);
      if (ans.code === grpc.status.OK) {
        st.ok++;
        // a result that wrote nothing set nothing in motion (the relay and the projection start
        // from writes): no need to wait for the server to settle before the next call
        if ((await rs.writes.since(mark)).length > 0) dirty = true;
        try {
          if (ans.messages.length === 0) throw new Error("no response message");
          for (const m of ans.messages) {
            if (m.length > CLIENT_MAX_RECEIVE) throw new Error(`${m.length} bytes: more than the admin client accepts (${CLIENT_MAX_RECEIVE})`);
            rpc.decodeResponse(m);
          }
        } catch (e) {
          findings.push(`${where}: OK with an invalid response: ${(e as Error).message}`);
        }
        return;
      }
      if (!CLEAN.has(ans.code)) findings.push(`${where}: ${name} "${ans.details}"`);
      if (STACK.test(ans.details)) findings.push(`${where}: a stack trace or source path in the message: ${JSON.stringify(ans.details.slice(0, 300))}`);
      const writes = await rs.writes.since(mark);
      mark = rs.writes.mark();
      if (writes.length > 0) {
        changedDespiteError++;
        findings.push(`${where}: ${name} "${ans.details}" but wrote ${writes.length} time(s): ${writes.slice(0, 5).join(", ")}`);
        dirty = true;
      }
    };

    // 1. the table: per RPC an empty message, undecodable bytes, one above the receive limit, and
    //    every extreme of every field over an otherwise valid request
    let tableCalls = 0;
    const tableStart = Date.now();
    for (const rpc of rpcs) {
      await run(rpc, "empty message", Buffer.alloc(0));
      for (const [label, bytes] of UNDECODABLE) await run(rpc, label, bytes);
      await run(rpc, "above the 4 MiB receive limit", lenField(1 << 20, Buffer.alloc(SERVER_MAX_RECEIVE + 1, 0x61)), grpc.status.RESOURCE_EXHAUSTED);
      tableCalls += 2 + UNDECODABLE.length;
      for (const f of rpc.request.field) {
        for (const [label, bytes] of requests.extremes(f)) {
          await run(rpc, `${f.name}: ${label}`, Buffer.concat([requests.valid(rpc.request, f), bytes()]));
          tableCalls++;
        }
      }
    }

    const tableMs = Date.now() - tableStart;
    // 2. seeded random requests
    let randomCalls = 0;
    const randomStart = Date.now();
    for (let i = 0; i < RANDOM_PER_RPC; i++) {
      for (const rpc of rpcs) {
        const { label, bytes } = requests.random(rpc.request);
        await run(rpc, `random #${i}: ${label}`, bytes);
        randomCalls++;
      }
    }

    const randomMs = Date.now() - randomStart;
    // the server is up and serving, and logged no failed request
    const Health = grpc.makeGenericClientConstructor(healthService, "Health");
    const health = new Health(`localhost:${rs.server.port}`, grpc.credentials.createSsl(Buffer.from(rs.pki.ca.certPem), Buffer.from(rs.pki.viewer.keyPem), Buffer.from(rs.pki.viewer.certPem))) as unknown as grpc.Client & {
      check: (req: { service: string }, cb: (err: grpc.ServiceError | null, res: { status: string }) => void) => void;
    };
    const status = await new Promise<string>((resolve, reject) => health.check({ service: "" }, (err, r) => (err ? reject(err) : resolve(r.status))));
    health.close();
    assert.equal(status, "SERVING");
    assert.equal((await admin.getGroup({ tenant: pool.tenant, group: pool.groups[0]! })).group, pool.groups[0]);
    for (const line of rs.log.filter((l) => / failed: /.test(l))) findings.push(`server log: ${line.split("\n")[0]}`);

    const total = tableCalls + randomCalls;
    for (const rpc of rpcs) {
      const st = stats.get(rpc.path)!;
      const codes = [...st.codes.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(", ");
      console.log(`# fuzz ${rpc.path}: ${st.calls} calls (${codes})`);
      // the fuzz reached the handler: something other than a refusal of the role
      assert.ok(st.ok > 0 || [...st.codes.keys()].some((c) => !["PERMISSION_DENIED", "UNIMPLEMENTED", "RESOURCE_EXHAUSTED"].includes(c)), `${rpc.path} never reached its handler`);
    }
    console.log(`# fuzz seed ${seed}${SOAK ? " soak" : ""}: ${total} calls over ${rpcs.length} RPCs (${tableCalls} table in ${(tableMs / 1000).toFixed(1)} s, ${randomCalls} random in ${(randomMs / 1000).toFixed(1)} s), `
      + `${[...stats.values()].reduce((n, s) => n + s.ok, 0)} OK; ${findings.length} findings (${changedDespiteError} changes despite an error); health SERVING`);
    assert.deepEqual(findings.slice(0, 50), [], `${findings.length} findings with seed ${seed}`);
  });
});
