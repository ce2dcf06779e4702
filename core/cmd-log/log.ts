import {
  CMD_MAX_PAYLOAD_BYTES, CMD_MAX_RECIPIENTS, hexToUuid, InternalError, InvalidArgumentError, newMessageId, newUuid, NotFoundError, parseUuid, REDIS_CALL_MEMBER_BUDGET, uuidToHex,
  type KeySpace, type Uuid,
} from "../base/index.js";
import { groupDissolvedError, parseMemberValue } from "../conversation/index.js";
import type { RedisStore } from "../store/index.js";
import { cmdChannelKeys, sourceGroupOf, type CmdChannelKeys } from "./keys.js";
import { logMetrics } from "./metrics.js";
import { parseChannelType, parseCommandChannelId } from "./channel.js";
import { commitCmdScript } from "./scripts.js";
import { type CmdMessage, type CmdMessageSource, type CmdSendRequest, type CommandChannelKey } from "./types.js";

/** How long the bucket's recent-commit index keeps a commit: the farthest back a slot's recovery can look. */
export const CMD_RECENT_RETENTION_MS = 24 * 60 * 60 * 1000;
/** The longest client_msg_no (printable ASCII). */
export const CMD_CLIENT_MSG_NO_MAX_CHARS = 128;

export interface CmdLogOptions {
  maxRecipients?: number;
  retentionMs?: number;
  maxPayloadBytes?: number;
  /** The timestamp of a NoPersist message (durable ones take Redis TIME). */
  now?: () => number;
}

/** flags of a history entry: bit 0 red_dot, bit 1 sync_once. */
const RED_DOT = 1;
const SYNC_ONCE = 2;
const PRINTABLE = /^[\x21-\x7e]+$/;

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string) => Buffer.from(s, "base64").toString("utf8");

function splitRecipients(concat: string): Uuid[] {
  const out: Uuid[] = [];
  for (let i = 0; i < concat.length; i += 32) out.push(hexToUuid(concat.slice(i, i + 32)));
  return out;
}

/** Entries a filtered load reads per call (a user's messages may be sparse in a shared channel). */
export const CMD_LOAD_PAGE = 256;

/** Whether an entry's recipients (field 7: 32-hex ids concatenated) name the user, without decoding the entry. */
function entryNames(entry: string, userHex: string): boolean {
  let start = 0;
  for (let i = 0; i < 6; i++) start = entry.indexOf("|", start) + 1;
  const end = entry.indexOf("|", start);
  for (let at = entry.indexOf(userHex, start); at !== -1 && at < end; at = entry.indexOf(userHex, at + 1)) {
    if ((at - start) % 32 === 0) return true;
  }
  return false;
}

/**
 * The answer to a retry of a message whose history entry retention removed once every recipient
 * had acknowledged it (issue 26): its seq, commit time and message id from the idempotency value
 * "seq|timestampMs|messageIdHex"; the payload and flags are the retry's (a client_msg_no names one
 * message), the recipients none (all of them have it). A value of the old form ("seq" alone)
 * leaves with its history entry (lua/retention/trimCmdHistory-5.lua), so it never comes here.
 */
function trimmedDuplicate(base: Omit<CmdMessage, "messageSeq" | "timestampMs" | "noPersist" | "recipients">, seq: number, idem: string, channel: CommandChannelKey): CmdMessage {
  const m = /^(\d+)\|(\d+)\|([0-9a-f]{32})$/.exec(idem);
  if (!m) throw new InternalError(`CMD message ${base.clientMsgNo} of ${channel.channelId} was committed at seq ${seq} but its history entry is gone`);
  return { ...base, messageId: hexToUuid(m[3]!), messageSeq: seq, timestampMs: Number(m[2]), noPersist: false, recipients: [] };
}

/** A cmdhist member's seq and recipients only (fields 1 and 7), without decoding its payload. */
export function cmdEntryAudience(entry: string): { seq: number; recipients: Uuid[] } {
  let start = 0;
  for (let i = 0; i < 6; i++) start = entry.indexOf("|", start) + 1;
  return { seq: Number(entry.slice(0, entry.indexOf("|"))), recipients: splitRecipients(entry.slice(start, entry.indexOf("|", start))) };
}

/** Decodes one cmdhist member (lua/cmd-sync/commitCmd-6.lua's entry). */
export function decodeCmdEntry(tenant: Uuid, channel: CommandChannelKey, entry: string): CmdMessage {
  const f = entry.split("|");
  if (f.length !== 8) throw new InternalError(`malformed CMD history entry of ${channel.channelId}: ${entry.slice(0, 80)}`);
  const flags = Number(f[3]);
  return {
    tenant,
    channel: { channelId: channel.channelId, channelType: channel.channelType },
    messageSeq: Number(f[0]),
    messageId: hexToUuid(f[1]!),
    clientMsgNo: unb64(f[5]!),
    from: f[4] === "" ? null : hexToUuid(f[4]!),
    timestampMs: Number(f[2]),
    redDot: (flags & RED_DOT) !== 0,
    syncOnce: (flags & SYNC_ONCE) !== 0,
    noPersist: false,
    payload: new Uint8Array(Buffer.from(f[7]!, "base64")),
    recipients: splitRecipients(f[6]!),
  };
}

