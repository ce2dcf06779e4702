/**
 * Local input checks, run before any connection is opened (STYLE "Validate input locally before
 * opening a connection"). Each failure is a UsageError naming the flag as the user typed it; the
 * limits are the admin API's own (proto/qim/admin/v1/*.proto field docs), read from core/base/limits.ts as
 * the server reads them, so a request that passes here is not refused by the server for its shape.
 */
import {
  EPOCH_HISTORY_LIMIT, HISTORY_PAGE_LIMIT, InvalidArgumentError, MAX_DRILL_USERS, MAX_INITIAL_MEMBERS, MAX_MENTIONS, MAX_USERS_PER_MEMBERSHIP_CALL, MESSAGE_MAX_PAYLOAD_BYTES,
  SESSION_PAGE_LIMIT, SUMMARY_GROUPS_MAX, TAIL_AUDIT_LIMIT,
} from "../core/base/index.js";
import { checkClassName, DAY_MS, parseDurationMs, parseReason, REASON_MAX_CHARS, trimAscii } from "../core/base/index.js";
import { parseHostPort } from "../core/base/index.js";
import * as Flags from "@oclif/core/flags";
import { UsageError } from "./exit-codes.js";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const LIMITS = {
  /** ChangeMembersRequest.users: the engine's own limit (core/base), also the batch size of --from-file */
  usersPerChange: MAX_USERS_PER_MEMBERSHIP_CALL,
  /** CreateGroupRequest.members */
  initialMembers: MAX_INITIAL_MEMBERS,
  /** ReadHistoryRequest.limit */
  historyPage: HISTORY_PAGE_LIMIT,
  /** TailAuditRequest.limit */
  auditTail: TAIL_AUDIT_LIMIT.max,
  /** ListConversationSummaries: groups per call */
  summaryGroups: SUMMARY_GROUPS_MAX,
  /** SendMessageRequest.mentions: distinct users */
  mentions: MAX_MENTIONS,
  /** A message payload (the engine's maxPayloadBytes default). */
  messageBytes: MESSAGE_MAX_PAYLOAD_BYTES,
  /** ListConversationSummaries.limit when listing from the projection */
  sessionPage: SESSION_PAGE_LIMIT,
  /** GetEpochRequest.limit */
  epochBumps: EPOCH_HISTORY_LIMIT.max,
  /** RunRebuildDrillRequest: users or sample */
  drillUsers: MAX_DRILL_USERS,
  /** BumpEpochRequest.reason, RunRebuildDrillRequest.reason (characters) */
  reasonChars: REASON_MAX_CHARS,
} as const;

/** A UUID in canonical text (trimmed, lowercased, as the server takes it), or undefined when it is not one. */
export function canonicalUuid(value: string): string | undefined {
  const lower = trimAscii(value).toLowerCase();
  return UUID_RE.test(lower) ? lower : undefined;
}

/** A UUID in canonical text; any case is accepted and lowercased, as the server does. */
export function uuid(flag: string, value: string | undefined): string {
  if (value === undefined || value.trim() === "") throw new UsageError(flag, "a UUID is required");
  const id = canonicalUuid(value);
  if (id === undefined) throw new UsageError(flag, `not a UUID: ${JSON.stringify(value.slice(0, 64))} (expected 8-4-4-4-12 hex digits)`);
  return id;
}

/** A non-empty list of UUIDs, duplicates removed (first occurrence kept), at most `max` distinct. */
export function uuidList(flag: string, values: readonly string[] | undefined, max: number): string[] {
  if (!values || values.length === 0) throw new UsageError(flag, "give at least one");
  const out: string[] = [];
  const seen = new Set<string>();
  for (const v of values) {
    const id = uuid(flag, v);
    if (!seen.has(id)) {
      seen.add(id);
      out.push(id);
    }
  }
  if (out.length > max) throw new UsageError(flag, `${out.length} distinct values; at most ${max} per call`);
  return out;
}

/** Like uuidList, but an empty list is allowed. */
export function optionalUuidList(flag: string, values: readonly string[] | undefined, max: number): string[] {
  return values && values.length > 0 ? uuidList(flag, values, max) : [];
}

