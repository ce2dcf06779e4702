import { createHash } from "node:crypto";
/**
 * Shared set-up of the per-script Lua tests: one real redis-server per test file, a key prefix
 * and random tenant/group per test, and every script called only through `callScript` with its
 * keys in the order its header lists them.
 */
import { conversationKeyList, dumpKeys } from "../harness/dump.js";
import { after, before } from "node:test";
import { uuidToHex } from "../../core/index.js";
import { conversationKeys, KeySpace, type ConversationKeys } from "../../core/index.js";
import { callScript, type RedisClient } from "../../core/index.js";
import { RedisStore } from "../../core/index.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { fanoutKeys, unitLeaseKey, userKeys, type FanoutKeys } from "../../core/index.js";
import { newUuid } from "../../core/index.js";
import type { Uuid } from "../../core/index.js";

export interface LuaFixture {
  server: RedisServer;
  store: RedisStore;
}

/** Starts one redis-server for the file (before) and stops it (after). Filled in by `before`. */
export function useRedis(): LuaFixture {
  const fx = {} as LuaFixture;
  before(async () => {
    fx.server = await startRedis();
    fx.store = new RedisStore({ kind: "instances", addrs: [fx.server.addr] });
  });
  after(async () => {
    await fx.store?.close();
    await fx.server?.stop();
  });
  return fx;
}

/** The scripts whose keys are all one conversation's (the session scripts have their own tests). */
export type ConversationScriptName =
  | "createGroup" | "commitMessages" | "applyMembership" | "readPlan" | "loadForDispatch" | "markCommitted" | "expandAudience" | "saveFanoutProgress"
  | "readHistory" | "conversationSummary" | "markRead" | "transferOwner" | "dissolveGroup";

/** The key space a conversation's keys were made in (its prefix leads every key). */
const spaceOf = (k: ConversationKeys) => new KeySpace(k.outbox.split(":")[0]!);

/** The bucket's fanout job keys beside the conversation's outbox (core/dispatch/keys.ts). */
export function fanoutOf(k: ConversationKeys): FanoutKeys {
  return fanoutKeys(spaceOf(k), k.bucket);
}

/** Each conversation script's KEYS, in the order of its header. */
export const SCRIPT_KEYS: Record<ConversationScriptName, (k: ConversationKeys) => string[]> = {
  createGroup: (k) => [k.grpmeta, k.grpmembers],
  commitMessages: (k) => [k.idem, k.grpmeta, k.grpmembers, k.cseq, k.hist, k.outbox, k.vpending, k.unreadidx],
  applyMembership: (k) => [k.idem, k.grpmeta, k.grpmembers, k.grpdeltas, k.vpending, k.cseq, k.hist, k.commits, k.outbox],
  readPlan: (k) => [k.grpmeta, k.grpmembers],
  loadForDispatch: (k) => [k.commits, k.hist, k.grpmembers, k.grpdeltas, k.grpmeta, k.vpending, fanoutOf(k).fanoutPending],
  // KEYS[5], the bucket's relay lease, sits on the same tag; these tests run without a cluster (no lease)
  markCommitted: (k) => [k.commits, k.outbox, k.vpending, k.grpdeltas, unitLeaseKey(spaceOf(k), "relay", k.bucket), fanoutOf(k).fanoutJobs, fanoutOf(k).fanoutState, fanoutOf(k).fanoutPending],
  expandAudience: (k) => [k.grpmembers, k.hist, fanoutOf(k).fanoutState],
  saveFanoutProgress: (k) => [unitLeaseKey(spaceOf(k), "relay", k.bucket), fanoutOf(k).fanoutJobs, fanoutOf(k).fanoutState, fanoutOf(k).fanoutPending],
  readHistory: (k) => [k.grpmembers, k.hist, k.grpmeta],
  conversationSummary: (k) => [k.grpmembers, k.hist, k.readseq, k.grpmeta, k.unreadidx],
  markRead: (k) => [k.grpmembers, k.hist, k.readseq, k.grpmeta],
  transferOwner: (k) => [k.grpmeta, k.grpmembers, k.grpdeltas, k.vpending],
  dissolveGroup: (k) => [k.grpmeta, k.cseq, k.hist, k.vpending, k.grpdeltas, k.outbox],
};

