/**
 * Issue 6, the audit log cannot be written to or truncated through any RPC. Every RPC of every
 * service is enumerated from the loaded service definitions (proto/qim/admin/v1/*.proto: a new
 * RPC or field is covered without touching this file) and called under the admin role with junk
 * and edge values generated from each request field's type: empty, huge, negative and overflowing
 * numbers, control characters and forged JSON lines, invalid UTF-8, paths (the audit log's own,
 * traversals, a sentinel directory), plus raw bytes that are not a valid message at all. After
 * EVERY call:
 *   - the audit log's previous bytes are an unchanged prefix (it only grows), same inode, mode 0600;
 *   - what was added is whole JSON lines, each with the fields of an audit record, naming this RPC
 *     and the admin's certificate; a mutating RPC adds exactly one line, a read none;
 *   - nothing appeared in the sentinel directory or beside the audit log (no RPC argument reaches
 *     the file system).
 * Real redis-server, real server over mTLS; nothing mocked.
 */
import assert from "node:assert/strict";
import { randomUUID, X509Certificate } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { loadSync, type MethodDefinition, type PackageDefinition } from "@grpc/proto-loader";
import { AUDIT_ARGUMENTS_MAX_BYTES } from "../../server/audit.js";
import { OPEN_ENDED_STREAMS, MUTATING, RPC_ROLES } from "../../server/listeners/admin-grpc/services/index.js";
import { CLIENT_NAMES } from "../certs/fixture.js";

/** How long an endless stream may stay silent before it counts as answered (as in the fuzz test). */
const ENDLESS_QUIET_MS = 1500;
import { ROOT, startE2eServer, type E2eServer } from "../e2e/qimctl.js";

interface FieldDescriptor {
  name: string;
  type: string;
  label: string;
  typeName: string;
}
type AnyMethod = MethodDefinition<object, object> & { requestType: { type: { field: FieldDescriptor[] } } };

const PROTO_DIR = path.join(ROOT, "proto");
/** The admin server's grpc.max_receive_message_length. */
const MAX_RECEIVE = 4 * 1024 * 1024;
const AUDIT_FIELDS = ["time", "principal", "role", "rpc", "arguments", "result", "detail", "durationMs", "requestId", "fingerprint"];
const STATUS_NAMES = new Set(Object.keys(grpc.status).filter((k) => Number.isNaN(Number(k))).concat("OK"));

/** Every RPC of every service in the admin API's protos, by full path. */
function loadRpcs(): { pkg: PackageDefinition; rpcs: Map<string, AnyMethod> } {
  const dir = path.join(PROTO_DIR, "qim", "admin", "v1");
  const files = readdirSync(dir).filter((f) => f.endsWith(".proto")).map((f) => `qim/admin/v1/${f}`);
  const pkg = loadSync(files, { includeDirs: [PROTO_DIR], keepCase: true, longs: String, enums: String, defaults: false, oneofs: true });
  const rpcs = new Map<string, AnyMethod>();
  for (const def of Object.values(pkg)) {
    if ("format" in def) continue; // a message or enum type, not a service
    for (const m of Object.values(def as Record<string, AnyMethod>)) rpcs.set(m.path, m);
  }
  return { pkg, rpcs };
}