/** host:port, with [v6] brackets allowed; port 1–65535. */
export function endpoint(flag: string, value: string | undefined): string {
  if (value === undefined || value.trim() === "") {
    throw new UsageError(flag, "no server endpoint: give --endpoint host:port, set QIMCTL_ENDPOINT, or add a context (qimctl context set NAME --endpoint HOST:PORT …)");
  }
  const text = value.trim().replace(/^(dns:|ipv4:|ipv6:)/, "");
  const hp = parseHostPort(text);
  if (!hp || /[\s[\]]/.test(hp.host) || (hp.host.includes(":") && !/^[0-9a-fA-F:.]+$/.test(hp.host))) {
    throw new UsageError(flag, `expected host:port, got ${JSON.stringify(value.slice(0, 100))}`);
  }
  return text;
}

/** A non-empty text of at most `maxBytes` UTF-8 bytes. */
export function text(flag: string, value: string | undefined, maxBytes: number): string {
  if (value === undefined || value === "") throw new UsageError(flag, "must not be empty");
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > maxBytes) throw new UsageError(flag, `${bytes} bytes; at most ${maxBytes}`);
  return value;
}

/** A positive duration in seconds (decimals allowed), returned in milliseconds. */
export function seconds(flag: string, value: string | undefined, maxSeconds = 3600): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !Number.isFinite(n) || n <= 0 || n > maxSeconds) {
    throw new UsageError(flag, `expected seconds from 0 to ${maxSeconds} (e.g. 15 or 0.5), got ${JSON.stringify(value.slice(0, 32))}`);
  }
  return Math.round(n * 1000);
}

/**
 * A reason: one line of text, at most LIMITS.reasonChars characters; required or optional (undefined
 * when absent). The server's own check (core/text.ts parseReason), as a UsageError naming the flag.
 */
export function reason(flag: string, value: string | undefined, required: boolean): string | undefined {
  try {
    return parseReason(value, "reason", { required, maxChars: LIMITS.reasonChars }) || undefined;
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw new UsageError(flag, err.message);
    throw err;
  }
}

/** The largest uint64, the top of a proto `uint64` field's range. */
export const MAX_U64 = 0xffff_ffff_ffff_ffffn;

/**
 * A flag for a proto uint64 field, parsed exactly as a BigInt (ts-proto maps uint64 to bigint here:
 * scripts/proto-gen.sh forceLong=bigint), so the whole range 0 … 2^64−1 reaches the request; oclif's
 * Flags.integer goes through a double and loses digits past 2^53 (issue 24). A value outside
 * `min` … `max` is refused by the parser, exit 2 naming the flag; `what` names the value in that message.
 */
export function u64Flag(what: string, min: bigint, max: bigint = MAX_U64) {
  return Flags.custom<bigint>({
    helpValue: "N",
    async parse(input) {
      if (!/^\d+$/.test(input) || BigInt(input) < min || BigInt(input) > max) {
        throw new Error(`Expected ${what} from ${min} to ${max === MAX_U64 ? "2^64-1" : max} but received: ${input}`);
      }
      return BigInt(input);
    },
  });
}

/** A client gateway's URL: wss://HOST:PORT, or ws:// to a loopback address only (the node's own rule for plaintext). */
export function gatewayUrl(flag: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(flag, `not a URL: ${JSON.stringify(value.slice(0, 80))} (wss://HOST:PORT)`);
  }
  const loopback = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(url.hostname);
  if (url.protocol !== "wss:" && !(url.protocol === "ws:" && loopback)) throw new UsageError(flag, "the gateway is wss://HOST:PORT (ws:// only to a loopback address)");
  return url.href;
}

/** The longest retention age a flag takes: ten years. */
export const RETENTION_AGE_MAX_MS = 3650 * DAY_MS;

/** A retention age such as 90m, 12h, 30d (a bare number is seconds); 0 or off: no age limit. In ms. */
export function retentionAge(flag: string, value: string): number {
  const ms = parseDurationMs(value, 1000, RETENTION_AGE_MAX_MS);
  if (ms === null) throw new UsageError(flag, `expected an age from 1s to 3650d such as 90m, 12h or 30d (0 or off: no age limit), got ${JSON.stringify(value.slice(0, 32))}`);
  return ms;
}

/** A retention class name, by the server's own rule (core/base checkClassName), as a UsageError naming the flag. */
export function retentionClass(flag: string, value: string): string {
  try {
    return checkClassName(flag, value);
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw new UsageError(flag, err.message);
    throw err;
  }
}