/** A random id in the scripts' 32-hex form. */
export function hexId(): string {
  return uuidToHex(newUuid());
}

/** `n` random 32-hex ids, sorted (the order scripts expect targets in). */
export function hexIds(n: number): string[] {
  return Array.from({ length: n }, hexId).sort();
}

/** Splits a concatenation of 32-hex ids, sorted (audiences are sets; a hash's order is not ours). */
export function splitSorted(concat: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < concat.length; i += 32) out.push(concat.slice(i, i + 32));
  return out.sort();
}

export interface SendOptions {
  clientMessageId?: string;
  messageId?: string;
  countsUnread?: boolean;
}

/** One message of a commitMessages batch. */
export interface BatchMessage extends SendOptions {
  sender: string;
}

/** A message as sent: its triple of the reply, its history entry without seq, and its ids. */
export interface SentMessage {
  reply: unknown[];
  rest: string;
  messageId: string;
  clientMessageId: string;
}

/** One conversation under a key prefix of its own. */
export class Conv {
  readonly tenant = newUuid();
  readonly group = newUuid();
  readonly keys: ConversationKeys;
  readonly client: RedisClient;
  /** The key space of this conversation's keys (a prefix of its own). */
  readonly space = new KeySpace(`l${newUuid().slice(0, 8)}`);

  constructor(fx: LuaFixture) {
    this.keys = conversationKeys(this.space, this.tenant, this.group);
    this.client = fx.store.clientFor(this.keys.tag);
  }

  run(name: ConversationScriptName, args: (string | number)[]): Promise<unknown[]> {
    return callScript(this.client, name, SCRIPT_KEYS[name](this.keys), args);
  }

  createGroup(owner: string, members: string[], createdAt = 1_700_000_000_000): Promise<unknown[]> {
    return this.run("createGroup", [owner, createdAt, ...members]);
  }

  /**
   * commitMessages of a batch of one NORMAL message (countsUnread 1) by `sender` at member
   * version `version`. `reply` is the message's triple {status, seq, messageId}; `raw` the
   * script's whole reply {0, status, seq, messageId}.
   */
  async send(sender: string, version: number, opts: SendOptions = {}) {
    const { raw, messages } = await this.sendBatch(version, [{ sender, ...opts }]);
    return { ...messages[0]!, raw };
  }

  /**
   * commitMessages of a batch of NORMAL messages, all frozen at member version `version`, in
   * ARGV order. Each message gets its triple of the reply as `reply` (with its rest, messageId
   * and clientMessageId); `raw` is the script's whole reply.
   */
  async sendBatch(version: number, batch: BatchMessage[]): Promise<{ raw: unknown[]; messages: SentMessage[] }> {
    const messages: SentMessage[] = batch.map((m) => {
      const clientMessageId = m.clientMessageId ?? hexId();
      const messageId = m.messageId ?? hexId();
      return { reply: [], rest: normalRest(messageId, m.sender, m.countsUnread ?? true), messageId, clientMessageId };
    });
    const args: (string | number)[] = [version, this.keys.outboxRef];
    batch.forEach((m, i) => args.push(messages[i]!.clientMessageId, m.sender, messages[i]!.rest));
    const raw = await this.run("commitMessages", args);
    messages.forEach((m, i) => (m.reply = raw.slice(1 + 3 * i, 4 + 3 * i)));
    return { raw, messages };
  }

  /** applyMembership (op 1 join, 2 leave, 3 remove) planned at `version`. */
  async membership(op: 1 | 2 | 3, version: number, targets: string[], opts: { idem?: string; sender?: string; broadcastMax?: number; maxMembers?: number; messageId?: string } = {}) {
    const idem = opts.idem ?? hexId();
    const messageId = opts.messageId ?? hexId();
    const rest = controlRest(messageId, opts.sender ?? targets[0]!, op, targets);
    const reply = await this.run("applyMembership", [idem, version, op, rest, this.keys.outboxRef, opts.broadcastMax ?? 500, opts.maxMembers ?? 1_000_000, ...targets]);
    return { reply, rest, messageId, idem };
  }