describe("the audit log only grows, by whole JSON lines, whatever any RPC is sent", { timeout: 600_000 }, () => {
  let dir: string;
  let sentinel: string;
  let e2e: E2eServer;
  let auditPath: string;
  let client: grpc.Client;
  let adminFingerprint: string;
  const tenant = randomUUID();
  const owner = randomUUID();
  const member = randomUUID();
  let group = "";

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-audit-tamper-"));
    sentinel = path.join(dir, "sentinel");
    mkdirSync(sentinel);
    e2e = await startE2eServer(path.join(dir, "server"));
    auditPath = e2e.server.audit.path;
    const pem = (who: "ca" | "admin", what: "certPath" | "keyPath") => readFileSync(e2e.pki[who][what]);
    client = new grpc.Client(e2e.endpoint, grpc.credentials.createSsl(pem("ca", "certPath"), pem("admin", "keyPath"), pem("admin", "certPath")));
    adminFingerprint = new X509Certificate(pem("admin", "certPath")).fingerprint256;
    const g = await e2e.server.conversations.createGroup({ tenant, owner, members: [member] });
    group = g.group;
  });

  after(async () => {
    client?.close();
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("every RPC of every service, called with junk and edge arguments under the admin role", async () => {
    const { pkg, rpcs } = loadRpcs();
    // the enumeration and the server's authorisation table name the same RPCs: nothing is served unlisted
    assert.deepEqual([...rpcs.keys()].sort(), Object.keys(RPC_ROLES).sort(), "the protos and RPC_ROLES list the same RPCs");
    assert.ok(rpcs.size >= 15);

    // no request field anywhere is a file or a path: an argument never names something on disk
    // a message declared inside another (GetOwnerRequest.UserRef) is only in its parent's descriptor
    type MessageType = { name: string; field: FieldDescriptor[]; nestedType?: MessageType[] };
    const types = new Map<string, MessageType>();
    const addType = (full: string, t: MessageType) => { types.set(full, t); for (const n of t.nestedType ?? []) addType(`${full}.${n.name}`, n); };
    for (const [k, v] of Object.entries(pkg)) if ((v as { type?: MessageType }).type?.field) addType(k, (v as { type: MessageType }).type);
    const messageFields = (typeName: string): FieldDescriptor[] => {
      const t = types.get(typeName) ?? [...types.entries()].find(([k]) => k.endsWith(`.${typeName}`))?.[1];
      assert.ok(t, `message type ${typeName}`);
      return t.field;
    };
    for (const [p, m] of rpcs) {
      const names = m.requestType.type.field.flatMap((f) => [f.name, ...(f.type === "TYPE_MESSAGE" ? messageFields(f.typeName).map((n) => `${f.name}.${n.name}`) : [])]);
      for (const n of names) assert.doesNotMatch(n, /path|file|dir|report|log|output|dest/i, `${p} has a field ${n} that looks like a file`);
    }

    const huge = "A".repeat(64 * 1024);
    const paths = [auditPath, `${auditPath}.1`, path.join(sentinel, "created-by-rpc"), `../../../../..${sentinel}/traversal`, `file://${sentinel}/url`, "/dev/stdout", "/proc/self/fd/1"];
    const STRINGS = [
      "", " ", "x", "not-a-uuid", randomUUID(), tenant, group, owner, huge, "é漢字🙂", "\u0000", "\ud800",
      "line\n{\"time\":\"forged\",\"rpc\":\"forged\"}\n", "\r\n\r\n", "%s%n%x", "${process.exit(1)}", "'; DROP TABLE audit; --",
      "projection", "checkpoints", "both", ...paths,
    ];
    const UINT32 = [0, 1, 50, 1000, 1001, 10_000, 10_001, 2 ** 31, 2 ** 32 - 1, -1];
    const UINT64 = ["0", "1", "2", "9007199254740993", "9223372036854775808", "18446744073709551615"];
    const INT = [0, -1, 2 ** 31 - 1, -(2 ** 31)];
    const valuesOf = (f: FieldDescriptor): unknown[] => {
      const scalar = (): unknown[] => {
        switch (f.type) {
          case "TYPE_STRING": return STRINGS;
          case "TYPE_UINT32": case "TYPE_FIXED32": return UINT32;
          case "TYPE_UINT64": case "TYPE_FIXED64": case "TYPE_INT64": case "TYPE_SINT64": case "TYPE_SFIXED64": return UINT64;
          case "TYPE_INT32": case "TYPE_SINT32": case "TYPE_SFIXED32": return INT;
          case "TYPE_BOOL": return [true, false];
          case "TYPE_BYTES": return [Buffer.alloc(0), Buffer.from([0xff, 0xfe, 0x00, 0x0a]), Buffer.alloc(64 * 1024, 0x41)];
          case "TYPE_DOUBLE": case "TYPE_FLOAT": return [0, -1, 1e308, Number.NaN];
          case "TYPE_ENUM": return [0, 1, 99];
          case "TYPE_MESSAGE": {
            const inner = messageFields(f.typeName);
            const junk = (i: number) => Object.fromEntries(inner.map((g) => [g.name, valuesOf({ ...g, label: "LABEL_OPTIONAL" })[i % valuesOf({ ...g, label: "LABEL_OPTIONAL" }).length]]));
            return [{}, junk(0), junk(3), junk(8), junk(20), { tenant, user: owner }];
          }
          default: throw new Error(`no junk for ${f.type} (${f.name}): add it here`);
        }
      };
      if (f.label !== "LABEL_REPEATED") return scalar();
      const s = scalar();
      return [[], [s[0]], s.slice(0, 6), s, Array.from({ length: 1001 }, (_, i) => s[i % s.length]), Array.from({ length: 20_000 }, () => s[0])];
    };
    /** Plausible values where a name suggests one, so that junk in one field gets past the others. */
    const baselineOf = (m: AnyMethod): Record<string, unknown> => {
      const plausible: Record<string, unknown> = { tenant, group, owner, user: member, sender: owner, users: [randomUUID()], members: [member], text: "hello", reason: "junk test" };
      return Object.fromEntries(m.requestType.type.field.filter((f) => f.name in plausible && f.type === "TYPE_STRING").map((f) => [f.name, plausible[f.name]]));
    };
    const raws = [
      Buffer.alloc(0),
      Buffer.from([0xff, 0xff, 0xff, 0xff]),
      Buffer.from([0x0a, 0x7f, 0x41]), // field 1, length 127, 1 byte: truncated
      Buffer.from([0x0a, 0x04, 0xff, 0xfe, 0xc0, 0x80]), // field 1 as invalid UTF-8
      Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), // field 1 varint 2^64 − 1
      Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]), // field 2 varint, 10 bytes
      Buffer.from([0xfa, 0xff, 0xff, 0xff, 0x0f, 0x00]), // a huge unknown field number
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
    ];

    let prev = readFileSync(auditPath);
    const ino = statSync(auditPath).ino;
    const besideAudit = readdirSync(path.dirname(auditPath)).sort();
    const metadata = () => {
      const md = new grpc.Metadata();
      md.set("x-audit-path", sentinel);
      md.set("qim-audit-truncate", "1");
      return md;
    };
    let calls = 0;
    let lines = 0;
    const violations: string[] = [];
    const outcomes = new Map<string, number>();
    /** Well-formed requests answered INTERNAL/UNKNOWN: a server bug (junk bytes are INTERNAL "failed to parse", by grpc-js). */
    const internal: string[] = [];

    /** The invariants after one call; `expectLines` is the exact number of lines it must have added, or null for "at most one". */
    const check = (rpc: string, what: string, expectLines: number | null) => {
      const v = (msg: string) => violations.push(`${rpc} ${what}: ${msg}`);
      const st = statSync(auditPath);
      if ((st.mode & 0o777) !== 0o600) v(`mode ${(st.mode & 0o777).toString(8)}`);
      if (st.ino !== ino) v("the audit log was replaced (another inode)");
      const now = readFileSync(auditPath);
      if (now.length < prev.length || !now.subarray(0, prev.length).equals(prev)) {
        v(`the previous ${prev.length} bytes are not an unchanged prefix`);
        prev = now;
        return;
      }
      const added = now.subarray(prev.length).toString("utf8");
      prev = now;
      if (added !== "" && !added.endsWith("\n")) v(`added bytes do not end a line: ${JSON.stringify(added.slice(-80))}`);
      const newLines = added.split("\n").filter((l) => l !== "");
      lines += newLines.length;
      if (expectLines !== null ? newLines.length !== expectLines : newLines.length > 1) v(`added ${newLines.length} line(s), expected ${expectLines ?? "at most 1"}`);
      for (const l of newLines) {
        if (Buffer.byteLength(l) > AUDIT_ARGUMENTS_MAX_BYTES + 16 * 1024) v(`a line of ${Buffer.byteLength(l)} bytes: the arguments are not bounded`);
        let rec: Record<string, unknown>;
        try {
          rec = JSON.parse(l) as Record<string, unknown>;
        } catch {
          v(`a line is not JSON: ${l.slice(0, 120)}`);
          continue;
        }
        if (JSON.stringify(Object.keys(rec)) !== JSON.stringify(AUDIT_FIELDS)) v(`fields ${Object.keys(rec).join(",")}`);
        if (typeof rec.time !== "string" || Number.isNaN(Date.parse(rec.time))) v(`time ${String(rec.time)}`);
        if (rec.rpc !== rpc) v(`rpc ${String(rec.rpc)}`);
        if (rec.principal !== CLIENT_NAMES.admin || rec.role !== "admin" || rec.fingerprint !== adminFingerprint) v(`principal ${String(rec.principal)}/${String(rec.role)}/${String(rec.fingerprint)}`);
        if (typeof rec.result !== "string" || !STATUS_NAMES.has(rec.result)) v(`result ${String(rec.result)}`);
        if (typeof rec.detail !== "string" || typeof rec.durationMs !== "number" || !(rec.durationMs >= 0)) v("detail/durationMs");
        if (typeof rec.requestId !== "string" || !/^[0-9a-f-]{36}$/.test(rec.requestId)) v(`requestId ${String(rec.requestId)}`);
        if (typeof rec.arguments !== "object" || rec.arguments === null) v("arguments is not an object");
      }
    };

    const callOnce = (rpc: string, m: AnyMethod, request: unknown, raw: boolean): Promise<string> => new Promise((resolve) => {
      const serialize = raw ? (b: Buffer) => b : (r: object) => m.requestSerialize(r);
      const deserialize = (b: Buffer) => b;
      const options = { deadline: Date.now() + 60_000 };
      const done = (err: grpc.ServiceError | null) => resolve(err ? grpc.status[err.code] ?? String(err.code) : "OK");
      if (m.responseStream) {
        const stream = client.makeServerStreamRequest(rpc, serialize as (v: unknown) => Buffer, deserialize, request, metadata(), options);
        // a stream declared endless (Watch, FollowAudit, WatchUser) runs until cancelled: its first
        // message is the answer, and one still open and silent after ENDLESS_QUIET_MS (nothing to
        // send yet) was accepted; the cancel is ours, not a failure
        const openEnded = OPEN_ENDED_STREAMS.has(rpc);
        const quiet = openEnded ? setTimeout(() => stream.cancel(), ENDLESS_QUIET_MS) : undefined;
        stream.on("data", () => { if (openEnded) stream.cancel(); });
        stream.on("error", (err: grpc.ServiceError) => { clearTimeout(quiet); done(openEnded && err.code === grpc.status.CANCELLED ? null : err); });
        stream.on("end", () => { clearTimeout(quiet); done(null); });
      } else {
        client.makeUnaryRequest(rpc, serialize as (v: unknown) => Buffer, deserialize, request, metadata(), options, (err) => done(err));
      }
    });

    const perRpc: string[] = [];
    for (const [rpc, m] of rpcs) {
      const t0 = process.hrtime.bigint();
      const calls0 = calls;
      const mutating = MUTATING.has(rpc);
      const requests: { what: string; req: Record<string, unknown> }[] = [{ what: "{}", req: {} }, { what: "baseline", req: baselineOf(m) }];
      for (const f of m.requestType.type.field) {
        valuesOf(f).forEach((value, i) => requests.push({ what: `${f.name}[${i}]`, req: { ...baselineOf(m), [f.name]: value } }));
      }
      const most = Math.max(0, ...m.requestType.type.field.map((f) => valuesOf(f).length));
      for (let i = 0; i < most; i++) {
        requests.push({ what: `all[${i}]`, req: Object.fromEntries(m.requestType.type.field.map((f) => [f.name, valuesOf(f)[i % valuesOf(f).length]])) });
      }
      for (const { what, req } of requests) {
        let size: number;
        try {
          size = m.requestSerialize(req).length;
        } catch {
          continue; // the client cannot even encode it (e.g. a uint64 out of range): nothing is sent
        }
        const outcome = await callOnce(rpc, m, req, false);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        if (outcome === "INTERNAL" || outcome === "UNKNOWN") internal.push(`${rpc} ${what}`);
        calls++;
        // over the server's 4 MiB receive limit grpc-js refuses the message before any handler runs
        const tooLarge = size > MAX_RECEIVE;
        if (tooLarge && outcome !== "RESOURCE_EXHAUSTED") violations.push(`${rpc} ${what}: ${size} bytes answered ${outcome}`);
        check(rpc, what, mutating && !tooLarge ? 1 : 0);
      }
      for (const [i, buf] of raws.entries()) {
        const outcome = await callOnce(rpc, m, buf, true);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        if (outcome === "UNKNOWN") internal.push(`${rpc} raw[${i}]`);
        calls++;
        check(rpc, `raw[${i}]`, null);
      }
      perRpc.push(`${rpc.split("/").pop()} ${calls - calls0} calls ${(Number(process.hrtime.bigint() - t0) / 1e9).toFixed(1)} s`);
    }
    console.log(`# ${perRpc.join("; ")}`);

    // TailAudit answers with what the file holds, whatever limit it is asked for
    const tail = rpcs.get("/qim.admin.v1.AuditService/TailAudit")!;
    for (const limit of [1, 7, 1000]) {
      const res = await new Promise<{ entries: { request_id: string }[] }>((resolve, reject) =>
        client.makeUnaryRequest(tail.path, (r: object) => tail.requestSerialize(r), (b: Buffer) => tail.responseDeserialize(b) as { entries: { request_id: string }[] }, { limit }, new grpc.Metadata(), { deadline: Date.now() + 30_000 },
          (err, r) => (err ? reject(err) : resolve(r!))));
      const fileIds = prev.toString("utf8").split("\n").filter((l) => l !== "").map((l) => (JSON.parse(l) as { requestId: string }).requestId);
      assert.deepEqual(res.entries.map((e) => e.request_id), fileIds.slice(-limit), `TailAudit limit ${limit}`);
      check(tail.path, `tail ${limit}`, 0);
    }

    assert.deepEqual(readdirSync(sentinel), [], "nothing was created where an argument pointed");
    assert.deepEqual(readdirSync(path.dirname(auditPath)).sort(), besideAudit, "nothing new beside the audit log");
    console.log(`# ${calls} calls over ${rpcs.size} RPCs; ${lines} audit lines appended; outcomes ${JSON.stringify(Object.fromEntries([...outcomes].sort()))}; violations ${violations.length}`);
    assert.deepEqual(internal, [], "a well-formed request is never answered INTERNAL");
    assert.deepEqual(violations, [], `${violations.length} violation(s):\n${violations.slice(0, 40).join("\n")}`);
    assert.ok(calls > 300 && lines > 100);
  });

  it("a refused caller cannot bloat the audit log: a viewer's 3.6 MB AddMembers is audited in a bounded line, and TailAudit still answers", async () => {
    const pem = (who: "ca" | "viewer", what: "certPath" | "keyPath") => readFileSync(e2e.pki[who][what]);
    const viewer = new grpc.Client(e2e.endpoint, grpc.credentials.createSsl(pem("ca", "certPath"), pem("viewer", "keyPath"), pem("viewer", "certPath")));
    const { rpcs } = loadRpcs();
    const add = rpcs.get("/qim.admin.v1.GroupService/AddMembers")!;
    const tail = rpcs.get("/qim.admin.v1.AuditService/TailAudit")!;
    try {
      const size0 = statSync(auditPath).size;
      const users = Array.from({ length: 20_000 }, (_, i) => `${i}`.padEnd(180, "x"));
      for (let i = 0; i < 3; i++) {
        const code = await new Promise<number>((resolve) => viewer.makeUnaryRequest(add.path, (r: object) => add.requestSerialize(r), (b: Buffer) => b,
          { tenant, group, users }, new grpc.Metadata(), { deadline: Date.now() + 30_000 }, (err) => resolve(err?.code ?? 0)));
        assert.equal(code, grpc.status.PERMISSION_DENIED);
      }
      const added = readFileSync(auditPath).subarray(size0).toString("utf8").split("\n").filter((l) => l !== "");
      assert.equal(added.length, 3, "each refusal audited");
      for (const l of added) {
        assert.ok(Buffer.byteLength(l) < AUDIT_ARGUMENTS_MAX_BYTES + 16 * 1024, `a ${Buffer.byteLength(l)}-byte audit line`);
        const rec = JSON.parse(l) as { principal: string; result: string; arguments: { truncated?: string; sha256?: string } };
        assert.equal(rec.principal, CLIENT_NAMES.viewer);
        assert.equal(rec.result, "PERMISSION_DENIED");
        assert.match(rec.arguments.sha256 ?? "", /^[0-9a-f]{64}$/);
      }
      // a client with gRPC's default 4 MiB receive limit can still read the newest 1,000 entries
      const entries = await new Promise<unknown[]>((resolve, reject) => client.makeUnaryRequest(tail.path, (r: object) => tail.requestSerialize(r),
        (b: Buffer) => (tail.responseDeserialize(b) as { entries: unknown[] }).entries, { limit: 1000 }, new grpc.Metadata(), { deadline: Date.now() + 30_000 },
        (err, r) => (err ? reject(err) : resolve(r!))));
      assert.ok(entries.length >= 3);
    } finally {
      viewer.close();
    }
  });
});
