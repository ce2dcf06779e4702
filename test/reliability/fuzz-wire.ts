/**
 * The hand-made protobuf wire and hostile values of the fuzz suites (issue 6's admin fuzz,
 * test/reliability/fuzz.test.ts, and the client gateway's, test/gateway/fuzz.test.ts): a seeded
 * random source, fields written byte by byte (any wire type, any length), the extreme values of
 * each field type, and requests built from a message's descriptor as @grpc/proto-loader gives it.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface FieldDesc { name: string; number: number; label: string; type: string; typeName: string }
export interface MessageDesc { name: string; field: FieldDesc[]; nestedType?: MessageDesc[] }

export function protoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, "proto", "qim", "admin", "v1"))) return join(dir, "proto");
    dir = dirname(dir);
  }
  throw new Error("proto/ folder not found");
}

// ---------------------------------------------------------------------------------------------
// Seeded randomness
// ---------------------------------------------------------------------------------------------

export class Rng {
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

export const WT = { VARINT: 0, I64: 1, LEN: 2, SGROUP: 3, EGROUP: 4, I32: 5 } as const;

export function varint(v: bigint): Buffer {
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
export const tag = (field: number, wt: number) => varint((BigInt(field) << 3n) | BigInt(wt));
export const lenField = (field: number, data: Buffer) => Buffer.concat([tag(field, WT.LEN), varint(BigInt(data.length)), data]);
export const varintField = (field: number, v: bigint) => Buffer.concat([tag(field, WT.VARINT), varint(v)]);
export const fixedField = (field: number, bytes: 4 | 8, rng: Rng) => Buffer.concat([tag(field, bytes === 4 ? WT.I32 : WT.I64), rng.bytes(bytes)]);

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

export interface Pool {
  tenant: string;
  groups: string[];
  users: string[];
}

/** What a field of this name takes when valid (by name; anything else gets its type's zero). */
export function validString(f: FieldDesc, pool: Pool, rng: Rng): string {
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
export type Extreme = { label: string; bytes: () => Buffer };

export function stringExtremes(pool: Pool, rng: Rng): Extreme[] {
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

export const U64_MAX = (1n << 64n) - 1n;
export const U64_EXTREMES: [string, bigint][] = [
  ["0", 0n], ["1", 1n], ["2^31-1", 2n ** 31n - 1n], ["2^32", 2n ** 32n], ["2^53-1", 2n ** 53n - 1n], ["2^53", 2n ** 53n],
  ["2^53+1", 2n ** 53n + 1n], ["2^63-1", 2n ** 63n - 1n], ["2^63", 2n ** 63n], ["u64 max = -1", U64_MAX],
];
export const U32_EXTREMES: [string, bigint][] = [
  ["0", 0n], ["1", 1n], ["100", 100n], ["101", 101n], ["200", 200n], ["201", 201n], ["1000", 1000n], ["1001", 1001n],
  ["10000", 10000n], ["10001", 10001n], ["2^31-1", 2n ** 31n - 1n], ["2^31", 2n ** 31n], ["u32 max", 2n ** 32n - 1n],
  ["-1 (10-byte varint)", U64_MAX], ["2^32 (overflows u32)", 2n ** 32n],
];
export const BOOL_EXTREMES: [string, bigint][] = [["false", 0n], ["true", 1n], ["2", 2n], ["255", 255n], ["u64 max", U64_MAX]];

export const isRepeated = (f: FieldDesc) => f.label === "LABEL_REPEATED";
export const isNumeric = (f: FieldDesc) => ["TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_BOOL", "TYPE_ENUM", "TYPE_SINT32", "TYPE_SINT64"].includes(f.type);

export function numericExtremes(f: FieldDesc): [string, bigint][] {
  if (f.type === "TYPE_BOOL") return BOOL_EXTREMES;
  if (f.type === "TYPE_UINT32" || f.type === "TYPE_INT32" || f.type === "TYPE_ENUM" || f.type === "TYPE_SINT32") return U32_EXTREMES;
  return U64_EXTREMES;
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/** [label, the field's bytes], built when called: some are megabytes. */
export type Case = [string, () => Buffer];

export class Requests {
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
        // 3,000 at the top only: 3,000 nested in 3,000 (a ROOM_BATCH's windows of events) is a frame of gigabytes, not a test
        const n = isRepeated(f) ? rng.pick(depth === 0 ? [1, 2, 5, 3000] : [1, 2, 5]) : 1;
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
export const UNDECODABLE: [string, Buffer][] = [
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