  hgetall(key: string): Promise<Record<string, string>> {
    return this.client.hgetall(key);
  }

  /** A sorted set as [member, score] pairs in score order. */
  async zrange(key: string): Promise<[string, number][]> {
    const flat = await this.client.zrange(key, "0", "-1", "WITHSCORES");
    const out: [string, number][] = [];
    for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])]);
    return out;
  }

  lrange(key: string): Promise<string[]> {
    return this.client.lrange(key, 0, -1);
  }

  get(key: string): Promise<string | null> {
    return this.client.get(key);
  }

  exists(key: string): Promise<number> {
    return this.client.exists(key);
  }

  /** Every key of the conversation with its type and full value, for "changed nothing" checks. */
  snapshot(): Promise<string> {
    return dumpKeys(this.client, conversationKeyList(this.keys));
  }
}

const CREATED_AT = 1_700_000_000_123;

/** History entry of a NORMAL message without its seq: "messageId|sender|N|countsUnread|createdAt|contentType|body". */
export function normalRest(messageId: string, sender: string, countsUnread = true): string {
  return `${messageId}|${sender}|N|${countsUnread ? 1 : 0}|${CREATED_AT}|text/plain|${Buffer.from(`hi from ${sender.slice(0, 6)}`).toString("base64")}`;
}

/**
 * A message's idempotency entry "seq|V|contentDigest" as commitMessages writes it: the digest is
 * the sha1 hex of the content normalRest gives `sender` — the entry without messageId and
 * createdAt: "sender|N|countsUnread|contentType|body".
 */
export function idemEntry(seq: number, version: number, sender: string, countsUnread = true): string {
  const content = `${sender}|N|${countsUnread ? 1 : 0}|text/plain|${Buffer.from(`hi from ${sender.slice(0, 6)}`).toString("base64")}`;
  return `${seq}|${version}|${createHash("sha1").update(content).digest("hex")}`;
}

/** History entry of a membership CONTROL message without its seq (payload: op | actor | n | users). */
export function controlRest(messageId: string, sender: string, op: number, targets: string[]): string {
  const payload = Buffer.concat([
    Buffer.from([op]),
    Buffer.alloc(16),
    Buffer.from([(targets.length >> 8) & 0xff, targets.length & 0xff]),
    ...targets.map((t) => Buffer.from(t, "hex")),
  ]);
  return `${messageId}|${sender}|C|0|${CREATED_AT}|qim.membership.v1|${payload.toString("base64")}`;
}

/**
 * A conversation's history as the code before the unread index (issue 22) left it: records
 * 1 `owner`, 2 `owner` mentioning `mentioned` (field 9), 3 a membership CONTROL event naming 1,000
 * users (a ~21 KB entry, as a bulk add writes it) — hist entries, idempotency entries and the seq
 * counter written raw, and no unread index nor grpmeta `unread_index_from`. The group has
 * `members` at member version 1.
 */
export async function legacyHistory(c: Conv, owner: string, members: string[], mentioned: string): Promise<void> {
  await c.createGroup(owner, members);
  const rests = [
    normalRest(hexId(), owner),
    `${normalRest(hexId(), owner)}|${mentioned}`,
    controlRest(hexId(), owner, 1, hexIds(1000)),
  ];
  for (const [i, rest] of rests.entries()) {
    await c.client.zadd(c.keys.hist, i + 1, `${i + 1}|${rest}`);
    await c.client.hset(c.keys.idem, hexId(), String(i + 1));
  }
  await c.client.set(c.keys.cseq, rests.length);
}

/** A fresh key prefix, so every test writes keys of its own. */
export function keyPrefix(): string {
  return `l${newUuid().slice(0, 8)}`;
}

/** `n` random users of `tenant` whose session keys share one `{uNNN}` bucket (one pending queue, one epoch-mark hash). */
export function usersInOneBucket(tenant: Uuid, n: number): Uuid[] {
  const first = newUuid();
  const bucket = userKeys(new KeySpace(), tenant, first).bucket;
  const out = [first];
  while (out.length < n) {
    const u = newUuid();
    if (userKeys(new KeySpace(), tenant, u).bucket === bucket) out.push(u);
  }
  return out;
}
