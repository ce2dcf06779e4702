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
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { service as healthService } from "grpc-health-check";
import type { AdminClient } from "../../admin-api/client.js";
import { OPEN_ENDED_STREAMS } from "../../server/listeners/admin-grpc/services/index.js";
import { SOAK } from "./common.js";
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

interface FieldDesc { name: string; number: number; label: string; type: string; typeName: string }
interface MessageDesc { name: string; field: FieldDesc[]; nestedType?: MessageDesc[] }
interface Rpc {
  path: string;
  responseStream: boolean;
  request: MessageDesc;
  decodeResponse: (b: Buffer) => unknown;
}

function protoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, "proto", "qim", "admin", "v1"))) return join(dir, "proto");
    dir = dirname(dir);
  }
  throw new Error("proto/ folder not found");
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
// Seeded randomness
// ---------------------------------------------------------------------------------------------

class Rng {
  private a: number;
  constructor(seed: number) { this.a = seed >>> 0; }
  /** mulberry32 */
  next(): number {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let t = this.a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number { return Math.floor(this.next() * n); }
  chance(p: number): boolean { return this.next() < p; }
  pick<T>(xs: readonly T[]): T { return xs[this.int(xs.length)]!; }
  bytes(n: number): Buffer { const b = Buffer.alloc(n); for (let i = 0; i < n; i++) b[i] = this.int(256); return b; }
  uuid(): string {
    const h = this.bytes(16);
    h[6] = (h[6]! & 0x0f) | 0x40;
    h[8] = (h[8]! & 0x3f) | 0x80;
    const x = h.toString("hex");
    return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
  }
}

// ---------------------------------------------------------------------------------------------
// The wire, by hand
// ---------------------------------------------------------------------------------------------

const WT = { VARINT: 0, I64: 1, LEN: 2, SGROUP: 3, EGROUP: 4, I32: 5 } as const;

function varint(v: bigint): Buffer {
  const out: number[] = [];
  let x = BigInt.asUintN(64, v);
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return Buffer.from(out);
}
const tag = (field: number, wt: number) => varint((BigInt(field) << 3n) | BigInt(wt));
const lenField = (field: number, data: Buffer) => Buffer.concat([tag(field, WT.LEN), varint(BigInt(data.length)), data]);
const varintField = (field: number, v: bigint) => Buffer.concat([tag(field, WT.VARINT), varint(v)]);
const fixedField = (field: number, bytes: 4 | 8, rng: Rng) => Buffer.concat([tag(field, bytes === 4 ? WT.I32 : WT.I64), rng.bytes(bytes)]);

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

interface Pool {
  tenant: string;
  groups: string[];
  users: string[];
}

/** What a field of this name takes when valid (by name; anything else gets its type's zero). */
function validString(f: FieldDesc, pool: Pool, rng: Rng): string {
  const n = f.name.toLowerCase();
  if (n === "tenant") return pool.tenant;
  if (n === "group" || n === "groups") return rng.pick(pool.groups);
  if (["user", "users", "owner", "sender", "members"].includes(n)) return rng.pick(pool.users);
  if (n.endsWith("id")) return rng.uuid();
  if (n === "text" || n === "reason") return "fuzz";
  if (n === "wipe") return "projection";
  return "";
}

/** An extreme value, built only when picked (some are megabytes). */
type Extreme = { label: string; bytes: () => Buffer };

function stringExtremes(pool: Pool, rng: Rng): Extreme[] {
  const uuid = rng.pick(pool.users);
  const s = (label: string, text: string | (() => string)): Extreme => ({ label, bytes: () => Buffer.from(typeof text === "string" ? text : text(), "utf8") });
  const b = (label: string, bytes: () => Buffer): Extreme => ({ label, bytes });
  return [
    s("empty", ""),
    s("uuid upper-case", uuid.toUpperCase()),
    s("uuid padded", ` ${uuid}\t`),
    s("uuid + NUL", `${uuid}\0`),
    s("uuid in braces", `{${uuid}}`),
    s("uuid without dashes", uuid.replace(/-/g, "")),
    s("urn:uuid", `urn:uuid:${uuid}`),
    s("nil uuid", "00000000-0000-0000-0000-000000000000"),
    s("max uuid", "ffffffff-ffff-ffff-ffff-ffffffffffff"),
    b("16 random bytes", () => rng.bytes(16)),
    b("36 random bytes", () => rng.bytes(36)),
    b("invalid UTF-8", () => Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0x80, 0x61])),
    b("lone surrogate (WTF-8 bytes)", () => Buffer.concat([Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(uuid)])),
    s("lone surrogate (JS string)", `\ud800${uuid}\udfff`),
    s("RTL override + uuid", `\u202e${uuid}`),
    s("RTL text", "مرحبا بالعالم שלום"),
    s("emoji", "🧨💥👩‍👩‍👧‍👦🏳️‍🌈"),
    s("NUL", "\0"),
    s("control characters", "a\r\nb\x1b[31mc\x7f"),
    s("BOM + uuid", `\ufeff${uuid}`),
    s("NBSP + uuid", `\u00a0${uuid}`),
    s("full-width digits", uuid.replace(/[0-9]/g, (d) => String.fromCharCode(0xff10 + Number(d)))),
    s("redis glob", "*"),
    s("hash tag and key syntax", "{b001}qim:*:outbox"),
    s("format strings", "%s%n${x}{{x}}"),
    s("-1", "-1"),
    s("u64 max", "18446744073709551615"),
    s("1 KiB", () => "x".repeat(1024)),
    s("64 KiB + 1", () => "y".repeat(64 * 1024 + 1)),
    s("1 MiB of emoji", () => "😀".repeat(256 * 1024)),
  ];
}