/**
 * The durable CMD log (docs/cmd-sync-log.md): per channel a seq from 1, a history entry per message
 * with the audience frozen at allocation, idempotency by client_msg_no, and the bucket's
 * recent-commit index the owners' catch-up scan reads. NoPersist messages are resolved (recipients,
 * id, time) and returned with seq 0, nothing written.
 */
export class CmdLog implements CmdMessageSource {
  readonly maxRecipients: number;
  readonly retentionMs: number;
  readonly maxPayloadBytes: number;
  private readonly now: () => number;

  constructor(private readonly store: RedisStore, readonly keys: KeySpace, opts: CmdLogOptions = {}) {
    this.maxRecipients = opts.maxRecipients ?? CMD_MAX_RECIPIENTS;
    this.retentionMs = opts.retentionMs ?? CMD_RECENT_RETENTION_MS;
    this.maxPayloadBytes = opts.maxPayloadBytes ?? CMD_MAX_PAYLOAD_BYTES;
    this.now = opts.now ?? Date.now;
  }

  channelKeys(tenant: Uuid, channel: CommandChannelKey): CmdChannelKeys {
    return cmdChannelKeys(this.keys, tenant, channel);
  }

  /** Validates everything before any write; throws InvalidArgumentError naming the field, NotFoundError for a missing source group. */
  async commit(req: CmdSendRequest): Promise<{ message: CmdMessage; duplicate: boolean }> {
    const tenant = parseUuid(req.tenant, "tenant");
    const channel: CommandChannelKey = { channelType: parseChannelType(req.channelType, "channelType"), channelId: parseCommandChannelId(req.channelId, "channelId") };
    const from = req.from === null || req.from === undefined ? null : parseUuid(req.from, "from");
    if (!(req.payload instanceof Uint8Array)) throw new InvalidArgumentError("payload", "payload must be bytes");
    if (req.payload.length > this.maxPayloadBytes) throw new InvalidArgumentError("payload", `payload is ${req.payload.length} bytes; the limit is ${this.maxPayloadBytes}`);
    if (req.clientMsgNo !== undefined && (typeof req.clientMsgNo !== "string" || req.clientMsgNo.length > CMD_CLIENT_MSG_NO_MAX_CHARS || !PRINTABLE.test(req.clientMsgNo))) {
      throw new InvalidArgumentError("clientMsgNo", `clientMsgNo must be 1 to ${CMD_CLIENT_MSG_NO_MAX_CHARS} printable ASCII characters without spaces`);
    }
    const clientMsgNo = req.clientMsgNo ?? newUuid();
    const group = sourceGroupOf(channel);
    let explicit: Uuid[] | null = null;
    if (req.to === null || req.to === undefined) {
      if (group === null) {
        throw new InvalidArgumentError("to", `a send without recipients goes to the source group's members: its channel must be of type 2 with a group id (UUID) as its source, not ${channel.channelId} type ${channel.channelType}`);
      }
    } else {
      if (!Array.isArray(req.to) || req.to.length === 0) throw new InvalidArgumentError("to", "to must name at least one recipient (or be left out to send to the source group's members)");
      explicit = [...new Set(req.to.map((u, i) => parseUuid(u, `to[${i}]`)))].sort();
      if (explicit.length > this.maxRecipients) throw new InvalidArgumentError("to", `to names ${explicit.length} distinct recipients; the limit is ${this.maxRecipients}`);
    }
    const redDot = req.redDot ?? false;
    const syncOnce = req.syncOnce ?? true;
    const k = this.channelKeys(tenant, channel);
    const messageId = newMessageId();
    const base = { tenant, channel, messageId, clientMsgNo, from, redDot, syncOnce, payload: req.payload };

    if (req.noPersist === true) {
      const recipients = explicit ?? await this.activeMembers(tenant, group!, k);
      logMetrics.commits.inc({ outcome: "no_persist" });
      return { message: { ...base, messageSeq: 0, timestampMs: this.now(), noPersist: true, recipients }, duplicate: false };
    }
    const r = await commitCmdScript.run(this.store.clientFor(k.tag), {
      seq: k.seq, hist: k.hist, idem: k.idem, recent: k.recent, grpmembers: explicit === null ? k.grpmembers! : k.hist, grpmeta: explicit === null ? k.grpmeta! : k.hist,
    }, {
      groupSourced: explicit === null, clientMsgNo, messageIdHex: uuidToHex(messageId), flags: (redDot ? RED_DOT : 0) | (syncOnce ? SYNC_ONCE : 0),
      fromHex: from === null ? "" : uuidToHex(from), clientMsgNoB64: b64(clientMsgNo), payloadB64: Buffer.from(req.payload).toString("base64"),
      recentRef: k.recentRef, retentionMs: this.retentionMs, maxRecipients: this.maxRecipients, recipientsHex: explicit === null ? "" : explicit.map(uuidToHex).join(""),
    });
    switch (r.status) {
      case "OK":
        logMetrics.commits.inc({ outcome: "durable" });
        return { message: { ...base, messageSeq: r.seq, timestampMs: r.timestampMs, noPersist: false, recipients: splitRecipients(r.recipientsHex) }, duplicate: false };
      case "DUPLICATE":
        logMetrics.commits.inc({ outcome: "duplicate" });
        if (r.entry !== "") return { message: decodeCmdEntry(tenant, channel, r.entry), duplicate: true };
        return { message: trimmedDuplicate(base, r.seq, r.idem, channel), duplicate: true };
      case "GROUP_NOT_FOUND":
        throw new NotFoundError("group", group!);
      case "GROUP_DISSOLVED":
        throw groupDissolvedError(group!, r.dissolvedAt);
      case "CMD_TOO_MANY_RECIPIENTS":
        throw new InvalidArgumentError("to", `group ${group!} has ${r.count} active members; a CMD message to the group's members may have at most ${this.maxRecipients} (name the recipients in batches)`);
    }
  }

