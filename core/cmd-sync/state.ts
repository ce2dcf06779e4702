/**
 * The durable CMD conversation state on Redis (spec 001 StateStore), per user slot on the slot's
 * `{uNNN}` tag (keys.ts). Writes are Lua: fenced by the slot's lease and max merges, a batch all
 * or nothing, so a batch holds rows of one slot (the pending flush batches per slot; an ack
 * writes one user's rows).
 */
import { InvalidArgumentError, type KeySpace, type Uuid } from "../base/index.js";
import { slotOfUser, type Fence } from "../cluster/index.js";
import type { RedisStore } from "../store/index.js";
import { type CommandChannelKey, isValidCommandChannelId } from "../cmd-log/index.js";
import { CmdFencedError } from "./errors.js";
import { cmdStateField, cmdStateKeys, cmdUserRef, type CmdStateKeys } from "./keys.js";
import { advanceCmdStateReadsScript, indexLegacyCmdStatesScript, upsertCmdStatesScript } from "./scripts.js";
import type { CmdConversationState, CmdReadPatch, CmdStateStore } from "./types.js";

/**
 * `read|deletedTo|activeAt|updatedAt|lastMsgSeq`, versioned by its length: a row written before the
 * last seq was kept has four fields, its last seq unknown (null; lua/includes/cmdState cmdParseState).
 */
function parseValue(v: string): { readSeq: number; deletedToSeq: number; activeAt: number; updatedAt: number; lastMsgSeq: number | null } {
  const [r, d, a, u, l] = v.split("|").map(Number);
  return { readSeq: r!, deletedToSeq: d!, activeAt: a!, updatedAt: u!, lastMsgSeq: l ?? null };
}

/** Rows read per call by getMany and per page by listUnread's callers: every Redis call and reply stays bounded. */
export const CMD_STATE_READ_CHUNK = 500;

/**
 * A row is unread while the last seq that concerned its user is beyond max(read, deleted-to)
 * (lua/includes/cmdState cmdIsUnread); a row of the old code (last seq unknown) counts as unread
 * until a sync settles it.
 */
export function isUnreadState(s: Pick<CmdConversationState, "readSeq" | "deletedToSeq" | "lastMsgSeq">): boolean {
  return s.lastMsgSeq === null || s.lastMsgSeq > Math.max(s.readSeq, s.deletedToSeq);
}

const nonNegative = (n: number) => Number.isSafeInteger(n) && n >= 0;

/** Shared by both stores: what every write checks before anything is written. */
export function checkChannel(c: CommandChannelKey): void {
  if (!Number.isInteger(c.channelType) || c.channelType < 1 || c.channelType > 255) throw new InvalidArgumentError("channelType", `channel type must be 1…255, got ${c.channelType}`);
  if (!isValidCommandChannelId(c.channelId)) throw new InvalidArgumentError("channelId", `not a command channel id: ${JSON.stringify(String(c.channelId).slice(0, 64))}`);
}

export function checkRead(p: CmdReadPatch): void {
  checkChannel(p.channel);
  if (!nonNegative(p.readSeq)) throw new InvalidArgumentError("readSeq", `read seq must be ≥ 0, got ${p.readSeq}`);
  if (p.lastMsgSeq !== undefined && !nonNegative(p.lastMsgSeq)) throw new InvalidArgumentError("lastMsgSeq", `last seq must be ≥ 0, got ${p.lastMsgSeq}`);
}

export function checkState(s: CmdConversationState): void {
  checkChannel(s.channel);
  for (const f of ["readSeq", "deletedToSeq", "activeAt", "updatedAt", "lastMsgSeq"] as const) {
    const v = s[f];
    // a write always knows its last seq: null is only what a row of the old code reads
    if (v === null || !nonNegative(v)) throw new InvalidArgumentError(f, `${f} must be ≥ 0, got ${v}`);
  }
}

/** The one slot of a batch's users; InvalidArgumentError when they span slots. */
export function oneSlot(rows: readonly { tenant: Uuid; user: Uuid }[]): number {
  let slot: number | null = null;
  for (const r of rows) {
    const s = slotOfUser(r.tenant, r.user);
    if (slot !== null && s !== slot) throw new InvalidArgumentError("states", `a CMD state batch holds the rows of one slot; it has slots ${slot} and ${s}`);
    slot = s;
  }
  return slot!;
}

export class RedisCmdStateStore implements CmdStateStore {
  readonly kind = "redis" as const;
  constructor(private readonly store: RedisStore, private readonly keys: KeySpace) {}

  private slotKeys(slot: number): CmdStateKeys {
    return cmdStateKeys(this.keys, slot);
  }

  listActive(tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]> {
    return this.listIndex("index", tenant, user, limit);
  }

  listUnread(tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]> {
    return this.listIndex("unread", tenant, user, limit);
  }