const U64_MAX = (1n << 64n) - 1n;
const U64_EXTREMES: [string, bigint][] = [
  ["0", 0n], ["1", 1n], ["2^31-1", 2n ** 31n - 1n], ["2^32", 2n ** 32n], ["2^53-1", 2n ** 53n - 1n], ["2^53", 2n ** 53n],
  ["2^53+1", 2n ** 53n + 1n], ["2^63-1", 2n ** 63n - 1n], ["2^63", 2n ** 63n], ["u64 max = -1", U64_MAX],
];
const U32_EXTREMES: [string, bigint][] = [
  ["0", 0n], ["1", 1n], ["100", 100n], ["101", 101n], ["200", 200n], ["201", 201n], ["1000", 1000n], ["1001", 1001n],
  ["10000", 10000n], ["10001", 10001n], ["2^31-1", 2n ** 31n - 1n], ["2^31", 2n ** 31n], ["u32 max", 2n ** 32n - 1n],
  ["-1 (10-byte varint)", U64_MAX], ["2^32 (overflows u32)", 2n ** 32n],
];
const BOOL_EXTREMES: [string, bigint][] = [["false", 0n], ["true", 1n], ["2", 2n], ["255", 255n], ["u64 max", U64_MAX]];

const isRepeated = (f: FieldDesc) => f.label === "LABEL_REPEATED";
const isNumeric = (f: FieldDesc) => ["TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_BOOL", "TYPE_ENUM", "TYPE_SINT32", "TYPE_SINT64"].includes(f.type);