  /**
   * The source group's active members now (NoPersist: nothing is allocated, so nothing to freeze
   * atomically). The cap is checked against the group's member_count first (one HGET), so a big
   * group is refused before its table is read; the table is then read in HSCAN steps of at most
   * REDIS_CALL_MEMBER_BUDGET (issue 22), a member seen twice (a rehash meanwhile) counted once.
   */
  private async activeMembers(tenant: Uuid, group: Uuid, k: CmdChannelKeys): Promise<Uuid[]> {
    const client = this.store.clientFor(k.tag);
    const [count, dissolvedAt] = await client.hmget(k.grpmeta!, "member_count", "dissolved_at");
    if (count === null) throw new NotFoundError("group", group);
    if (dissolvedAt != null) throw groupDissolvedError(group, Number(dissolvedAt));
    const tooMany = (n: number) => new InvalidArgumentError("to", `group ${group} of tenant ${tenant} has ${n} active members; a CMD message to the group's members may have at most ${this.maxRecipients}`);
    if (Number(count) > this.maxRecipients) throw tooMany(Number(count));
    const active = new Set<string>();
    let cursor = "0";
    do {
      const [next, flat] = await client.hscan(k.grpmembers!, cursor, "COUNT", REDIS_CALL_MEMBER_BUDGET);
      for (let i = 0; i + 1 < flat.length; i += 2) if (parseMemberValue(flat[i]!, flat[i + 1]!).state === "ACTIVE") active.add(flat[i]!);
      cursor = next;
    } while (cursor !== "0");
    // members who joined between the count and the scan
    if (active.size > this.maxRecipients) throw tooMany(active.size);
    return [...active].map(hexToUuid).sort();
  }

  /**
   * The channel's durable messages with seq > afterSeq, ascending, at most `limit`; with `forUser`
   * only those whose frozen recipients include the user, read forward page by page (of at least
   * CMD_LOAD_PAGE entries) until `limit` of them or the end of the channel.
   */
  async load(tenant: Uuid, channel: CommandChannelKey, afterSeq: number, limit: number, forUser?: Uuid): Promise<CmdMessage[]> {
    if (limit <= 0) return [];
    const k = this.channelKeys(tenant, channel);
    const client = this.store.clientFor(k.tag);
    if (forUser === undefined) {
      const entries = await client.zrangebyscore(k.hist, `(${afterSeq}`, "+inf", "LIMIT", 0, limit);
      return entries.map((e) => decodeCmdEntry(tenant, channel, e));
    }
    const hex = uuidToHex(forUser);
    const page = Math.max(limit, CMD_LOAD_PAGE);
    const out: CmdMessage[] = [];
    for (let after = afterSeq; out.length < limit;) {
      const entries = await client.zrangebyscore(k.hist, `(${after}`, "+inf", "LIMIT", 0, page);
      for (const e of entries) {
        if (entryNames(e, hex)) out.push(decodeCmdEntry(tenant, channel, e));
        if (out.length === limit) break;
      }
      if (entries.length < page) break;
      after = Number(entries[entries.length - 1]!.slice(0, entries[entries.length - 1]!.indexOf("|")));
    }
    return out;
  }

  /** The channel's last allocated seq (0 before the first durable message). */
  async lastSeq(tenant: Uuid, channel: CommandChannelKey): Promise<number> {
    const k = this.channelKeys(tenant, channel);
    return Number((await this.store.clientFor(k.tag).get(k.seq)) ?? 0);
  }
}