  /** One of the user's indexes in order, at most `limit` rows, read in chunks of CMD_STATE_READ_CHUNK. */
  private async listIndex(which: "index" | "unread", tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]> {
    if (!Number.isSafeInteger(limit) || limit <= 0) return [];
    const k = this.slotKeys(slotOfUser(tenant, user));
    const client = this.store.clientForKey(k[which]);
    const ref = cmdUserRef(tenant, user);
    const out: CmdConversationState[] = [];
    let from = `[${ref}|`;
    while (out.length < limit) {
      const want = Math.min(CMD_STATE_READ_CHUNK, limit - out.length);
      const members = await client.zrangebylex(k[which], from, `[${ref}|\xff`, "LIMIT", 0, want);
      if (members.length === 0) break;
      const channels = members.map((m) => {
        const parts = m.split("|");
        return { channelType: Number(parts[2]), channelId: parts.slice(3).join("|") };
      });
      out.push(...await this.getMany(tenant, user, channels));
      if (members.length < want) break;
      from = `(${members[members.length - 1]!}`;
    }
    return out;
  }

  /**
   * Rows of the old code are in cmdactive but not in cmdunread: at the user's first sync after the
   * upgrade they are indexed in chunks of CMD_STATE_READ_CHUNK rows a script call (fenced), walking
   * the user's own part of cmdactive — never the slot's whole hash, which holds every user of the
   * slot. A user marked in cmdindexed costs one HEXISTS. `onChunk` (tests) sees each call's counts.
   */
  async indexLegacyRows(tenant: Uuid, user: Uuid, fence: Fence, onChunk?: (c: { looked: number; indexed: number }) => void): Promise<void> {
    const slot = slotOfUser(tenant, user);
    const k = this.slotKeys(slot);
    const client = this.store.clientForKey(k.state);
    const userRef = cmdUserRef(tenant, user);
    if (await client.hexists(k.indexed, userRef) === 1) return;
    let cursor = "";
    do {
      const reply = await indexLegacyCmdStatesScript.run(client, k, { owner: fence.owner, token: fence.token, userRef, cursor, count: CMD_STATE_READ_CHUNK });
      if (reply.fenced) throw new CmdFencedError(slot);
      onChunk?.({ looked: reply.looked, indexed: reply.indexed });
      cursor = reply.next;
    } while (cursor !== "");
  }

  async getMany(tenant: Uuid, user: Uuid, channels: readonly CommandChannelKey[]): Promise<CmdConversationState[]> {
    const k = this.slotKeys(slotOfUser(tenant, user));
    const client = this.store.clientForKey(k.state);
    const out: CmdConversationState[] = [];
    for (let i = 0; i < channels.length; i += CMD_STATE_READ_CHUNK) {
      const chunk = channels.slice(i, i + CMD_STATE_READ_CHUNK);
      const values = await client.hmget(k.state, ...chunk.map((c) => cmdStateField(tenant, user, c)));
      chunk.forEach((c, j) => {
        const v = values[j];
        if (v != null) out.push({ tenant, user, channel: { channelId: c.channelId, channelType: c.channelType }, ...parseValue(v) });
      });
    }
    return out;
  }

  async get(tenant: Uuid, user: Uuid, channel: CommandChannelKey): Promise<CmdConversationState | null> {
    const k = this.slotKeys(slotOfUser(tenant, user));
    const v = await this.store.clientForKey(k.state).hget(k.state, cmdStateField(tenant, user, channel));
    return v == null ? null : { tenant, user, channel: { channelId: channel.channelId, channelType: channel.channelType }, ...parseValue(v) };
  }

  async advanceReadSeqs(patches: readonly CmdReadPatch[], fence: Fence, updatedAt: number = Date.now()): Promise<void> {
    if (patches.length === 0) return;
    for (const p of patches) checkRead(p);
    const slot = oneSlot(patches);
    const k = this.slotKeys(slot);
    const reply = await advanceCmdStateReadsScript.run(this.store.clientForKey(k.state), k, {
      owner: fence.owner,
      token: fence.token,
      rows: patches.map((p) => ({
        userRef: cmdUserRef(p.tenant, p.user), channelType: p.channel.channelType, channelId: p.channel.channelId, readSeq: p.readSeq, updatedAt, lastMsgSeq: p.lastMsgSeq,
      })),
    });
    if (reply.fenced) throw new CmdFencedError(slot);
  }

  async upsertStates(states: readonly CmdConversationState[], fence: Fence): Promise<void> {
    if (states.length === 0) return;
    for (const s of states) checkState(s);
    const slot = oneSlot(states);
    const k = this.slotKeys(slot);
    const reply = await upsertCmdStatesScript.run(this.store.clientForKey(k.state), k, {
      owner: fence.owner,
      token: fence.token,
      rows: states.map((s) => ({
        userRef: cmdUserRef(s.tenant, s.user), channelType: s.channel.channelType, channelId: s.channel.channelId,
        readSeq: s.readSeq, deletedToSeq: s.deletedToSeq, activeAt: s.activeAt, updatedAt: s.updatedAt, lastMsgSeq: s.lastMsgSeq!,
      })),
    });
    if (reply.fenced) throw new CmdFencedError(slot);
  }
}