function numericExtremes(f: FieldDesc): [string, bigint][] {
  if (f.type === "TYPE_BOOL") return BOOL_EXTREMES;
  if (f.type === "TYPE_UINT32" || f.type === "TYPE_INT32" || f.type === "TYPE_ENUM" || f.type === "TYPE_SINT32") return U32_EXTREMES;
  return U64_EXTREMES;
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/** [label, the field's bytes], built when called: some are megabytes. */
type Case = [string, () => Buffer];

class Requests {
  constructor(private readonly types: Map<string, MessageDesc>, private readonly pool: Pool, readonly rng: Rng) {}

  typeOf(f: FieldDesc): MessageDesc {
    const name = f.typeName.replace(/^\./, "");
    const t = this.types.get(name) ?? [...this.types.entries()].find(([k]) => k.endsWith(`.${name}`))?.[1];
    if (!t) throw new Error(`message type ${f.typeName} not found`);
    return t;
  }

  /** One occurrence of the field with a valid value. */
  validOne(f: FieldDesc): Buffer {
    if (f.type === "TYPE_STRING") return lenField(f.number, Buffer.from(validString(f, this.pool, this.rng)));
    if (f.type === "TYPE_BYTES") return lenField(f.number, this.rng.bytes(8));
    if (f.type === "TYPE_MESSAGE") return lenField(f.number, this.valid(this.typeOf(f)));
    // numbers absent: 0 for a plain field, unset for an optional one (a present 0 is in the table)
    return Buffer.alloc(0);
  }

  /** A valid request: every field present with a valid value (one element in a repeated field). */
  valid(m: MessageDesc, except?: FieldDesc): Buffer {
    return Buffer.concat(m.field.filter((f) => f !== except).map((f) => this.validOne(f)));
  }

  /** The table: every extreme of the field's type, and the wrong wire types. */
  extremes(f: FieldDesc, nested = false): Case[] {
    const out: Case[] = [];
    const rng = this.rng;
    if (f.type === "TYPE_STRING" || f.type === "TYPE_BYTES") {
      for (const e of stringExtremes(this.pool, rng)) out.push([e.label, () => lenField(f.number, e.bytes())]);
      out.push(["wrong wire type: varint", () => varintField(f.number, 5n)]);
      out.push(["wrong wire type: fixed32", () => fixedField(f.number, 4, rng)]);
      out.push(["wrong wire type: fixed64", () => fixedField(f.number, 8, rng)]);
      out.push(["sent twice: valid, then junk", () => Buffer.concat([this.validOne(f), lenField(f.number, Buffer.from("junk"))])]);
      out.push(["sent twice: junk, then valid", () => Buffer.concat([lenField(f.number, Buffer.from("junk")), this.validOne(f)])]);
      if (isRepeated(f) && !nested) {
        const valid = () => Buffer.from(validString(f, this.pool, rng));
        const fresh = () => Buffer.from(rng.uuid());
        const many = (label: string, n: number, el: (i: number) => Buffer) => out.push([label, () => Buffer.concat(Array.from({ length: n }, (_, i) => lenField(f.number, el(i))))]);
        many("1,000 distinct UUIDs", 1000, fresh);
        many("1,001 distinct UUIDs", 1001, fresh);
        let thousand: Buffer[] = [];
        many("1,001 entries, 1,000 distinct", 1001, (i) => { if (i === 0) thousand = Array.from({ length: 1000 }, fresh); return thousand[i % 1000]!; });
        many("10,001 distinct UUIDs", 10_001, fresh);
        many("100,000 UUIDs", 100_000, fresh);
        many("100,000 times the same valid id", 100_000, valid);
        many("valid ids and one random-bytes id", 5, (i) => (i === 3 ? rng.bytes(16) : valid()));
      }
    } else if (isNumeric(f)) {
      for (const [label, v] of numericExtremes(f)) out.push([label, () => varintField(f.number, v)]);
      out.push(["wrong wire type: string", () => lenField(f.number, Buffer.from("12"))]);
      out.push(["wrong wire type: fixed32", () => fixedField(f.number, 4, rng)]);
      out.push(["wrong wire type: fixed64", () => fixedField(f.number, 8, rng)]);
      out.push(["11-byte varint", () => Buffer.concat([tag(f.number, WT.VARINT), Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])])]);
      out.push(["sent twice: 1 then u64 max", () => Buffer.concat([varintField(f.number, 1n), varintField(f.number, U64_MAX)])]);
      out.push(["packed (as a length-delimited list)", () => lenField(f.number, Buffer.concat([varint(1n), varint(U64_MAX)]))]);
    } else if (f.type === "TYPE_DOUBLE") {
      const double = (v: number) => { const b = Buffer.alloc(8); b.writeDoubleLE(v); return Buffer.concat([tag(f.number, WT.I64), b]); };
      for (const [label, v] of [["NaN", NaN], ["+Infinity", Infinity], ["-Infinity", -Infinity], ["-1", -1], ["-0", -0], ["0.5", 0.5], ["2", 2], ["1e308", 1e308], ["smallest subnormal", 5e-324]] as const) {
        out.push([label, () => double(v)]);
      }
      out.push(["wrong wire type: varint", () => varintField(f.number, 1n)]);
      out.push(["wrong wire type: string", () => lenField(f.number, Buffer.from("0.5"))]);
      out.push(["wrong wire type: fixed32", () => fixedField(f.number, 4, rng)]);
    } else if (f.type === "TYPE_MESSAGE") {
      const t = this.typeOf(f);
      out.push(["empty message", () => lenField(f.number, Buffer.alloc(0))]);
      out.push(["garbage message", () => lenField(f.number, Buffer.from([0xff, 0xff, 0xff]))]);
      out.push(["wrong wire type: varint", () => varintField(f.number, 1n)]);
      if (!nested) {
        for (const inner of t.field) {
          for (const [label, bytes] of this.extremes(inner, true)) {
            if (label.includes("MiB")) continue; // huge nested strings: one level up covers them
            out.push([`.${inner.name} ${label}`, () => lenField(f.number, Buffer.concat([this.valid(t, inner), bytes()]))]);
          }
        }
      }
      if (isRepeated(f)) {
        out.push(["10,001 elements", () => Buffer.concat(Array.from({ length: 10_001 }, () => lenField(f.number, this.valid(t))))]);
        out.push(["100,000 elements (above 4 MiB)", () => Buffer.concat(Array.from({ length: 100_000 }, () => lenField(f.number, this.valid(t))))]);
      }
    }
    return out;
  }

  /** A random request: each field absent, valid, extreme or of the wrong wire type; sometimes corrupted. */
  random(m: MessageDesc, depth = 0): { label: string; bytes: Buffer } {
    const rng = this.rng;
    const parts: Buffer[] = [];
    const labels: string[] = [];
    for (const f of m.field) {
      const r = rng.next();
      if (r < 0.2) continue;
      if (r < 0.55) { parts.push(this.validOne(f)); continue; }
      if (f.type === "TYPE_MESSAGE" && depth < 2) {
        const n = isRepeated(f) ? rng.pick([1, 2, 5, 3000]) : 1;
        for (let i = 0; i < n; i++) parts.push(lenField(f.number, this.random(this.typeOf(f), depth + 1).bytes));
        labels.push(`${f.name}×${n}`);
        continue;
      }
      if (isRepeated(f) && f.type === "TYPE_STRING" && rng.chance(0.4)) {
        const n = rng.pick([0, 1, 3, 100, 1001, 10_001, 100_000]);
        const mode = rng.pick(["valid", "fresh", "junk", "mixed"] as const);
        const ex = stringExtremes(this.pool, rng).filter((e) => !e.label.includes("iB"));
        for (let i = 0; i < n; i++) {
          const el = mode === "valid" ? Buffer.from(validString(f, this.pool, rng)) : mode === "fresh" ? Buffer.from(rng.uuid())
            : mode === "junk" ? rng.pick(ex).bytes() : (rng.chance(0.9) ? Buffer.from(rng.uuid()) : rng.pick(ex).bytes());
          parts.push(lenField(f.number, el));
        }
        labels.push(`${f.name}: ${n} ${mode}`);
        continue;
      }
      // the megabyte cases now and then only
      const cases = this.extremes(f, depth > 0).filter(([label]) => !/MiB|100,000|10,001/.test(label) || rng.chance(0.05));
      const [label, bytes] = rng.pick(cases);
      parts.push(bytes());
      labels.push(`${f.name}: ${label}`);
    }
    if (rng.chance(0.1)) {
      const field = 100 + rng.int(1 << 20);
      parts.push(rng.pick([varintField(field, 7n), lenField(field, rng.bytes(rng.int(50))), fixedField(field, 4, rng), fixedField(field, 8, rng)]));
      labels.push(`unknown field ${field}`);
    }
    if (rng.chance(0.2)) for (let i = parts.length - 1; i > 0; i--) { const j = rng.int(i + 1); [parts[i], parts[j]] = [parts[j]!, parts[i]!]; }
    let bytes = Buffer.concat(parts);
    if (depth === 0 && rng.chance(0.12) && bytes.length > 0) {
      const how = rng.int(3);
      if (how === 0) { bytes = bytes.subarray(0, rng.int(bytes.length)); labels.push("truncated"); }
      else if (how === 1) { bytes = Buffer.from(bytes); bytes[rng.int(bytes.length)] = rng.int(256); labels.push("one byte flipped"); }
      else { bytes = Buffer.concat([bytes, rng.bytes(1 + rng.int(8))]); labels.push("garbage appended"); }
    }
    return { label: labels.join(", ") || "valid", bytes };
  }
}

/** Requests that are not protobuf of any message, or not the message they claim. */
const UNDECODABLE: [string, Buffer][] = [
  ["one 0xff byte", Buffer.from([0xff])],
  ["length beyond the end", Buffer.from([0x0a, 0x05, 0x61])],
  ["wire type 7", Buffer.from([0x0f, 0x00])],
  ["wire type 6", Buffer.from([0x0e, 0x00])],
  ["start group without end", Buffer.from([0x0b])],
  ["end group without start", Buffer.from([0x0c])],
  ["overlong tag varint", Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])],
  ["field 0", Buffer.from([0x00, 0x01])],
  ["unterminated varint", Buffer.from([0x08, 0xff])],
];

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
    rs = await startReliabilityServer("single");
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
